/**
 * The console's operations pages in a real chromium against a real server: the scheduled tasks
 * (change a schedule and settings, run a task now and read its history), and a readonly user who
 * sees them without any control that changes something.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit, textMatches, unlabelled } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import zhCatalogue from "../../console/i18n/zh-CN.js";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const zh: Record<string, string | undefined> = zhCatalogue;

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };

Deno.test({
  name: "the console's operations pages work in a real browser (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using kit = await startConsoleKit({ storage: { redis: { url: "redis://127.0.0.1:9" } } });
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const admin = await kit.signIn(ADMIN);

  await t.step("scheduled tasks: change the backup's schedule and settings", async () => {
    await admin.open("ops-tasks");
    await textMatches(admin, "main table", /Store backup/);
    await admin.page.locator("#edit-button-store-backup").click();
    await admin.page.locator("#value-store-backup").fill("15 1 * * *");
    await admin.page.locator("#jitter-store-backup").fill("60");
    await admin.page.locator("#setting-store-backup-keep").fill("3");
    assertEquals(await unlabelled(admin.page), []);
    await admin.screenshot("ops-tasks-edit");
    await admin.page.locator("#edit-store-backup button[type=submit]").click();
    await admin.page.locator("#edit-store-backup").waitFor({ state: "detached" });
    const r = await callJson(server, "GET", "/api/ops/tasks/store-backup", { session: api });
    const item = r.body.item as { schedule: unknown; jitter_ms: number; settings: unknown };
    assertEquals(item.schedule, { cron: "15 1 * * *" });
    assertEquals(item.jitter_ms, 60_000);
    assertEquals(item.settings, { folder: "", keep: 3 });
    await textMatches(admin, "main table", /cron "15 1 \* \* \*" \(UTC\)/);
  });

  await t.step("a bad cron expression shows the API's error with its field", async () => {
    await admin.page.locator("#edit-button-store-optimize").click();
    await admin.page.locator("#value-store-optimize").fill("every sunday");
    await admin.page.locator("#edit-store-optimize button[type=submit]").click();
    await textMatches(admin, "#edit-store-optimize [role=alert]", /schedule\.cron/);
    await admin.page.locator("#edit-store-optimize button.secondary").click();
  });

  await t.step("run a task now and read its history", async () => {
    await admin.page.locator("#run-store-integrity").click();
    // The task's own row: it shows "running" and then, without a reload, the run's result.
    // (Matching the whole table took another row's "ok" for it; "ok" is followed by its time.)
    const row = "main table tr:has(#run-store-integrity)";
    await textMatches(admin, row, /Store integrity check.*ok \d/s);
    await admin.open("ops-tasks/store-integrity");
    await textMatches(admin, "main table", /manual.*admin.*ok \d/s);
    await textMatches(admin, "main table", /"result":"ok"/);
    await admin.screenshot("ops-tasks-history");
    assertEquals(admin.problems, []);
  });

  await t.step("storage: status, tables, usage and a Redis test with its exact error", async () => {
    await admin.open("storage");
    await textMatches(admin, "#store", /waf\.db/);
    await textMatches(admin, "main table", /audit_log/);
    await textMatches(admin, "#pg-sink", /no PostgreSQL sink/);
    await admin.page.locator("#redis-test").click();
    await textMatches(admin, "#redis-result", /failed.*127\.0\.0\.1:9.*refused/is);
    await admin.screenshot("storage");
    assertEquals(admin.problems, []);
  });

  await t.step(
    "storage: a sink whose test fails changes nothing; the clean-up previews",
    async () => {
      await textMatches(admin, "#sink-source", /Not configured/);
      await admin.page.locator("#sink-enabled").check();
      await admin.page.locator("#sink-dsn").fill("postgres://waf:Sekrit-Pw@127.0.0.1:9/waf");
      assertEquals(await unlabelled(admin.page), []);
      await admin.page.locator("#sink-save").click();
      await textMatches(admin, "#sink-form [role=alert]", /SINK_TEST_FAILED/);
      ok(!(await admin.page.locator("main").innerText()).includes("Sekrit-Pw"));
      // Stored disabled (no test), the DSN comes back masked.
      await admin.page.locator("#sink-enabled").uncheck();
      await admin.page.locator("#sink-save").click();
      await textMatches(
        admin,
        "#sink-source",
        /Configured here.*postgres:\/\/waf:\*\*\*@127\.0\.0\.1:9/s,
      );
      const r = await callJson(server, "GET", "/api/storage", { session: api });
      assertEquals((r.body.sink as { enabled: boolean }).enabled, false);
      await admin.page.locator("#cleanup-dry").click();
      await textMatches(admin, "#cleanup-result", /Would remove 0 records and 0 files/);
      await admin.screenshot("storage-cleanup");
      assertEquals(admin.problems, []);
    },
  );

  await t.step("a readonly user sees the tasks without controls", async () => {
    await createUser(server, VIEWER.username, VIEWER.password, "readonly");
    const viewer = await kit.signIn(VIEWER);
    await viewer.open("ops-tasks");
    await textMatches(viewer, "main table", /Store backup/);
    assertEquals(await viewer.page.locator("#run-store-backup").count(), 0);
    assertEquals(await viewer.page.locator("#edit-button-store-backup").count(), 0);
    await viewer.open("storage");
    await textMatches(viewer, "#redis", /Redis/);
    assertEquals(await viewer.page.locator("#redis-test").count(), 0);
    assertEquals(await viewer.page.locator("#sink-form, #cleanup").count(), 0);
    await textMatches(viewer, "#sink-source", /postgres:\/\/waf:\*\*\*@/);
    await viewer.open("ops-tasks");
    ok(await viewer.page.locator(".readonly-note").isVisible());
    assertEquals(viewer.problems, []);
    await viewer.close();
  });

  await t.step(
    "in Chinese, what the API says in English (tasks, templates, OTA) is Chinese",
    async () => {
      const zhAdmin = await kit.signIn(ADMIN, "zh-CN");
      await zhAdmin.open("ops-tasks");
      await textMatches(zhAdmin, "main table", /store-backup/);
      const r = await callJson(server, "GET", "/api/ops/tasks", { session: api });
      const ids = (r.body.items as { id: string }[]).map((x) => x.id);
      const titles = await zhAdmin.page.locator("main table tbody tr td:first-child a")
        .allTextContents();
      assertEquals(titles, ids.map((id) => zh[`tasks.title_${id}`] ?? `(no Chinese name: ${id})`));
      const schedule = await zhAdmin.page.locator("#task-schedule-access-log-retention")
        .textContent();
      assertEquals(schedule, "每 10m");
      // A cron schedule (the backup's, set in the first step) too, not the API's English.
      const cron = await zhAdmin.page.locator("#task-schedule-store-backup").textContent();
      assertEquals(cron, "Cron 表达式“15 1 * * *”（UTC）");
      await zhAdmin.page.locator("main table tbody a", { hasText: zh["tasks.title_store-backup"] })
        .click();
      await textMatches(zhAdmin, "#page-title", new RegExp(zh["tasks.title_store-backup"]!));
      // The block-page templates the API names in English, likewise.
      await zhAdmin.open("block-pages");
      await zhAdmin.page.locator("#template option").first().waitFor({ state: "attached" });
      assertEquals(await zhAdmin.page.locator("#template option").allTextContents(), [
        zh["block.template_name_minimal"],
        zh["block.template_name_friendly"],
      ]);
      await textMatches(zhAdmin, "main", new RegExp(zh["block.template_description_minimal"]!));
      // The Updates page's notice (the API's English message) likewise.
      await zhAdmin.open("updates");
      await textMatches(zhAdmin, "#ota-message", new RegExp(zh["updates.unavailable"]!));
      assertEquals(zhAdmin.problems, []);
      await zhAdmin.close();
    },
  );

  await admin.close();
});
