/**
 * Observability through real sockets: a Prometheus scrape parsed strictly whose counters move
 * with traffic, the dashboard API, the SSE and WebSocket feeds, and notification channels
 * delivering to a loopback HTTP receiver (format and signature) and a loopback SMTP server
 * (STARTTLS, AUTH).
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { hmacSha256 } from "../../mod/core/digest.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, call, callJson, completeSetup, login, type Session } from "../_helpers/identity.ts";
import { parseExposition, valueOf } from "../_helpers/prometheus.ts";
import { ignoreWithout, missing, probe, runs } from "../_helpers/services.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { startSmtpServer } from "../_helpers/smtp_server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const ATTACK = "/search?q=1%27%20union%20select%20password%20from%20users--";

async function ready(s: TestServer, upstream: string): Promise<Session> {
  await completeSetup(s);
  s.dataPlane.sites.create(siteInput({ upstreams: [upstream] }), SYSTEM);
  return await login(s, ADMIN.username, ADMIN.password);
}

async function traffic(s: TestServer, passing: number, attacks: number): Promise<string[]> {
  const traces: string[] = [];
  for (let i = 0; i < passing; i++) {
    const r = await hostFetch(`${s.dataUrl}/ok/${i}`, "shop.test");
    assertEquals(r.status, 200);
    await r.body?.cancel();
  }
  for (let i = 0; i < attacks; i++) {
    const r = await hostFetch(`${s.dataUrl}${ATTACK}`, "shop.test");
    assertEquals(r.status, 403);
    traces.push(r.headers.get("x-waf-trace-id")!);
    await r.body?.cancel();
  }
  return traces;
}

async function scrape(s: TestServer, session?: Session) {
  const r = await call(s, "GET", "/metrics", { session });
  return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
}

Deno.test("a real scrape parses strictly and its counters move with traffic", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const admin = await ready(s, up.url);
  assertEquals((await scrape(s)).status, 401);
  const before = parseExposition((await scrape(s, admin)).text).samples;
  await traffic(s, 5, 3);
  const r = await scrape(s, admin);
  assertEquals(r.status, 200);
  assertMatch(r.type!, /^text\/plain; version=0\.0\.4/);
  const { samples, types } = parseExposition(r.text);
  const site = { site: "shop" };
  assertEquals(
    valueOf(samples, "waf_requests_total", { ...site, action: "pass", status_class: "2xx" }) -
      valueOf(before, "waf_requests_total", { ...site, action: "pass", status_class: "2xx" }),
    5,
  );
  assertEquals(
    valueOf(samples, "waf_requests_total", { ...site, action: "block", status_class: "4xx" }),
    3,
  );
  assertEquals(valueOf(samples, "waf_blocks_total", { ...site, class: "sqli" }), 3);
  assertEquals(valueOf(samples, "waf_request_duration_seconds_count", site), 8);
  assertEquals(valueOf(samples, "waf_upstream_duration_seconds_count", site), 5);
  assertEquals(valueOf(samples, "waf_inspection_duration_seconds_count", site), 8);
  assertEquals(valueOf(samples, "waf_upstream_up", { ...site, upstream: up.url }), 1);
  ok(valueOf(samples, "process_resident_memory_bytes") > 0);
  ok(valueOf(samples, "waf_policy_version") >= 2);
  ok(valueOf(samples, "waf_policy_swaps_total") >= 1);
  ok(
    valueOf(samples, "waf_management_requests_total", { route: "/metrics", status_class: "2xx" }) >=
      1,
  );
  for (
    const family of [
      "waf_access_log_dropped_total",
      "waf_access_log_dropped_verdicts_total",
      "waf_access_log_writer_escalations_total",
      "waf_access_log_writer_deescalations_total",
      "waf_event_loop_lag_seconds",
      "waf_realtime_dropped_total",
    ]
  ) {
    ok(types.has(family), family);
  }
});

/** Whether Prometheus' `promtool` is installed (Debian: apt-get install prometheus). */
const HAS_PROMTOOL = await probe("promtool", () => runs("promtool"));

/** Runs Prometheus' own `promtool check metrics` on `text`. */
async function promtool(text: string): Promise<{ code: number; out: string }> {
  if (!HAS_PROMTOOL) {
    throw missing("promtool is not installed (Debian: apt-get install prometheus)");
  }
  const child = new Deno.Command("promtool", {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, out: decode(out.stdout) + decode(out.stderr) };
}

Deno.test({
  name: "promtool check metrics accepts a real scrape (parse and lint) (needs promtool)",
  ignore: ignoreWithout(HAS_PROMTOOL),
}, async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const admin = await ready(s, up.url);
  await traffic(s, 3, 2);
  const r = await scrape(s, admin);
  assertEquals(r.status, 200);
  const checked = await promtool(r.text);
  assertEquals(checked, { code: 0, out: "" }, "promtool found nothing to report");
  // And it does report: a broken exposition fails.
  const broken = await promtool(r.text.replace(/^(waf_requests_total\{[^}]*\}) /m, "$1 x"));
  ok(broken.code !== 0, broken.out);
});

Deno.test("monitor.prometheus.public serves the configured path without credentials", async () => {
  await using s = await startTestServer({
    config: { monitor: { prometheus: { public: true, path: "/prom/metrics" } } },
  });
  const r = await s.api("/prom/metrics");
  assertEquals(r.status, 200);
  parseExposition(await r.text());
  assertEquals((await s.api("/metrics")).status, 404);
});

Deno.test("the summary and series come from rollups that survive a restart", async () => {
  await using up = startUpstream();
  const dir = await Deno.makeTempDir({ prefix: "waf-monitor-" });
  {
    await using s = await startTestServer({ dir });
    const admin = await ready(s, up.url);
    await traffic(s, 4, 2);
    const sum = await callJson(s, "GET", "/api/monitor/summary?period=1h", { session: admin });
    assertEquals(sum.status, 200);
    assertEquals(sum.body.requests, 6);
    assertEquals(sum.body.blocked, 2);
    assertEquals((sum.body.blocked_classes as Record<string, number>).sqli, 2);
    const tops = sum.body.top_paths as { path: string; site: string; blocked: number }[];
    assertEquals([tops[0]!.site, tops[0]!.path, tops[0]!.blocked], ["shop", "/search", 2]);
    assertEquals((sum.body.top_clients as { client_ip: string }[])[0]!.client_ip, "127.0.0.1");
    assertEquals((sum.body.top_sites as { site: string; blocked: number }[])[0]!.blocked, 2);
    ok((sum.body.latency_ms as { p50: number }).p50 > 0);
    const series = await callJson(s, "GET", "/api/monitor/series?period=10m", { session: admin });
    assertEquals(series.status, 200);
    const points = series.body.points as { requests: number; blocked: number }[];
    ok(points.length === 10 || points.length === 11, `${points.length} points`);
    assertEquals(points.reduce((a, p) => a + p.requests, 0), 6);
    const bad = await callJson(s, "GET", "/api/monitor/series?period=7d&step=minute", {
      session: admin,
    });
    assertEquals(bad.status, 400);
    const noSite = await callJson(s, "GET", "/api/monitor/summary?site=nope", { session: admin });
    assertEquals(noSite.status, 404);
  }
  await using again = await startTestServer({ dir });
  const admin = await login(again, ADMIN.username, ADMIN.password);
  const sum = await callJson(again, "GET", "/api/monitor/summary?period=1h&site=shop", {
    session: admin,
  });
  assertEquals(sum.body.requests, 6);
  assertEquals(sum.body.blocked, 2);
});

/** Reads SSE frames until `want` returns true for one; returns the frames read. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  want: (frame: Record<string, string>) => boolean,
): Promise<Record<string, string>[]> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const frames: Record<string, string>[] = [];
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return frames;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame: Record<string, string> = {};
        for (const line of buffer.slice(0, end).split("\n")) {
          const colon = line.indexOf(":");
          const k = line.slice(0, colon);
          frame[k === "" ? "comment" : k] = line.slice(colon + 1).trimStart();
        }
        buffer = buffer.slice(end + 2);
        frames.push(frame);
        if (want(frame)) return frames;
      }
    }
  } finally {
    await reader.cancel();
  }
}

Deno.test("the SSE feed carries blocked requests with their trace id, filters, heartbeats and resumes", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { monitor: { realtime: { heartbeat: "1s" } } } });
  const admin = await ready(s, up.url);
  const res = await call(s, "GET", "/api/realtime/events?kinds=access.blocked&site=shop", {
    session: admin,
  });
  assertEquals(res.status, 200);
  assertMatch(res.headers.get("content-type")!, /^text\/event-stream/);
  const [trace] = await traffic(s, 1, 1);
  const frames = await readEvents(res.body!, (f) => f.event === "access.blocked");
  const blocked = frames[frames.length - 1]!;
  const envelope = JSON.parse(blocked.data!);
  assertEquals(envelope.kind, "access.blocked");
  assertEquals(envelope.data.trace_id, trace);
  assertEquals(envelope.data.class, "sqli");
  assertEquals(blocked.id, envelope.id);
  // Resumption: the events after an id come back from the ring buffer.
  await traffic(s, 0, 1);
  const resumed = await call(s, "GET", "/api/realtime/events?kinds=access.blocked", {
    session: admin,
    headers: { "last-event-id": blocked.id! },
  });
  const again = await readEvents(resumed.body!, (f) => f.event === "access.blocked");
  ok(BigInt(again[again.length - 1]!.id!) > BigInt(blocked.id!));
  // A heartbeat comment arrives when nothing else does.
  const quiet = await call(s, "GET", "/api/realtime/events?kinds=node.status", { session: admin });
  const beats = await readEvents(quiet.body!, (f) => f.comment === "heartbeat");
  assertEquals(beats[beats.length - 1]!.comment, "heartbeat");
  const wrong = await callJson(s, "GET", "/api/realtime/events?kinds=nope", { session: admin });
  assertEquals(wrong.status, 400);
});

Deno.test("the WebSocket feed checks the Origin of cookie sessions and carries the same events", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const admin = await ready(s, up.url);
  const url = `${s.managementUrl.replace(/^http/, "ws")}/api/realtime/ws?kinds=access.blocked`;
  const refused = await fetch(`${s.managementUrl}/api/realtime/ws`, {
    headers: {
      cookie: admin.cookie,
      origin: "https://evil.example",
      upgrade: "websocket",
      connection: "Upgrade",
      "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      "sec-websocket-version": "13",
    },
  });
  assertEquals(refused.status, 403);
  assertEquals((await refused.json()).error.code, "ORIGIN_REFUSED");
  const ws = new WebSocket(url, {
    headers: { cookie: admin.cookie, origin: s.managementUrl },
  } as unknown as string[]);
  const messages: Record<string, unknown>[] = [];
  const got = new Promise<Record<string, unknown>>((resolve, reject) => {
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      messages.push(m);
      if (m.kind === "access.blocked") resolve(m);
    };
    ws.onerror = () => reject(new Error("websocket failed"));
  });
  await new Promise((resolve) => (ws.onopen = resolve));
  const [trace] = await traffic(s, 0, 1);
  const m = await got;
  assertEquals((m.data as { trace_id: string }).trace_id, trace);
  ws.close();
  await new Promise((resolve) => (ws.onclose = resolve));
});

Deno.test("channels deliver signed webhooks and e-mail over STARTTLS, keep secrets and record attempts", async () => {
  const received: { path: string; headers: Headers; body: string }[] = [];
  let failFirst = 1;
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    const path = new URL(req.url).pathname;
    if (path === "/flaky" && failFirst-- > 0) return new Response("busy", { status: 503 });
    received.push({
      path: new URL(req.url).pathname + new URL(req.url).search,
      headers: req.headers,
      body,
    });
    if (path.startsWith("/slack")) return new Response("ok");
    return Response.json({ errcode: 0, code: 0 });
  });
  const base = `http://127.0.0.1:${receiver.addr.port}`;
  const ca = await createCa("smtp test ca", Date.now(), systemRandom);
  const leaf = await createLeaf(
    ca,
    { commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] },
    Date.now(),
    systemRandom,
  );
  await using smtp = await startSmtpServer({
    pem: leaf,
    credentials: { user: "waf", pass: "Mail-Secret-1" },
    requireTls: true,
  });
  await using s = await startTestServer();
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  try {
    const create = async (body: Record<string, unknown>) => {
      const r = await callJson(s, "POST", "/api/notification-channels", { session: admin, body });
      assertEquals(r.status, 201, JSON.stringify(r.body));
      return (r.body.item as { id: string; settings: Record<string, unknown> });
    };
    const hook = await create({
      name: "hook",
      type: "webhook",
      events: ["login.lockout", "upstream.down"],
      settings: { url: `${base}/hook?key=abc`, secret: "sign-me" },
    });
    assertEquals(hook.settings, { url: `${base}/…`, secret_set: true });
    const slack = await create({
      name: "s",
      type: "slack",
      events: ["login.lockout"],
      settings: { url: `${base}/slack/T1/B2` },
    });
    const ding = await create({
      name: "d",
      type: "dingtalk",
      events: [],
      settings: { url: `${base}/ding?access_token=t`, secret: "SEC1" },
    });
    const feishu = await create({
      name: "f",
      type: "feishu",
      events: [],
      settings: { url: `${base}/feishu`, secret: "fsec" },
    });
    const wecom = await create({
      name: "w",
      type: "wecom",
      events: [],
      settings: { url: `${base}/wecom?key=k` },
    });
    const flaky = await create({
      name: "flaky",
      type: "webhook",
      events: [],
      settings: { url: `${base}/flaky` },
    });
    const mail = await create({
      name: "mail",
      type: "email",
      events: ["login.lockout"],
      settings: {
        host: "127.0.0.1",
        port: smtp.port,
        username: "waf",
        password: "Mail-Secret-1",
        from: "waf@example.test",
        to: ["ops@example.test"],
        ca: ca.cert,
      },
    });
    assertEquals(mail.settings.password_set, true);
    const listed = await callJson(s, "GET", "/api/notification-channels", { session: admin });
    ok(!JSON.stringify(listed.body).includes("Mail-Secret-1"));
    ok(!JSON.stringify(listed.body).includes("sign-me"));
    ok(!JSON.stringify(listed.body).includes("key=abc"));

    // A notification of a subscribed kind reaches the subscribed channels (the login's lockout
    // raises it the same way).
    s.monitor.notify({
      level: "warning",
      kind: "login.lockout",
      title: 'Sign-in locked for "admin" from 127.0.0.1',
      body: "Repeated failed sign-ins.",
      data: { username: "admin", client_ip: "127.0.0.1" },
    });
    await s.monitor.dispatcher.runDue();
    const webhook = received.find((r) => r.path === "/hook?key=abc")!;
    const payload = JSON.parse(webhook.body);
    assertEquals(payload.event, "login.lockout");
    assertEquals(payload.data.username, "admin");
    const ts = webhook.headers.get("x-waf-timestamp")!;
    assertEquals(
      webhook.headers.get("x-waf-signature"),
      `sha256=${hmacSha256("sign-me", `${ts}.${webhook.body}`, "hex")}`,
    );
    assertMatch(
      JSON.parse(received.find((r) => r.path.startsWith("/slack"))!.body).text,
      /Sign-in locked/,
    );
    const email = await smtp.next();
    ok(email.tls, "the message travelled after STARTTLS");
    assertEquals(email.auth, { user: "waf", pass: "Mail-Secret-1" });
    assertEquals(email.to, ["ops@example.test"]);
    assertMatch(email.data, /Subject: =\?UTF-8\?Q\?=5Bwaf=5D_Sign-in_locked/);
    assertMatch(email.data, /event: login\.lockout/);

    // Test messages in each documented format.
    for (const c of [ding, feishu, wecom, slack]) {
      const t = await callJson(s, "POST", `/api/notification-channels/${c.id}/test`, {
        session: admin,
        body: {},
      });
      assertEquals(t.status, 202);
    }
    await s.monitor.dispatcher.runDue();
    const dingReq = received.find((r) => r.path.startsWith("/ding"))!;
    const q = new URL(base + dingReq.path).searchParams;
    assertEquals(q.get("sign"), hmacSha256("SEC1", `${q.get("timestamp")}\nSEC1`, "base64"));
    assertEquals(JSON.parse(dingReq.body).msgtype, "markdown");
    const fs = JSON.parse(received.find((r) => r.path === "/feishu")!.body);
    assertEquals(fs.sign, hmacSha256(`${fs.timestamp}\nfsec`, "", "base64"));
    assertEquals(fs.msg_type, "text");
    assertEquals(
      JSON.parse(received.find((r) => r.path.startsWith("/wecom"))!.body).msgtype,
      "markdown",
    );

    // A failed attempt is retried after its delay; both attempts are recorded.
    await callJson(s, "POST", `/api/notification-channels/${flaky.id}/test`, {
      session: admin,
      body: {},
    });
    await s.monitor.dispatcher.runDue();
    let list = await callJson(s, "GET", `/api/notification-channels/${flaky.id}/deliveries`, {
      session: admin,
    });
    let d =
      (list.body.items as { status: string; attempts: { ok: boolean; status: number }[] }[])[0]!;
    assertEquals(d.status, "pending");
    assertEquals(d.attempts.map((a) => [a.ok, a.status]), [[false, 503]]);
    s.clock.advance(11_000);
    await s.monitor.dispatcher.runDue();
    list = await callJson(s, "GET", `/api/notification-channels/${flaky.id}/deliveries`, {
      session: admin,
    });
    d = (list.body.items as typeof d[])[0]!;
    assertEquals(d.status, "delivered");
    assertEquals(d.attempts.map((a) => a.ok), [false, true]);

    // Secrets are kept when an update omits them; readonly callers cannot write.
    const upd = await callJson(s, "PUT", `/api/notification-channels/${hook.id}`, {
      session: admin,
      body: { name: "renamed" },
    });
    assertEquals((upd.body.item as { settings: unknown }).settings, {
      url: `${base}/…`,
      secret_set: true,
    });
    const del = await call(s, "DELETE", `/api/notification-channels/${wecom.id}`, {
      session: admin,
    });
    assertEquals(del.status, 204);
  } finally {
    await receiver.shutdown();
  }
});
