/** ALAP exceptions against what the upstream reads: the raw bytes of an encoded body, a dotted path. */
import * as zlib from "node:zlib";
import { assertEquals } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { rawSend } from "../_helpers/raw_socket.ts";

const text = (s: string) => new TextEncoder().encode(s);
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A gzip member of `body` whose header names the file `name` (FNAME, RFC 1952 §2.3). */
function gzipNamed(body: Uint8Array, name: Uint8Array): Uint8Array {
  const gz = zlib.gzipSync(body);
  return new Uint8Array([
    ...gz.subarray(0, 3),
    8,
    ...gz.subarray(4, 10),
    ...name,
    0,
    ...gz.subarray(10),
  ]);
}

/** Blocks `path` with `init`, marks it a false positive under `prefix` and applies the exception. */
async function except(
  s: TestServer,
  path: string,
  init: RequestInit,
  prefix: string,
  rule: string,
) {
  const api = apiFor(s);
  const blocked = await hit(s, path, { init });
  assertEquals([blocked.status, blocked.finding?.rule], [403, rule]);
  const r = await api("POST", "/api/alap/false-positives", {
    trace_id: blocked.traceId,
    path_prefix: prefix,
  }, "write:protection");
  assertEquals(r.status, 201);
  const id = (await r.json()).id;
  assertEquals((await api("POST", `/api/alap/decisions/${id}/approve`)).status, 200);
}

Deno.test("an exception for the decoded body's rule does not let an attack in the gzip header's bytes through", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await apiFor(s)("PUT", "/api/alap/policy", { enabled: false });
  const tautology = text("id=1%27%20or%201=1--");
  await except(
    s,
    "/api/search",
    {
      method: "POST",
      body: new Uint8Array(zlib.gzipSync(tautology)) as BodyInit,
      headers: { ...FORM, "content-encoding": "gzip" },
    },
    "/api/",
    "sqli.tautology",
  );
  const send = (name: string) =>
    hit(s, "/api/search", {
      init: {
        method: "POST",
        body: gzipNamed(tautology, text(name)) as BodyInit,
        headers: { ...FORM, "content-encoding": "gzip" },
      },
    });
  assertEquals((await send("data.txt")).status, 200, "the excepted rule alone passes");
  const union = await send("&q=1' union select password from users--&");
  assertEquals([union.status, union.finding?.rule], [403, "sqli.union"]);
});

Deno.test("an exception under a path prefix does not reach a path that only spells the prefix with dot segments", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await apiFor(s)("PUT", "/api/alap/policy", { enabled: false });
  const tautology = "id=1%27%20or%201=1--";
  await except(s, `/tickets/find?${tautology}`, {}, "/tickets/", "sqli.tautology");
  assertEquals((await hit(s, `/tickets/find?${tautology}`)).status, 200);
  const port = Number(new URL(s.dataUrl).port);
  // An encoded backslash beside a dot segment is read as a slash by IIS and as a name by most
  // others: no reading makes it unambiguous, so it is refused before any check, with the block
  // page since the engine finds the tautology there and the exception does not reach the path.
  for (
    const [target, status] of [
      [`/tickets/../search?${tautology}`, 403],
      [`/tickets/%2e%2e/search?${tautology}`, 403],
      [`/tickets/.%2E/search?${tautology}`, 403],
      [`/tickets/..%5csearch?${tautology}`, 403],
      // Ambiguous too, but under the prefix however it is read: the excepted rule leaves the 400.
      [`/tickets/find%00.txt?${tautology}`, 400],
      [`/tickets/./../search?${tautology}`, 403],
    ] as const
  ) {
    const r = await rawSend(
      port,
      text(`GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`),
      false,
    );
    const forwarded = up.seen.filter((e) => e.path.startsWith("/search"));
    assertEquals([r.status, forwarded.length], [status, 0], target);
  }
});

Deno.test("at low an exception for the raw bytes' rule lets a body that does not decode pass, as the coding finding alone does", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { level: "low" });
  await apiFor(s)("PUT", "/api/alap/policy", { enabled: false });
  // Not gzip at all: judged as sent, where the union blocks; the coding finding is only logged.
  const init = () => ({
    method: "POST",
    body: "q=1 union select password from users",
    headers: { ...FORM, "content-encoding": "gzip" },
  });
  await except(s, "/api/search", init(), "/api/", "sqli.union");
  const again = await hit(s, "/api/search", { init: init() });
  assertEquals([again.status, steps(again).includes("engine:pass")], [200, true]);
});

Deno.test("requests an exception lets through are not counted toward ALAP's proposals: no signature block undoes the exception", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/alap/policy", {
    auto_apply: true,
    signature_threshold: 3,
    client_score_threshold: 150,
  }, "write:protection");
  const tautology = "/tickets/find?id=1%27%20or%201=1--";
  await except(s, tautology, {}, "/tickets/", "sqli.tautology");
  for (let i = 0; i < 4; i++) {
    const r = await hit(s, tautology, { ip: `192.0.2.${i % 2 + 1}` });
    s.dataPlane.protection.alap.flush();
    assertEquals(r.status, 200, `request ${i}`);
  }
  const r = await api("GET", "/api/alap/decisions", undefined, "read:logs");
  const kinds = (await r.json()).items.map((d: { kind: string }) => d.kind);
  assertEquals(kinds, ["exception"]);
});
