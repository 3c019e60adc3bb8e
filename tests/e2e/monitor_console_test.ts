/**
 * The observability pages in a real chromium against a real server: the dashboard on the
 * monitoring API with blocked requests arriving live over the browser's EventSource, the same
 * event over a WebSocket opened in the browser (and refused from another origin with the same
 * cookies), time synchronisation on the system page against loopback SNTP servers (one silent),
 * the Prometheus note, notification channels created, tested (a loopback receiver checks the
 * signed JSON), edited (the secret kept), read through their deliveries and deleted, and a
 * readonly user who can change none of it.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, type ConsolePage, startConsoleKit, unlabelled } from "../_helpers/console.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startSntpServer } from "../_helpers/sntp_server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { hmacSha256 } from "../../mod/core/digest.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const UNION = "/search?q=1%20union%20select%20password%20from%20users";

/** Polls `expression` in the page until it is truthy (waitForFunction needs eval: CSP refuses). */
async function until<T>(p: ConsolePage, expression: string, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = await p.page.evaluate(expression);
    if (v) return v as T;
    await p.page.waitForTimeout(100);
  }
  throw new Error(`never true: ${what}`);
}

/** In the page: a WebSocket to the realtime feed whose messages and fate land in `globalThis`. */
const openSocket = (url: string, name: string) =>
  `(() => {
  const state = globalThis[${JSON.stringify(name)}] = { messages: [], opened: false, closed: null };
  const ws = new WebSocket(${JSON.stringify(url)});
  ws.onopen = () => { state.opened = true; };
  ws.onmessage = (e) => state.messages.push(JSON.parse(e.data));
  ws.onclose = (e) => { state.closed = e.code; };
  return true;
})()`;

Deno.test({
  name:
    "the dashboard shows blocked requests live over EventSource; a browser WebSocket gets them from the console's origin only (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit();
  const { server } = kit;
  addSite(server, up.url);
  const admin = await kit.signIn(ADMIN);

  await t.step("the dashboard reads the monitoring API and receives an attack live", async () => {
    assertEquals((await hit(server, "/", { ip: "192.0.2.1" })).status, 200);
    await admin.open("dashboard");
    await admin.page.locator("#live-state", { hasText: "connected" }).waitFor();
    await admin.page.locator("#card-requests .value", { hasText: /^1$/ }).waitFor();
    const started = Date.now();
    const attack = await hit(server, UNION, { ip: "198.51.100.7" });
    assertEquals(attack.status, 403);
    // The event arrives over the EventSource (no reload of the page, before the 10 s poll).
    const row = admin.page.locator("#live tbody tr", { hasText: attack.traceId });
    await row.waitFor({ timeout: 5_000 });
    const text = (await row.textContent())!;
    assertMatch(text, /198\.51\.100\.7/);
    assertMatch(text, /sqli/);
    assertMatch(text, /GET \/search/);
    // The live event asks for fresh figures: the cards follow within the settle time.
    await admin.page.locator("#card-blocked .value", { hasText: /^1$/ }).waitFor({
      timeout: 5_000,
    });
    ok(Date.now() - started < 9_000, "before the next poll");
    await admin.page.locator("td", { hasText: "198.51.100.7" }).first().waitFor();
    // Its trace id opens the record.
    await row.locator("a.live-trace").click();
    await admin.page.locator("#record").waitFor();
    assertEquals(await admin.page.locator("#record .trace-id").textContent(), attack.traceId);
    ok(admin.problems.length === 0, admin.problems.join("\n"));
  });

  await t.step("the dashboard's ranges ask for minute or hour series", async () => {
    await admin.open("dashboard");
    await admin.page.locator("#card-requests").waitFor();
    const seen: string[] = [];
    admin.page.on("request", (r) => {
      if (r.url().includes("/api/monitor/series")) seen.push(new URL(r.url()).search);
    });
    await admin.page.locator("#dash-range").selectOption("43200");
    await admin.page.locator("#card-requests").waitFor();
    // Up to 30 s (a loaded browser), not 5: the loop ends at the first request seen.
    for (let i = 0; i < 300 && seen.length === 0; i++) await admin.page.waitForTimeout(100);
    assertEquals(seen[0], "?period=30d&step=hour");
    await admin.page.locator("#card-blocked .value", { hasText: /^1$/ }).waitFor();
    await admin.screenshot("dashboard-live");
  });

  await t.step("a WebSocket opened in the browser carries the same event", async () => {
    const ws = `${
      server.managementUrl.replace(/^http/, "ws")
    }/api/realtime/ws?kinds=access.blocked`;
    await admin.page.evaluate(openSocket(ws, "feed"));
    await until(admin, "globalThis.feed.opened", "the socket opened");
    const attack = await hit(server, UNION, { ip: "198.51.100.8" });
    const message = await until<Record<string, unknown>>(
      admin,
      `globalThis.feed.messages.find((m) => m.kind === "access.blocked" &&
        m.data.trace_id === ${JSON.stringify(attack.traceId)})`,
      "the blocked event arrived",
    );
    assertEquals((message.data as { client_ip: string }).client_ip, "198.51.100.8");
    assertEquals(message.site, "shop");
  });

  await t.step("the same cookies from another origin are refused", async () => {
    const other = await admin.context.newPage();
    await other.goto(`${up.url}/elsewhere`);
    const ws = `${server.managementUrl.replace(/^http/, "ws")}/api/realtime/ws`;
    await other.evaluate(openSocket(ws, "feed"));
    let state: { opened: boolean; closed: number | null } = { opened: false, closed: null };
    for (let i = 0; i < 50 && state.closed === null; i++) {
      state = await other.evaluate("globalThis.feed") as typeof state;
      await other.waitForTimeout(100);
    }
    assertEquals(state, { opened: false, closed: 1006, messages: [] } as typeof state);
    await other.close();
  });
});

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };

Deno.test({
  name:
    "the system page's time sync, the metrics note and the notification channels page (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using near = await startSntpServer(40, 0);
  await using silent = await startSntpServer(0, 0, false);
  const received: { path: string; headers: Headers; body: string }[] = [];
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    received.push({
      path: url.pathname + url.search,
      headers: req.headers,
      body: await req.text(),
    });
    return Response.json({ ok: true });
  });
  const hookUrl = `http://127.0.0.1:${receiver.addr.port}/hooks/waf?key=k-123`;
  try {
    await using kit = await startConsoleKit({
      time: { servers: [silent.address, near.address], query_timeout: "300ms" },
    });
    const { server } = kit;
    const admin = await kit.signIn(ADMIN);
    const api = await login(server, ADMIN.username, ADMIN.password);

    await t.step("time sync: servers with their state, reselect and measure now", async () => {
      await admin.open("system");
      await admin.page.locator("#time-sync table").waitFor();
      const rows = admin.page.locator("#time-sync tbody tr");
      assertEquals(await rows.count(), 2);
      await admin.page.locator("#time-reselect").click();
      await admin.page.locator("#time-sync .done").waitFor();
      assertEquals(await admin.page.locator("#time-active").textContent(), near.address);
      const silentRow = admin.page.locator("#time-sync tbody tr", { hasText: silent.address });
      assertMatch((await silentRow.textContent())!, /no answer/);
      const nearRow = admin.page.locator("#time-sync tbody tr", { hasText: near.address });
      assertMatch((await nearRow.textContent())!, /active/);
      await admin.page.locator("#time-sync-now").click();
      await admin.page.locator("#time-sync .done").waitFor();
      const view = await callJson(server, "GET", "/api/system/time-sync", { session: api });
      assertEquals(view.body.active, near.address);
      const audit = await callJson(server, "GET", "/api/audit?limit=20", { session: api });
      const actions = (audit.body.items as { action: string }[]).map((a) => a.action);
      ok(actions.includes("system.time.reselect") && actions.includes("system.time.sync"));
      assertEquals(await unlabelled(admin.page), []);
      await admin.screenshot("system-time-sync");
    });

    await t.step(
      "the metrics note says where the exposition is and that it is not public",
      async () => {
        const where = (await admin.page.locator("#metrics-where").textContent())!;
        ok(where.includes(`${server.managementUrl}/metrics`), where);
        assertMatch((await admin.page.locator("#metrics-access").textContent())!, /read:monitor/);
      },
    );

    let id = "";
    await t.step("a signed webhook channel is created, tested and shows its delivery", async () => {
      await admin.open("channels");
      await admin.page.locator("button.new").click();
      await admin.page.locator("#ch-name").fill("ops hook");
      await admin.page.locator("#ch-type").selectOption("webhook");
      await admin.page.locator("#ch-event-login-lockout").check();
      await admin.page.locator("#ch-event-attack-spike").check();
      await admin.page.locator("#ch-url").fill(hookUrl);
      await admin.page.locator("#ch-secret").fill("sign-me-please");
      assertEquals(await unlabelled(admin.page), []);
      await admin.page.locator("#ch-save").click();
      const row = admin.page.locator("main tbody tr", { hasText: "ops hook" });
      await row.waitFor();
      const text = (await row.textContent())!;
      ok(!text.includes("k-123"), "the URL's key is not shown");
      assertMatch(text, /login\.lockout/);
      const listed = await callJson(server, "GET", "/api/notification-channels", { session: api });
      const items = listed.body.items as { id: string; events: string[] }[];
      assertEquals(items.map((c) => c.events), [["login.lockout", "attack.spike"]]);
      id = items[0]!.id;

      await row.locator("button.test").click();
      await admin.page.locator("main .done", { hasText: "ops hook" }).waitFor();
      await server.monitor.dispatcher.runDue();
      const hook = received.find((r) => r.path === "/hooks/waf?key=k-123");
      ok(hook, "the receiver got the test message");
      const payload = JSON.parse(hook.body);
      assertEquals(payload.event, "test");
      const ts = hook.headers.get("x-waf-timestamp")!;
      assertEquals(
        hook.headers.get("x-waf-signature"),
        `sha256=${hmacSha256("sign-me-please", `${ts}.${hook.body}`, "hex")}`,
      );
      await admin.page.locator("#deliveries-refresh").click();
      await admin.page.locator("#deliveries .badge", { hasText: "delivered" }).waitFor();
      await admin.screenshot("channels-delivered");
    });

    await t.step("editing keeps the stored secret; deleting removes the channel", async () => {
      await admin.page.locator("main tbody tr", { hasText: "ops hook" }).locator("button", {
        hasText: "Edit",
      }).click();
      assertEquals(await admin.page.locator("#ch-url").inputValue(), "");
      assertEquals(await admin.page.locator("#ch-type").isDisabled(), true);
      await admin.page.locator("#ch-name").fill("ops hook 2");
      await admin.page.locator("#ch-event-attack-spike").uncheck();
      await admin.page.locator("#ch-save").click();
      await admin.page.locator("main tbody tr", { hasText: "ops hook 2" }).waitFor();
      const got = await callJson(server, "GET", `/api/notification-channels/${id}`, {
        session: api,
      });
      const item = got.body.item as { events: string[]; settings: Record<string, unknown> };
      assertEquals(item.events, ["login.lockout"]);
      assertEquals(item.settings.secret_set, true);
      // The stored secret and URL still sign and reach the receiver.
      received.length = 0;
      await callJson(server, "POST", `/api/notification-channels/${id}/test`, {
        session: api,
        body: {},
      });
      await server.monitor.dispatcher.runDue();
      const hook = received.find((r) => r.path === "/hooks/waf?key=k-123")!;
      assertEquals(
        hook.headers.get("x-waf-signature"),
        `sha256=${
          hmacSha256("sign-me-please", `${hook.headers.get("x-waf-timestamp")}.${hook.body}`, "hex")
        }`,
      );

      await admin.page.locator("main tbody tr", { hasText: "ops hook 2" }).locator(
        "button.danger",
      ).first().click();
      await admin.page.locator("dialog[open] button.danger").click();
      await admin.page.locator("main .empty", { hasText: "No channels" }).waitFor();
      const after = await callJson(server, "GET", "/api/notification-channels", { session: api });
      assertEquals(after.body.items, []);
      ok(admin.problems.length === 0, admin.problems.join("\n"));
    });

    await t.step("an e-mail channel's form shows the SMTP fields", async () => {
      await admin.page.locator("button.new").click();
      await admin.page.locator("#ch-type").selectOption("email");
      await admin.page.locator("#ch-host").waitFor();
      await admin.page.locator("#ch-name").fill("mail");
      await admin.page.locator("#ch-host").fill("127.0.0.1");
      await admin.page.locator("#ch-password").fill("Mail-Secret-1");
      await admin.page.locator("#ch-from").fill("waf@example.test");
      await admin.page.locator("#ch-to").fill("ops@example.test\nsec@example.test");
      assertEquals(await unlabelled(admin.page), []);
      await admin.page.locator("#ch-save").click();
      await admin.page.locator("main tbody tr", { hasText: "sec@example.test" }).waitFor();
      const listed = await callJson(server, "GET", "/api/notification-channels", { session: api });
      const mail = (listed.body.items as { settings: Record<string, unknown> }[])[0]!;
      assertEquals(mail.settings.to, ["ops@example.test", "sec@example.test"]);
      assertEquals([mail.settings.port, mail.settings.security], [587, "starttls"]);
      assertEquals(mail.settings.password_set, true);
      ok(!JSON.stringify(listed.body).includes("Mail-Secret-1"));
    });

    await t.step("a readonly user sees channels and time sync but changes nothing", async () => {
      await createUser(server, VIEWER.username, VIEWER.password, "readonly");
      const viewer = await kit.signIn(VIEWER);
      await viewer.open("channels");
      await viewer.page.locator(".readonly-note").waitFor();
      await viewer.page.locator("main tbody tr", { hasText: "mail" }).waitFor();
      assertEquals(await viewer.page.locator("button.new").count(), 0);
      assertEquals(await viewer.page.locator("button.test").count(), 0);
      assertEquals(await viewer.page.locator("main button.danger").count(), 0);
      await viewer.open("system");
      await viewer.page.locator("#time-sync table").waitFor();
      assertEquals(await viewer.page.locator("#time-sync-now").isDisabled(), true);
      assertEquals(await viewer.page.locator("#time-reselect").isDisabled(), true);
      ok(viewer.problems.length === 0, viewer.problems.join("\n"));
      await viewer.close();
    });
  } finally {
    await receiver.shutdown();
  }
});
