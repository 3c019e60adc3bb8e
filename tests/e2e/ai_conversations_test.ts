/**
 * Conversations end to end against a scripted provider: a read tool over real logged traffic,
 * the answer streamed as Server-Sent Events, stored messages, per-user token usage, tools
 * offered and run within the asker's permissions, ownership, and provider failures.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { answerText, ask, newConversation, startAiFixture } from "../_helpers/ai.ts";
import { callJson } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";

type Msg = { role: string; content: string; tool_calls?: unknown[]; tool_name?: string };

Deno.test("a read tool runs at once on real traffic and its result goes back to the model as quoted data; the answer streams and is stored", async () => {
  await using up = startUpstream();
  await using f = await startAiFixture();
  const s = f.server;
  addSite(s, up.url);
  const blocked = await hit(s, "/item?id=1%27%20OR%20%271%27%3D%271", { ip: "203.0.113.5" });
  assertEquals(blocked.status, 403);
  const conv = await newConversation(f, f.as.analyst);
  f.provider.script(
    {
      toolCalls: [{ name: "explain_access_log", arguments: { trace_id: blocked.traceId } }],
      usage: { prompt_tokens: 100, completion_tokens: 20 },
    },
    {
      text: "That request was blocked as SQL injection.",
      usage: { prompt_tokens: 300, completion_tokens: 12 },
    },
  );
  const r = await ask(f, f.as.analyst, conv, `Why was ${blocked.traceId} blocked?`);
  assertEquals(r.status, 200);
  assertMatch(r.type, /^text\/event-stream/);
  const kinds = r.events.map((e) => e.event);
  assertEquals(kinds.slice(0, 3), ["start", "tool_call", "tool_result"]);
  assertEquals(kinds.at(-1), "done");
  ok(kinds.filter((k) => k === "token").length > 1, "the answer streams in pieces");
  assertEquals(answerText(r.events), "That request was blocked as SQL injection.");
  const result = r.events[2]!.data as { ok: boolean; result: { record: Record<string, unknown> } };
  assertEquals(result.ok, true);
  assertEquals(result.result.record.trace_id, blocked.traceId);
  assertEquals(result.result.record.action, "block");
  assertEquals(r.events.at(-1)!.data.usage, { prompt_tokens: 400, completion_tokens: 32 });

  const [first, second] = f.provider.requests;
  assertEquals(first!.body.stream, true);
  assertEquals(first!.body.messages.map((m) => m.role), ["system", "user"]);
  const offered = first!.body.tools!.map((t) => t.function.name);
  assertEquals(offered, [
    "explain_access_log",
    "summarize_attacks",
    "top_attackers",
    "describe_site_protection",
    "lookup_ip",
    "block_ip",
    "add_alap_exception",
  ]);
  assertEquals(second!.body.messages.map((m) => m.role), ["system", "user", "assistant", "tool"]);
  const tool = second!.body.messages[3]!;
  assertEquals(tool.tool_call_id, "call_1");
  assertEquals(JSON.parse(tool.content!).waf_data.result.record.client_ip, "203.0.113.5");

  const stored = await callJson(s, "GET", `/api/ai/conversations/${conv}`, {
    session: f.as.analyst,
  });
  assertEquals(stored.status, 200);
  const messages = stored.body.messages as Msg[];
  assertEquals(messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assertEquals(messages[3]!.content, "That request was blocked as SQL injection.");
  assertEquals(messages[2]!.tool_name, "explain_access_log");
  assertEquals(stored.body.title, `Why was ${blocked.traceId} blocked?`);

  const usage = await callJson(s, "GET", "/api/ai/usage", { session: f.as.analyst });
  assertEquals(usage.body.totals, { requests: 2, prompt_tokens: 400, completion_tokens: 32 });
  const all = await callJson(s, "GET", "/api/ai/usage/users", { session: f.as.admin });
  const analyst = (all.body.items as Array<{ principal: { name: string }; prompt_tokens: number }>)
    .find((i) => i.principal.name === "analyst");
  assertEquals(analyst?.prompt_tokens, 400);
});

Deno.test("attack summaries, top attackers, site protection and IP lookups answer from the real store", async () => {
  await using up = startUpstream();
  await using f = await startAiFixture();
  const s = f.server;
  addSite(s, up.url);
  await callJson(s, "POST", "/api/protection/ip-lists", {
    session: f.as.admin,
    body: { action: "block", cidr: "192.0.2.0/24", note: "known bad" },
  });
  for (let i = 0; i < 3; i++) {
    await hit(s, "/admin?q=%3Cscript%3Ealert(1)%3C/script%3E", { ip: "198.51.100.9" });
  }
  await hit(s, "/x", { ip: "192.0.2.3" });
  await hit(s, "/fine", { ip: "198.51.100.10" });
  const conv = await newConversation(f, f.as.analyst);
  f.provider.script(
    {
      toolCalls: [
        { name: "summarize_attacks", arguments: { hours: 1 } },
        { name: "top_attackers", arguments: { hours: 1, limit: 5 } },
        { name: "describe_site_protection", arguments: { site: "shop" } },
        { name: "lookup_ip", arguments: { ip: "192.0.2.3" } },
      ],
    },
    { text: "Summary ready." },
  );
  const r = await ask(f, f.as.analyst, conv, "Give me the last hour");
  const results = Object.fromEntries(
    r.events.filter((e) => e.event === "tool_result").map((e) => [e.data.name, e.data]),
  ) as Record<string, { ok: boolean; result: Record<string, unknown> }>;
  const summary = results.summarize_attacks!.result;
  assertEquals(summary.total_requests, 5);
  assertEquals(summary.by_action, { block: 4, pass: 1 });
  assertEquals((summary.by_attack_class as Record<string, number>).xss, 3);
  const top = results.top_attackers!.result as {
    addresses: Array<{ client_ip: string; requests: number; blocked: number }>;
    paths: Array<{ path: string; requests: number }>;
  };
  assertEquals(top.addresses.map((a) => [a.client_ip, a.requests, a.blocked]), [
    ["198.51.100.9", 3, 3],
    ["192.0.2.3", 1, 1],
  ]);
  assertEquals(top.paths[0]!.path, "/admin");
  const site = results.describe_site_protection!.result as {
    site: { name: string; mode: string };
    ip_lists: { total: number };
    withheld: string[];
  };
  assertEquals([site.site.name, site.site.mode, site.ip_lists.total], ["shop", "block", 1]);
  assertEquals(site.withheld, ["custom_rules (needs read:rules)"]);
  const lookup = results.lookup_ip!.result as { ip_list_entries: Array<{ note: string }> };
  assertEquals(lookup.ip_list_entries.map((e) => e.note), ["known bad"]);
});

Deno.test("list_api_inventory answers from the discovered inventory, with coverage and shadow flags, for read:apisec", async () => {
  await using up = startUpstream();
  await using f = await startAiFixture();
  const s = f.server;
  addSite(s, up.url);
  const put = await callJson(s, "PUT", "/api/apisec/config", {
    session: f.as.admin,
    body: {
      discovery: { enabled: true, sample_limit: 100, ignore_prefixes: ["/static/"] },
      validation: {
        enabled: true,
        schemas: [{ id: "orders", method: "POST", path_pattern: "^/api/orders/[0-9]+$" }],
      },
    },
  });
  assertEquals(put.status, 200);
  const json = { "content-type": "application/json" };
  for (const id of [17, 18, 19]) {
    await hit(s, `/api/orders/${id}`, {
      init: { method: "POST", headers: json, body: '{"sku":1}' },
    });
  }
  await hit(s, "/api/items?page=2");
  await hit(s, "/static/app.js");
  const conv = await newConversation(f, f.as.admin);
  f.provider.script(
    {
      toolCalls: [
        { name: "list_api_inventory", arguments: { site: "shop" } },
        { name: "list_api_inventory", arguments: { shadow: true, method: "get" } },
        { name: "list_api_inventory", arguments: { site: "nope" } },
      ],
    },
    { text: "Two endpoints; /api/items is undocumented." },
  );
  const r = await ask(f, f.as.admin, conv, "Which APIs do we expose?");
  ok(f.provider.requests[0]!.body.tools!.some((t) => t.function.name === "list_api_inventory"));
  const results = r.events.filter((e) => e.event === "tool_result").map((e) => e.data) as Array<
    { ok: boolean; result: Record<string, unknown>; error?: { code: string } }
  >;
  type Item = {
    template: string;
    site: string;
    methods: Record<string, number>;
    hits: number;
    body_params: string[];
    covered: { schema: string | null; auth: string | null };
    shadow: boolean;
    last_seen: string;
  };
  const all = results[0]!.result as {
    discovery_enabled: boolean;
    total: number;
    endpoints: Item[];
  };
  assertEquals([all.discovery_enabled, all.total], [true, 2]);
  const orders = all.endpoints[0]!;
  assertEquals(
    [orders.template, orders.site, orders.methods, orders.hits, orders.body_params],
    ["/api/orders/{id}", "shop", { POST: 3 }, 3, ["sku"]],
  );
  assertEquals([orders.covered, orders.shadow], [{ schema: "orders", auth: null }, false]);
  assertMatch(orders.last_seen, /^\d{4}-\d\d-\d\dT/);
  const shadow = results[1]!.result as { total: number; endpoints: Item[] };
  assertEquals(shadow.endpoints.map((e) => [e.template, e.shadow]), [["/api/items", true]]);
  assertEquals(results[2]!.error?.code, "NOT_FOUND");
  // The answer the model saw is the same data, quoted.
  const tool = f.provider.requests[1]!.body.messages.find((m) => m.role === "tool")!;
  assertEquals(JSON.parse(tool.content!).waf_data.tool, "list_api_inventory");
});

Deno.test("tools are offered and run only within the asker's permissions", async () => {
  await using f = await startAiFixture();
  const s = f.server;
  const conv = await newConversation(f, f.as.viewer);
  f.provider.script(
    {
      toolCalls: [
        { name: "block_ip", arguments: { cidr: "192.0.2.1", reason: "x" } },
        { name: "lookup_ip", arguments: { ip: "192.0.2.1" } },
        { name: "list_api_inventory", arguments: {} },
        { name: "no_such_tool", arguments: {} },
        { name: "summarize_attacks", arguments: { hours: 99999 } },
      ],
    },
    { text: "I cannot do that." },
  );
  const r = await ask(f, f.as.viewer, conv, "Block 192.0.2.1");
  const offered = f.provider.requests[0]!.body.tools!.map((t) => t.function.name);
  assertEquals(offered, [
    "explain_access_log",
    "summarize_attacks",
    "top_attackers",
    "describe_site_protection",
  ]);
  const errors = r.events.filter((e) => e.event === "tool_result").map((e) => [
    e.data.name,
    (e.data.error as { code: string }).code,
  ]);
  assertEquals(errors, [
    ["block_ip", "FORBIDDEN"],
    ["lookup_ip", "FORBIDDEN"],
    ["list_api_inventory", "FORBIDDEN"],
    ["no_such_tool", "AI_TOOL_UNAVAILABLE"],
    ["summarize_attacks", "BAD_REQUEST"],
  ]);
  assertEquals(r.events.filter((e) => e.event === "approval"), []);
  const queue = await callJson(s, "GET", "/api/ai/approvals", { session: f.as.admin });
  assertEquals(queue.body.items, []);

  // The configuration narrows the tools further, for everyone.
  await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { tools: ["lookup_ip"] },
  });
  f.provider.script({ text: "ok" });
  await ask(f, f.as.admin, await newConversation(f, f.as.admin), "hi");
  assertEquals(f.provider.requests.at(-1)!.body.tools!.map((t) => t.function.name), ["lookup_ip"]);
  await callJson(s, "PUT", "/api/ai/config", { session: f.as.admin, body: { tools: [] } });
  f.provider.script({ text: "ok" });
  await ask(f, f.as.admin, await newConversation(f, f.as.admin), "hi");
  assertEquals(f.provider.requests.at(-1)!.body.tools, undefined);
});

Deno.test("a conversation belongs to its user: others get 404, and DELETE removes it with its messages", async () => {
  await using f = await startAiFixture();
  const s = f.server;
  const mine = await newConversation(f, f.as.analyst);
  await newConversation(f, f.as.viewer);
  f.provider.script({ text: "Hello." });
  await ask(f, f.as.analyst, mine, "hi");
  const list = await callJson(s, "GET", "/api/ai/conversations", { session: f.as.analyst });
  assertEquals((list.body.items as Array<{ id: string }>).map((c) => c.id), [mine]);
  for (
    const [method, path, body] of [
      ["GET", `/api/ai/conversations/${mine}`, undefined],
      ["DELETE", `/api/ai/conversations/${mine}`, undefined],
      ["POST", `/api/ai/conversations/${mine}/messages`, { content: "hi" }],
    ] as const
  ) {
    const r = await callJson(s, method, path, { session: f.as.viewer, body });
    assertEquals(r.status, 404, `${method} ${path}`);
    assertEquals((r.body.error as { code: string }).code, "NOT_FOUND");
  }
  assertEquals(f.provider.requests.length, 1);
  const del = await callJson(s, "DELETE", `/api/ai/conversations/${mine}`, {
    session: f.as.analyst,
  });
  assertEquals(del.status, 204);
  assertEquals(
    (await callJson(s, "GET", `/api/ai/conversations/${mine}`, { session: f.as.analyst })).status,
    404,
  );
});

Deno.test("use:ai is needed for conversations; readonly and approvers without it get 403", async () => {
  await using f = await startAiFixture();
  for (const who of ["readonly", "approver", "ai_writer"] as const) {
    const r = await callJson(f.server, "POST", "/api/ai/conversations", {
      session: f.as[who],
      body: {},
    });
    assertEquals(r.status, 403, who);
    assertEquals(
      (await callJson(f.server, "GET", "/api/ai/conversations", { session: f.as[who] })).status,
      403,
    );
  }
  for (const who of ["analyst", "viewer", "ai_writer"] as const) {
    assertEquals(
      (await callJson(f.server, "GET", "/api/ai/approvals", { session: f.as[who] })).status,
      403,
      `${who} lacks approve:ai`,
    );
  }
  const bad = await callJson(f.server, "POST", "/api/ai/conversations/x/messages", {
    session: f.as.analyst,
    body: { content: "" },
  });
  assertEquals(bad.status, 400);
  assertEquals((bad.body.error as { field: string }).field, "content");
});

Deno.test("a provider that is down or too slow ends the stream with a clear error event; the question stays stored", async () => {
  await using f = await startAiFixture({ timeoutMs: 1000 });
  const s = f.server;
  const conv = await newConversation(f, f.as.analyst);
  f.provider.script({ status: 503, error: "upstream model overloaded" });
  const busy = await ask(f, f.as.analyst, conv, "first");
  assertEquals(busy.status, 200);
  const e1 = busy.events.at(-1)!;
  assertEquals(e1.event, "error");
  assertEquals(e1.data.code, "AI_PROVIDER_ERROR");
  assertMatch(e1.data.message as string, /HTTP 503: upstream model overloaded/);

  f.provider.script({ hang: true });
  const slow = await ask(f, f.as.analyst, conv, "second");
  assertEquals(slow.events.at(-1)!.data.code, "AI_PROVIDER_TIMEOUT");

  await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { base_url: "http://127.0.0.1:1/v1" },
  });
  const down = await ask(f, f.as.analyst, conv, "third");
  assertEquals(down.events.map((e) => e.event), ["start", "error"]);
  assertEquals(down.events[1]!.data.code, "AI_PROVIDER_UNREACHABLE");

  const stored = await callJson(s, "GET", `/api/ai/conversations/${conv}`, {
    session: f.as.analyst,
  });
  assertEquals((stored.body.messages as Msg[]).map((m) => [m.role, m.content]), [
    ["user", "first"],
    ["user", "second"],
    ["user", "third"],
  ]);
  // The conversation is free again after each failure.
  await callJson(s, "PUT", "/api/ai/config", {
    session: f.as.admin,
    body: { base_url: f.provider.baseUrl },
  });
  f.provider.script({ text: "Back." });
  assertEquals(answerText((await ask(f, f.as.analyst, conv, "fourth")).events), "Back.");
});
