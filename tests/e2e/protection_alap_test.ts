/** ALAP: findings in real traffic become decisions; review through the API; enforcement in the chain. */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const TAUTOLOGY = "/search?id=1%27%20or%201=1--"; // sqli.tautology, high (85)
const UNION = "/search?q=1%20union%20select%20password%20from%20users"; // sqli.union, critical (95)

interface Decision {
  id: string;
  kind: string;
  status: string;
  scope: { site_id: string | null };
  target: Record<string, string>;
  evidence: string[];
}

async function decisions(api: ReturnType<typeof apiFor>, status?: string): Promise<Decision[]> {
  const r = await api(
    "GET",
    `/api/alap/decisions${status ? `?status=${status}` : ""}`,
    undefined,
    "read:logs",
  );
  assertEquals(r.status, 200);
  return (await r.json()).items;
}

async function attack(s: TestServer, ip: string, path = UNION, host = "shop.test") {
  const h = await hit(s, path, { ip, host });
  s.dataPlane.protection.alap.flush();
  return h;
}

Deno.test("a client that keeps attacking gets a temporary block proposal that an administrator applies and revokes", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const site = addSite(s, up.url);
  const api = apiFor(s);
  assertEquals(
    (await api("PUT", "/api/alap/policy", { client_score_threshold: 150 }, "write:protection"))
      .status,
    200,
  );
  const first = await attack(s, "192.0.2.66");
  assertEquals(await decisions(api), []);
  const second = await attack(s, "192.0.2.66");
  const [d] = await decisions(api, "proposed");
  ok(d);
  assertEquals([d.kind, d.scope.site_id, d.target.client_ip], [
    "temp_block",
    site.id,
    "192.0.2.66",
  ]);
  assertEquals(d.evidence, [first.traceId, second.traceId]);
  assertEquals((await hit(s, "/", { ip: "192.0.2.66" })).status, 200, "a proposal is not enforced");
  // The proposal is not silent: an administrator notification and a runtime-log line.
  const notes = s.db.prepare("SELECT kind, title, body, params, link FROM notifications")
    .all() as { kind: string; title: string; body: string; params: string; link: string }[];
  assertEquals(notes.map((n) => [n.kind, n.title]), [
    ["alap.temp_block", "ALAP proposes blocking 192.0.2.66 for 60 min: review it"],
  ]);
  // It links to the decision's console page, never to an API call to make by hand.
  assertEquals(notes[0]!.link, `/console/alap/${d.id}`);
  ok(notes[0]!.body.includes(`/console/alap/${d.id}`), notes[0]!.body);
  ok(!/POST|\/api\//.test(notes[0]!.body), notes[0]!.body);
  assertEquals(JSON.parse(notes[0]!.params), {
    variant: "proposed",
    decision: d.id,
    ip: "192.0.2.66",
    site: "shop",
    site_id: site.id,
    minutes: 60,
    requests: 2,
    basis: "score",
    score: 190,
    window_s: 300,
    sites: null,
    more: 0,
  });
  ok(
    s.logs.some((l) =>
      l.includes("INFO  ALAP proposes a temporary block") && l.includes("client_ip=192.0.2.66") &&
      l.includes(`decision=${d.id}`)
    ),
    s.logs.join("\n"),
  );

  assertEquals(
    (await api("POST", `/api/alap/decisions/${d.id}/approve`, undefined, "read:logs")).status,
    403,
  );
  const approved = await api(
    "POST",
    `/api/alap/decisions/${d.id}/approve`,
    undefined,
    "write:protection",
  );
  assertEquals([approved.status, (await approved.json()).status], [200, "applied"]);
  const blocked = await hit(s, "/", { ip: "192.0.2.66" });
  assertEquals(blocked.status, 403);
  assertEquals(steps(blocked).at(-1), `alap:block:${d.id}`);
  assertEquals((await hit(s, "/", { ip: "192.0.2.67" })).status, 200);
  assertEquals((await api("POST", `/api/alap/decisions/${d.id}/approve`)).status, 409);

  // A revoked decision reads "revoked" (not "rejected", which is a proposal turned down).
  const revoked = await api("POST", `/api/alap/decisions/${d.id}/revoke`);
  assertEquals([revoked.status, (await revoked.json()).status], [200, "revoked"]);
  assertEquals((await hit(s, "/", { ip: "192.0.2.66" })).status, 200);
  const listed = await (await api("GET", "/api/alap/decisions?status=revoked")).json();
  assertEquals(listed.items.map((i: { id: string }) => i.id), [d.id]);
  assertEquals((await (await api("GET", "/api/alap/decisions?status=rejected")).json()).items, []);
  assertEquals((await api("POST", `/api/alap/decisions/${d.id}/revoke`)).status, 409);
  const audit = s.db.prepare("SELECT action, detail FROM audit_log WHERE target = ? ORDER BY id")
    .all(d.id);
  assertEquals(audit.map((r) => r.action), [
    "alap.decision.propose",
    "alap.decision.approve",
    "alap.decision.revoke",
  ]);
  assertEquals(JSON.parse(audit[2]!.detail as string), { status: "revoked", previous: "applied" });
});

Deno.test("site-scoped decisions from high findings auto-apply by policy and expire; the global ban waits", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  addSite(s, up.url, { name: "blog", hosts: ["blog.test"] });
  const api = apiFor(s);
  await api("PUT", "/api/alap/policy", {
    auto_apply: true,
    client_score_threshold: 150,
    temp_block_minutes: 10,
  });
  await attack(s, "192.0.2.77");
  await attack(s, "192.0.2.77");
  const applied = await decisions(api, "applied");
  assertEquals(applied.map((d) => d.kind), ["temp_block"]);
  const blocked = await hit(s, "/", { ip: "192.0.2.77" });
  assertEquals(steps(blocked).at(-1), `alap:block:${applied[0]!.id}`);
  assertEquals(
    (await hit(s, "/", { ip: "192.0.2.77", host: "blog.test" })).status,
    200,
    "scoped to its site",
  );

  await attack(s, "192.0.2.77", UNION, "blog.test");
  await attack(s, "192.0.2.77", UNION, "blog.test");
  const proposed = await decisions(api, "proposed");
  assertEquals(proposed.map((d) => [d.kind, d.scope.site_id]), [["ip_ban", null]]);

  s.clock.advance(11 * 60_000);
  assertEquals(
    (await hit(s, "/", { ip: "192.0.2.77" })).status,
    200,
    "the temporary block expired",
  );
  const expired = await decisions(api, "expired");
  ok(expired.some((d) => d.id === applied[0]!.id));
});

Deno.test("repeated high findings of one signature propose a site-level block that applies whatever the level", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { level: "low" });
  const api = apiFor(s);
  await api("PUT", "/api/alap/policy", { signature_threshold: 3, client_score_threshold: 100_000 });
  for (let i = 0; i < 3; i++) {
    assertEquals((await attack(s, `192.0.2.${i + 1}`, TAUTOLOGY)).status, 200);
  }
  const [d] = await decisions(api, "proposed");
  ok(d);
  assertEquals([d.kind, d.target.rule_id], ["signature_block", "sqli.tautology"]);
  await api("POST", `/api/alap/decisions/${d.id}/approve`);
  const blocked = await hit(s, TAUTOLOGY, { ip: "192.0.2.99" });
  assertEquals(blocked.status, 403);
  assertEquals(steps(blocked).slice(-2), [`alap:block:${d.id}`, "engine:block:sqli.tautology"]);
});

Deno.test("marking a logged block as a false positive proposes an exception that, once approved, lets it pass", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/alap/policy", { enabled: false });
  const blocked = await hit(s, "/cms/save?body=%3Cb%20onclick%3Dx()%3Ehi%3C/b%3E");
  assertEquals(blocked.status, 403);
  const mark = await api("POST", "/api/alap/false-positives", {
    trace_id: blocked.traceId,
    path_prefix: "/cms/",
  }, "write:protection");
  assertEquals(mark.status, 201);
  const d = await mark.json();
  assertEquals([d.kind, d.status, d.target.rule_id, d.evidence], [
    "exception",
    "proposed",
    "xss.event_handler",
    [blocked.traceId],
  ]);
  assertEquals(
    (await api("POST", "/api/alap/false-positives", { trace_id: blocked.traceId })).status,
    201,
    "another scope",
  );
  assertEquals(
    (await api("POST", "/api/alap/false-positives", {
      trace_id: blocked.traceId,
      path_prefix: "/cms/",
    })).status,
    409,
  );
  assertEquals(
    (await hit(s, "/cms/save?body=%3Cb%20onclick%3Dx()%3Ehi%3C/b%3E")).status,
    403,
    "not before approval",
  );
  await api("POST", `/api/alap/decisions/${d.id}/approve`);
  const passed = await hit(s, "/cms/save?body=%3Cb%20onclick%3Dx()%3Ehi%3C/b%3E");
  assertEquals(passed.status, 200);
  ok(steps(passed).includes(`alap:exception:${d.id}`));
  assertEquals(
    (await hit(s, "/other?body=%3Cb%20onclick%3Dx()%3Ehi%3C/b%3E")).status,
    403,
    "outside the path prefix",
  );
  assertEquals(
    (await api("POST", "/api/alap/false-positives", { trace_id: "0".repeat(32) })).status,
    404,
  );
});

Deno.test("a ticketing site lets PHP source attachments through with two exceptions under its path, and an injection in the same form still blocks", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/alap/policy", { enabled: false });
  const upload = (path: string, filename: string, subject = "login page broken") => {
    const form = new FormData();
    form.set("subject", subject);
    form.set("attachment", new File(["<?php echo 'hello'; ?>\n"], filename));
    return hit(s, path, { init: { method: "POST", body: form } });
  };
  // The file's content blocks first (php.open_tag, 90), then its name (rce.script_upload, 75).
  const first = await upload("/tickets/42/reply", "index.php");
  assertEquals([first.status, first.finding?.rule], [403, "php.open_tag"]);
  const content = await api("POST", "/api/alap/false-positives", {
    trace_id: first.traceId,
    path_prefix: "/tickets/",
  }, "write:protection");
  assertEquals(content.status, 201);
  const contentId = (await content.json()).id;
  await api("POST", `/api/alap/decisions/${contentId}/approve`);
  const second = await upload("/tickets/42/reply", "index.php");
  assertEquals([second.status, second.finding?.rule], [403, "rce.script_upload"]);
  const name = await api("POST", "/api/alap/false-positives", {
    trace_id: second.traceId,
    path_prefix: "/tickets/",
  });
  assertEquals(name.status, 201);
  const nameId = (await name.json()).id;
  await api("POST", `/api/alap/decisions/${nameId}/approve`);

  const passed = await upload("/tickets/42/reply", "index.php");
  assertEquals(passed.status, 200);
  ok(steps(passed).includes(`alap:exception:${contentId}`), "the first excepted rule is logged");
  assertEquals((await upload("/tickets/7/reply", "Default.aspx")).status, 200);
  const injected = await upload(
    "/tickets/42/reply",
    "index.php",
    "1' union select password from users--",
  );
  assertEquals([injected.status, injected.finding?.rule], [403, "sqli.union"]);
  assertEquals((await upload("/avatar", "index.php")).status, 403, "outside the path prefix");
});
