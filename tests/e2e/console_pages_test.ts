/**
 * The console's remaining main paths in a real headless chromium (issue #21's test list, next to
 * tests/e2e/console_browser_test.ts): an ALAP exception made from an attack record, users
 * created, promoted and disabled, the regex tester, the audit log's filter, the Updates and
 * backup (export, restore) buttons showing their 501 answers, the version facts, and a readonly user who presses every button of
 * every page without the browser sending one state-changing request or being refused once.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { TOKENS_ON } from "../_helpers/api_access.ts";
import { ADMIN, settle, shopWithAttack, startConsoleKit } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { PAGES } from "../../console/pages.js";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };
/**
 * The POSTs a readonly user's console may send: testers and lookups whose answer is computed, not
 * stored, so the specification guards them with a read permission (4.3: `POST
 * /api/apisec/validate` needs the `read:apisec` family), and marking one's own notification read
 * (per reader, like "My account"). The step below checks that the server guards each with a read
 * permission, and that nothing else but a GET leaves the browser.
 */
const READ_ONLY_POSTS = [
  "/api/rules/custom/test",
  "/api/apisec/validate",
  "/api/threat-intel/lookup",
  "/api/block-pages/preview",
  "/api/notifications/:id/read",
];
const readOnlyPost = (path: string) =>
  READ_ONLY_POSTS.find((p) => new URLPattern({ pathname: p }).test({ pathname: path }));
Deno.test({
  name: "the console's other pages work in a real browser (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(TOKENS_ON);
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const attack = await shopWithAttack(server, api, up.url);
  const admin = await kit.signIn(ADMIN);

  await t.step(
    "one click makes an ALAP exception from an attack record; it is rejected",
    async () => {
      await admin.open(`logs/${attack.traceId}`);
      await admin.page.locator("#record").waitFor();
      await admin.page.locator("#alap-exception").click();
      await admin.page.locator(".done").waitFor();
      // The exception is an ALAP decision proposed from the record's finding.
      const decisions = await callJson(server, "GET", "/api/alap/decisions", { session: api });
      assertEquals(decisions.status, 200);
      ok(JSON.stringify(decisions.body).includes(attack.traceId), JSON.stringify(decisions.body));
      // The proposal waits on the ALAP page; rejecting it leaves nothing proposed.
      await admin.open("alap");
      await admin.page.locator("button.reject").click();
      await admin.page.locator("button.reject").waitFor({ state: "detached" });
      const after = await callJson(server, "GET", "/api/alap/decisions", { session: api });
      assertEquals((after.body.items as { status: string }[]).map((d) => d.status), ["rejected"]);
    },
  );

  await t.step("users are created, promoted and disabled", async () => {
    await admin.open("users");
    await admin.page.locator("button.new").click();
    await admin.page.locator("#edit-username").fill("carol");
    await admin.page.locator("#edit-password").fill("Maple-Drift-58");
    // A new account starts with the least privilege: admin is chosen on purpose, never by default.
    assertEquals(await admin.page.locator("#edit-role").inputValue(), "readonly");
    await admin.page.locator(".panel form button[type=submit]").click();
    const row = admin.page.locator("tr", { hasText: "carol" });
    await row.waitFor();
    const carol = () => server.identity.users.list().find((u) => u.username === "carol");
    assertEquals(carol()?.role, "readonly");
    assertEquals((await login(server, "carol", "Maple-Drift-58")).cookie !== "", true);

    await row.locator("button", { hasText: "Edit" }).click();
    await admin.page.locator("#edit-role").selectOption("admin");
    await admin.page.locator("#edit-disabled").check();
    await admin.page.locator(".panel form button[type=submit]").click();
    await admin.page.locator(".done").waitFor();
    const after = carol();
    assertEquals([after?.role, after?.disabled], ["admin", true]);
    const refused = await callJson(server, "POST", "/api/auth/login", {
      body: { username: "carol", password: "Maple-Drift-58" },
    });
    ok(refused.status >= 400, `a disabled user signed in: ${refused.status}`);
  });

  await t.step("the regex tester shows matches and a pattern's error", async () => {
    await admin.open("custom-rules");
    await admin.page.locator("#tester-pattern").fill("^/admin");
    await admin.page.locator("#tester-samples").fill("/admin/users\n/home");
    await admin.page.locator("#regex-tester button[type=submit]").click();
    const rows = admin.page.locator("#regex-tester tbody tr");
    await rows.first().waitFor();
    const cells = async (n: number) =>
      (await rows.nth(n).locator("td").allTextContents()).map((c) => c.trim());
    assertEquals([await cells(0), await cells(1)], [
      ["/admin/users", "matches"],
      ["/home", "no match"],
    ]);
    await admin.page.locator("#tester-pattern").fill("(unclosed");
    await admin.page.locator("#regex-tester button[type=submit]").click();
    await admin.page.locator("#tester-error").waitFor();
  });

  await t.step("the audit log filters by action, actor and result", async () => {
    await admin.open("audit");
    await admin.page.locator("#audit-action").fill("user.create");
    await admin.page.locator("button", { hasText: "Apply" }).click();
    let actions: string[] = [];
    for (let i = 0; i < 100; i++) {
      actions = await admin.page.locator("main tbody tr").allTextContents();
      if (actions.length > 0 && actions.every((a) => a.includes("user.create"))) break;
      await admin.page.waitForTimeout(100);
    }
    ok(actions.length > 0 && actions.every((a) => a.includes("user.create")), actions.join("\n"));
    ok(actions.some((a) => a.includes("carol")), actions.join("\n"));
    // By actor and result: carol's own successful sign-in, and nothing of anyone else.
    await admin.page.locator("#audit-action").fill("");
    await admin.page.locator("#audit-actor").fill("carol");
    await admin.page.locator("#audit-result").selectOption("success");
    await admin.page.locator("button", { hasText: "Apply" }).click();
    for (let i = 0; i < 100; i++) {
      actions = await admin.page.locator("main tbody tr").allTextContents();
      if (actions.length > 0 && actions.every((a) => a.includes("carol ("))) break;
      await admin.page.waitForTimeout(100);
    }
    ok(actions.length > 0, "carol's records are listed");
    ok(actions.every((a) => a.includes("carol (") && a.includes("success")), actions.join("\n"));
    ok(actions.some((a) => a.includes("auth.login")), actions.join("\n"));
  });

  await t.step("Updates and backup show the 501 answers and what to do instead", async () => {
    await admin.open("updates");
    // The OTA settings are shown read-only, as the API reports them.
    const ota = await callJson(server, "GET", "/api/system/ota", { session: api });
    await admin.page.locator("#ota-settings dd").first().waitFor();
    const shown = await admin.page.locator("#ota-settings dd").allTextContents();
    const settings = ota.body.settings as Record<string, unknown>;
    assertEquals(shown[0], String(settings.enabled));
    assertEquals(shown.length, 7);
    assertEquals(await admin.page.locator("main input, main select, main textarea").count(), 0);
    await admin.page.locator("#check-updates").click();
    assertEquals(
      await admin.page.locator(".error-box code").first().textContent(),
      "NOT_IMPLEMENTED",
    );
    await admin.open("system");
    await admin.page.locator("#backup-export button").click();
    await admin.page.locator("#backup-export .error-box").waitFor();
    assertMatch(
      (await admin.page.locator("#backup-export .error-box code").first().textContent())!,
      /^BACKUP_EXPORT_NOT_IMPLEMENTED$/,
    );
    await admin.page.locator("#backup-export .notice").waitFor();
    assertMatch(
      (await admin.page.locator("#backup-export pre").textContent())!,
      /waf store backup/,
    );
    await admin.page.locator("#backup-restore button").click();
    await admin.page.locator("#backup-restore .error-box").waitFor();
    assertEquals(
      await admin.page.locator("#backup-restore .error-box code").first().textContent(),
      "BACKUP_RESTORE_NOT_IMPLEMENTED",
    );
    await admin.page.locator("#backup-restore .notice").waitFor();
    // The version facts come from GET /api/system/version.
    const version = await callJson(server, "GET", "/api/system/version", { session: api });
    const facts = await admin.page.locator("#version dd").allTextContents();
    assertEquals([facts[0], facts[1]], [
      String(version.body.version),
      String(version.body.schema_version),
    ]);
    ok(admin.problems.length === 0, admin.problems.join("\n"));
  });

  await t.step("a readonly user presses every button and changes nothing", async () => {
    await createUser(server, VIEWER.username, VIEWER.password, "readonly");
    await callJson(server, "POST", "/api/protection/ip-lists", {
      session: api,
      body: { cidr: "203.0.113.0/24", action: "allow", note: "office" },
    });
    const viewer = await kit.signIn(VIEWER);
    const before = JSON.stringify([
      server.dataPlane.sites.list(),
      server.identity.users.list(),
    ]);
    for (const path of READ_ONLY_POSTS) {
      const route = server.routes.find((r) => r.method === "POST" && r.path === path);
      const access = route?.access;
      ok(
        access?.kind === "permission" && access.permission.startsWith("read:"),
        `${path} is not guarded by a read permission: ${JSON.stringify(access)}`,
      );
    }
    const wrong: string[] = [];
    const tried = new Set<string>();
    viewer.page.on("request", (r) => {
      const path = new URL(r.url()).pathname;
      const allowed = r.method() === "POST" ? readOnlyPost(path) : undefined;
      if (allowed) tried.add(allowed);
      else if (r.method() !== "GET") wrong.push(`${r.method()} ${path}`);
    });
    viewer.page.on("response", (r) => {
      if (r.status() === 403) wrong.push(`403 ${new URL(r.url()).pathname}`);
    });
    let pressed = 0;
    // "My account" is the user's own (language, own 2FA): any user may change it.
    for (const page of PAGES.filter((p) => p.id !== "account")) {
      await viewer.open(page.id);
      await settle(viewer);
      for (let i = 0; i < 40; i++) {
        const buttons = viewer.page.locator("main button:visible:enabled");
        if (i >= await buttons.count()) break;
        await buttons.nth(i).click();
        pressed++;
        await viewer.page.waitForTimeout(100);
        await viewer.page.keyboard.press("Escape");
      }
    }
    await viewer.page.waitForTimeout(300);
    assertEquals(wrong, [], "requests a readonly user's console sent or was refused");
    ok(pressed >= 5, `only ${pressed} buttons were pressed`);
    // The API security tester's button is enabled with its defaults, and answered (no 403).
    ok(tried.has("/api/apisec/validate"), [...tried].join(", "));
    assertEquals(
      JSON.stringify([server.dataPlane.sites.list(), server.identity.users.list()]),
      before,
    );
    ok(viewer.problems.length === 0, viewer.problems.join("\n"));
    await viewer.close();
  });
  await admin.close();
});
