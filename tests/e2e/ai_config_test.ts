/**
 * `/api/ai/config`: disabled by default with nothing sent anywhere, the API key sealed at rest
 * and never returned, validation, the connection test, and who may read and change it.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ask, newConversation, startAiFixture } from "../_helpers/ai.ts";
import { callJson } from "../_helpers/identity.ts";

const KEY = "sk-live-abcdefghijklmnop1234";

Deno.test("the assistant is disabled by default and nothing leaves the machine until it is enabled", async () => {
  await using f = await startAiFixture({ enable: false });
  const s = f.server;
  const cfg = await callJson(s, "GET", "/api/ai/config", { session: f.as.admin });
  assertEquals(cfg.status, 200);
  assertEquals(
    [cfg.body.enabled, cfg.body.base_url, cfg.body.api_key, cfg.body.api_key_set],
    [false, "", null, false],
  );
  // Configured but not enabled: still nothing is sent.
  await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { base_url: f.provider.baseUrl, model: "m", api_key: KEY },
  });
  const conv = await newConversation(f, f.as.admin);
  const r = await ask(f, f.as.admin, conv, "hello");
  assertEquals(r.status, 409);
  assertEquals(JSON.parse(r.text).error.code, "AI_DISABLED");
  const test = await callJson(s, "POST", "/api/ai/config/test", { session: f.as.admin });
  assertEquals(test.status, 409);
  assertEquals(f.provider.requests.length, 0);

  f.provider.script({ text: "OK" });
  await callJson(s, "PUT", "/api/ai/config", { session: f.as.admin, body: { enabled: true } });
  const tested = await callJson(s, "POST", "/api/ai/config/test", { session: f.as.admin });
  assertEquals(tested.status, 200);
  assertEquals([tested.body.ok, tested.body.reply, tested.body.model], [true, "OK", "m"]);
  assertEquals(f.provider.requests.length, 1);
  assertEquals(f.provider.requests[0]!.headers.get("authorization"), `Bearer ${KEY}`);
});

Deno.test("the API key is sealed at rest, shown only as a masked hint, kept when omitted and removed with null", async () => {
  await using f = await startAiFixture({ enable: false });
  const s = f.server;
  const put = await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { enabled: true, base_url: f.provider.baseUrl, model: "gpt-test", api_key: KEY },
  });
  assertEquals(put.status, 200);
  assertEquals([put.body.api_key, put.body.api_key_set], ["****1234", true]);
  ok(!JSON.stringify(put.body).includes(KEY));
  const got = await callJson(s, "GET", "/api/ai/config", { session: f.as.ai_reader });
  assertEquals(got.body.api_key, "****1234");
  ok(!JSON.stringify(got.body).includes(KEY));

  const db = new DatabaseSync(`${s.dir}/waf.db`, { readOnly: true });
  try {
    const dump = db.prepare("SELECT value FROM settings WHERE key = 'ai'").get() as {
      value: string;
    };
    ok(!dump.value.includes(KEY), "the key is not stored in clear");
    assertMatch(JSON.parse(dump.value).api_key_sealed, /^v1\./);
    const audit = db.prepare("SELECT detail FROM audit_log WHERE action = 'ai.config.update'")
      .all() as Array<{ detail: string }>;
    ok(audit.length > 0);
    for (const a of audit) ok(!a.detail.includes(KEY));
  } finally {
    db.close();
  }
  ok(!s.logs.join("\n").includes(KEY), "the key is not logged");

  await callJson(s, "PUT", "/api/ai/config", { session: f.as.admin, body: { model: "gpt-2" } });
  f.provider.script({ text: "OK" });
  await callJson(s, "POST", "/api/ai/config/test", { session: f.as.admin });
  assertEquals(f.provider.requests.at(-1)!.headers.get("authorization"), `Bearer ${KEY}`);

  const masked = await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { api_key: "****1234" },
  });
  assertEquals(masked.status, 400);
  assertEquals((masked.body.error as { field: string }).field, "api_key");

  const cleared = await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { api_key: null },
  });
  assertEquals([cleared.body.api_key, cleared.body.api_key_set], [null, false]);
  f.provider.script({ text: "OK" });
  await callJson(s, "POST", "/api/ai/config/test", { session: f.as.admin });
  assertEquals(f.provider.requests.at(-1)!.headers.get("authorization"), null);
});

Deno.test("configuration input is validated field by field", async () => {
  await using f = await startAiFixture({ enable: false });
  const put = (body: unknown) =>
    callJson(f.server, "PUT", "/api/ai/config", { session: f.as.admin, body });
  const field = async (body: unknown) => {
    const r = await put(body);
    assertEquals(r.status, 400, JSON.stringify(body));
    return (r.body.error as { field: string }).field;
  };
  assertEquals(await field({ enabled: true }), "base_url");
  assertEquals(await field({ enabled: true, base_url: "http://127.0.0.1:1/v1" }), "model");
  assertEquals(await field({ base_url: "ftp://x/v1" }), "base_url");
  assertEquals(await field({ base_url: "http://user:pw@x/v1" }), "base_url");
  assertEquals(await field({ timeout_ms: 10 }), "timeout_ms");
  assertEquals(await field({ max_tokens: 0 }), "max_tokens");
  assertEquals(await field({ tools: ["rm_rf"] }), "tools[0]");
  assertEquals(await field({ tools: ["lookup_ip", "lookup_ip"] }), "tools");
  assertEquals(await field({ surprise: 1 }), "surprise");
  const good = await put({ timeout_ms: 30000, max_tokens: 2048, tools: ["lookup_ip"] });
  assertEquals(good.status, 200);
  assertEquals([good.body.timeout_ms, good.body.max_tokens, good.body.tools], [30000, 2048, [
    "lookup_ip",
  ]]);
});

Deno.test("the connection test reports an unreachable provider and a timeout as clear errors, audited", async () => {
  await using f = await startAiFixture({ timeoutMs: 1000 });
  const s = f.server;
  f.provider.script({ hang: true });
  const slow = await callJson(s, "POST", "/api/ai/config/test", { session: f.as.admin });
  assertEquals(slow.status, 504);
  assertEquals((slow.body.error as { code: string }).code, "AI_PROVIDER_TIMEOUT");
  await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { base_url: "http://127.0.0.1:1/v1" },
  });
  const down = await callJson(s, "POST", "/api/ai/config/test", { session: f.as.admin });
  assertEquals(down.status, 502);
  const error = down.body.error as Record<string, string>;
  assertEquals(error.code, "AI_PROVIDER_UNREACHABLE");
  assertMatch(error.message!, /127\.0\.0\.1:1/);
  assertMatch(error.trace_id!, /^[0-9a-f]{32}$/);
  assertMatch(error.event_id!, /^[0-9a-f]{32}$/);
  const audit = await callJson(s, "GET", "/api/audit?limit=20", { session: f.as.admin });
  const tests =
    (audit.body.items as Array<{ action: string; result: string; detail: { code?: string } }>)
      .filter((a) => a.action === "ai.config.test").map((a) => [a.result, a.detail.code]);
  assertEquals(tests, [["failure", "AI_PROVIDER_UNREACHABLE"], ["failure", "AI_PROVIDER_TIMEOUT"]]);
});

Deno.test("read:ai reads the configuration, write:ai changes and tests it, and use:ai or approve:ai alone do neither", async () => {
  await using f = await startAiFixture({ enable: false });
  const s = f.server;
  const status = async (session: keyof typeof f.as, method: string, path: string, body?: unknown) =>
    (await callJson(s, method, path, { session: f.as[session], body })).status;
  assertEquals(await status("ai_reader", "GET", "/api/ai/config"), 200);
  assertEquals(await status("readonly", "GET", "/api/ai/config"), 200, "read:* covers read:ai");
  assertEquals(await status("ai_reader", "PUT", "/api/ai/config", { model: "x" }), 403);
  assertEquals(await status("ai_reader", "POST", "/api/ai/config/test"), 403);
  assertEquals(await status("readonly", "PUT", "/api/ai/config", { model: "x" }), 403);
  assertEquals(await status("ai_writer", "PUT", "/api/ai/config", { model: "x" }), 200);
  assertEquals(await status("ai_writer", "POST", "/api/ai/config/test"), 409, "allowed, disabled");
  for (const who of ["analyst", "approver"] as const) {
    assertEquals(await status(who, "GET", "/api/ai/config"), 403, who);
    assertEquals(await status(who, "PUT", "/api/ai/config", { model: "x" }), 403, who);
  }
  assertEquals(await status("ai_reader", "GET", "/api/ai/usage/users"), 200);
  assertEquals(await status("analyst", "GET", "/api/ai/usage/users"), 403);
});
