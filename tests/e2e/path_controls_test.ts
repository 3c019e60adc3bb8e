/**
 * The path controls judge the path the upstream will serve (issue #37, item 1), through the real
 * data plane with a raw recording upstream as the oracle: an ACL blocking the prefix `/admin`
 * blocks every spelling an upstream serves as `/admin` (dot segments, doubled slashes, escapes,
 * and per `upstream_kind` the case, `\`, `;params`, double escapes and fullwidth forms), over
 * HTTP/1.1, HTTP/2 and HTTPS; a JWT route is not reached without a token through `//api/...`; a
 * `^/login$` route limit holds for `//login`, `/./login` and `/login/`; custom rules, the edge
 * cache and API discovery read the same path; a path no reading makes unambiguous is refused with
 * 400 and recorded; what the upstream receives is the client's bytes.
 */
import tls from "node:tls";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";
import { frame, PREFACE, settings } from "../_helpers/h2_frames.ts";
import { addSite, apiFor, requireTokens } from "../_helpers/protection.ts";
import { bytes, rawSend } from "../_helpers/raw_socket.ts";
import { requestLines as lines, startAnsweringUpstream } from "../_helpers/raw_upstream.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";

interface Sent {
  readonly status: number;
  readonly chain: string[];
  readonly finding: { rule?: string; location?: string } | null;
  readonly action: string;
}

/** One raw HTTP/1.1 request (the target exactly as written) and its access-log record. */
async function send(
  s: TestServer,
  target: string,
  options: { host?: string; method?: string; headers?: string; body?: string } = {},
): Promise<Sent> {
  const port = Number(new URL(s.dataUrl).port);
  const body = options.body ?? "";
  const head = `${options.method ?? "GET"} ${target} HTTP/1.1\r\nHost: ${
    options.host ?? "shop.test"
  }\r\nConnection: close\r\n${options.headers ?? ""}${
    body === "" ? "" : `Content-Length: ${new TextEncoder().encode(body).length}\r\n`
  }\r\n`;
  const r = await rawSend(port, bytes(head, body), false);
  const row = r.trace === undefined ? undefined : await s.dataPlane.accessLog.get(r.trace);
  const rec = row ? JSON.parse(row.record) : { chain: [], action: "", finding: null };
  return {
    status: r.status,
    chain: rec.chain.map((c: { check: string; result: string; rule?: string }) =>
      [c.check, c.result, c.rule].filter((x) => x !== undefined).join(":")
    ),
    finding: rec.finding ?? null,
    action: rec.action,
  };
}

async function blockAdmin(s: TestServer): Promise<string> {
  const r = await apiFor(s)("POST", "/api/protection/acl-rules", {
    name: "no admin",
    action: "block",
    conditions: { path: { prefix: "/admin" } },
  });
  assertEquals(r.status, 201);
  return (await r.json()).id;
}

/** What every kind serves as `/admin`. */
const EVERY_KIND = ["/admin", "/x/../admin", "//admin", "/./admin", "/%2e/admin", "/%2fadmin"];

Deno.test("an ACL blocking /admin blocks every spelling a generic site's upstream may serve as /admin, and forwards the rest as sent", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const rule = await blockAdmin(s);
  for (
    const target of [
      ...EVERY_KIND,
      "/admin/users",
      "/ADMIN",
      "/Admin/x",
      "/;x/admin",
      "/.;/admin",
      "/x/..;/admin",
      "/\\admin",
      "/%5cadmin",
      "/%2561dmin",
      "/\uff41dmin",
      "/admin.",
      "/%2e%2e/admin",
      "/a/b/../../admin",
    ]
  ) {
    const r = await send(s, target);
    assertEquals([r.status, r.chain.includes(`acl:block:${rule}`)], [403, true], target);
  }
  assertEquals(lines(up), [], "no spelling of /admin reached the upstream");

  // A path the rule does not cover goes on exactly as the client sent it.
  assertEquals((await send(s, "/x/../public//page")).status, 200);
  assertEquals((await send(s, "/administrator-guide/../docs")).status, 200);
  assertEquals(lines(up), [
    "GET /x/../public//page HTTP/1.1",
    "GET /administrator-guide/../docs HTTP/1.1",
  ]);
});

Deno.test("each upstream_kind reads the backend-dependent spellings of /admin as its upstream does", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  for (const kind of ["nginx", "apache", "iis", "java", "node"]) {
    addSite(s, up.url, { name: kind, hosts: [`${kind}.test`], upstream_kind: kind });
  }
  await blockAdmin(s);
  const blocked: Record<string, string[]> = {
    nginx: [...EVERY_KIND, "/%2561dmin", "/admin/"],
    apache: [...EVERY_KIND, "/admin/"],
    iis: [...EVERY_KIND, "/ADMIN", "/\\admin", "/%5cadmin", "/%2561dmin", "/\uff41dmin", "/admin."],
    java: [...EVERY_KIND, "/;x/admin", "/.;/admin", "/x/..;/admin", "/admin;jsessionid=1"],
    node: [...EVERY_KIND, "/ADMIN", "/\\admin"],
  };
  // What the same upstream serves as another path: judged as that path, so it passes.
  const passed: Record<string, string[]> = {
    nginx: ["/ADMIN", "/;x/admin", "/\\admin"],
    apache: ["/ADMIN", "/%2561dmin", "/x/..;/admin"],
    iis: ["/;x/admin"],
    java: ["/ADMIN", "/\\admin"],
    node: ["/%2561dmin", "/;x/admin"],
  };
  for (const [kind, targets] of Object.entries(blocked)) {
    for (const target of targets) {
      assertEquals((await send(s, target, { host: `${kind}.test` })).status, 403, kind + target);
    }
  }
  const expected: string[] = [];
  for (const [kind, targets] of Object.entries(passed)) {
    for (const target of targets) {
      assertEquals((await send(s, target, { host: `${kind}.test` })).status, 200, kind + target);
      expected.push(`GET ${target} HTTP/1.1`);
    }
  }
  assertEquals(lines(up), expected);
});

Deno.test("a path no reading makes unambiguous is refused at balanced (with 400, or the block page when it carries an attack) and recorded, and logged only in monitor mode", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  addSite(s, up.url, { name: "watched", hosts: ["watched.test"], mode: "monitor" });
  addSite(s, up.url, { name: "lenient", hosts: ["lenient.test"], level: "low" });
  const cases: Array<[string, string]> = [
    ["/x/..%2fadmin", "encoded_slash"],
    ["/files/a%00.txt", "nul"],
  ];
  for (const [target, problem] of cases) {
    const r = await send(s, target);
    assertEquals(r.status, 400, target);
    assertEquals(r.action, "block", target);
    ok(r.chain.includes(`path:refused:${problem}`), `${target}: ${r.chain}`);
    assertEquals([r.finding?.rule, r.finding?.location], [`path.${problem}`, "path"], target);
  }
  // The same refusal answered as the attack the engine finds in it: the block page and its rule.
  const attacks: Array<[string, string, string]> = [
    ["/static/%2e%2e%2fadmin", "encoded_slash", "lfi.encoded_traversal"],
    ["/a%252f..%252fadmin", "encoded_slash", "lfi.encoded_traversal"],
    ["/%2Fstatic%2Fimg%2F..%2F..%2Fetc%2Fpasswd", "encoded_slash", "lfi.traversal_target"],
    ["/%c0%ae%c0%ae/admin", "overlong_utf8", "lfi.encoded_traversal"],
  ];
  for (const [target, problem, rule] of attacks) {
    const r = await send(s, target);
    assertEquals(r.status, 403, target);
    assertEquals(r.action, "block", target);
    ok(r.chain.includes(`path:refused:${problem}`), `${target}: ${r.chain}`);
    ok(r.chain.includes(`engine:block:${rule}`), `${target}: ${r.chain}`);
    assertEquals(r.finding?.rule, rule, target);
  }
  assertEquals(lines(up), []);
  const watched = await send(s, "/x/..%2fadmin", { host: "watched.test" });
  assertEquals([watched.status, watched.action], [200, "log"]);
  ok(watched.chain.includes("path:ambiguous:encoded_slash"), String(watched.chain));
  const lenient = await send(s, "/x/..%2fadmin", { host: "lenient.test" });
  assertEquals(lenient.status, 200);
  ok(lenient.chain.includes("path:ambiguous:encoded_slash"), String(lenient.chain));
  assertEquals(lines(up), ["GET /x/..%2fadmin HTTP/1.1", "GET /x/..%2fadmin HTTP/1.1"]);
});

Deno.test("a JWT route is not reached without a token through a path that only respells it", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await requireTokens(s, [{ id: "admin-api", method: "*", path_pattern: "^/api/admin/" }]);
  for (
    const target of [
      "/api/admin/stats",
      "//api/admin/stats",
      "/api//admin/stats",
      "/api/x/../admin/stats",
      "/api/./admin/stats",
      "/API/Admin/stats",
      "/api/%61dmin/stats",
      "/api;x/admin/stats",
    ]
  ) {
    const r = await send(s, target);
    assertEquals([r.status, r.chain.at(-1)], [401, "api_auth:missing:admin-api"], target);
  }
  assertEquals((await send(s, "/api/public")).status, 200);
  assertEquals(lines(up), ["GET /api/public HTTP/1.1"]);
});

Deno.test("a ^/login$ route limit holds for //login, /./login and /login/", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const put = await apiFor(s)("PUT", "/api/apisec/config", {
    rate_limits: [{
      id: "login",
      method: "POST",
      path_pattern: "^/login$",
      requests: 1,
      window: "1m",
    }],
  });
  assertEquals(put.status, 200);
  const post = { method: "POST", body: "u=a", headers: "Content-Type: text/plain\r\n" };
  assertEquals((await send(s, "/login", post)).status, 200);
  for (const target of ["//login", "/./login", "/login/", "/x/../login", "/LOGIN", "/login;x"]) {
    const r = await send(s, target, post);
    assertEquals([r.status, r.chain.at(-1)], [429, "api_rate_limit:limited:login"], target);
  }
  assertEquals(lines(up), ["POST /login HTTP/1.1"]);
});

/** Sends GETs over HTTP/2 (prior knowledge) and waits until each stream has ended. */
async function h2Gets(s: TestServer, paths: readonly string[]): Promise<void> {
  const enc = new TextEncoder();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  try {
    await conn.write(PREFACE);
    await conn.write(frame(0x4, 0, 0, settings([])));
    const host = enc.encode("shop.test");
    for (const [i, path] of paths.entries()) {
      const p = enc.encode(path);
      // :method GET, :scheme http, literal :path, literal :authority (never indexed).
      const block = new Uint8Array([0x82, 0x86, 0x04, p.length, ...p, 0x01, host.length, ...host]);
      await conn.write(frame(0x1, 0x5, 2 * i + 1, block));
    }
    const buf = new Uint8Array(65536);
    const ended = new Set<number>();
    let got = new Uint8Array();
    while (ended.size < paths.length) {
      const n = await conn.read(buf);
      if (n === null) break;
      got = new Uint8Array([...got, ...buf.subarray(0, n)]);
      let at = 0;
      while (at + 9 <= got.length) {
        const len = (got[at]! << 16) | (got[at + 1]! << 8) | got[at + 2]!;
        const type = got[at + 3]!;
        const stream = new DataView(got.buffer, at + 5, 4).getUint32(0) & 0x7fffffff;
        if ((type === 0x0 || type === 0x1) && got[at + 4]! & 0x1) ended.add(stream);
        at += 9 + len;
      }
    }
  } finally {
    conn.close();
  }
}

Deno.test("over HTTP/2 the :path is judged the same way: an ACL blocking /admin blocks /x/../admin and //admin", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const rule = await blockAdmin(s);
  await h2Gets(s, ["/x/../admin", "//admin", "/%2e/admin", "/x/../ok"]);
  const rows = await s.dataPlane.accessLog.list({ limit: 10 });
  const byPath = new Map(
    rows.map((row) => JSON.parse(row.record)).map((r) => [r.path, r] as const),
  );
  for (const path of ["/x/../admin", "//admin", "/%2e/admin"]) {
    const r = byPath.get(path);
    assertEquals(r?.status, 403, path);
    ok(r.chain.some((c: { check: string; rule?: string }) => c.check === "acl" && c.rule === rule));
  }
  assertEquals(byPath.get("/x/../ok")?.status, 200);
  assertEquals(lines(up), ["GET /x/../ok HTTP/1.1"]);
});

Deno.test("the edge cache selects by the normalised path and never serves or stores a respelt path", async () => {
  await using up = startAnsweringUpstream(
    "HTTP/1.1 200 OK\r\ncache-control: public, max-age=60\r\ncontent-length: 2\r\n\r\nok",
  );
  await using s = await startTestServer();
  addSite(s, up.url);
  const put = await apiFor(s)("PUT", "/api/edge/settings", {
    cache: { enabled: true, paths: [{ path_prefix: "/static/" }] },
  }, "write:edge");
  assertEquals(put.status, 200);
  assertEquals((await send(s, "/static/a.css")).chain.at(-1), "cache:store");
  ok((await send(s, "/static/a.css")).chain.includes("cache:hit"));
  // Under /static/ only as sent: what the upstream may serve as a private page is not cached.
  for (const target of ["/static/..;/account", "/static/x/../../account", "/static//a.css"]) {
    for (let i = 0; i < 2; i++) {
      const r = await send(s, target);
      assertEquals(r.status, 200, target);
      ok(!r.chain.some((c) => c.startsWith("cache:")), `${target}: ${r.chain}`);
    }
  }
  // A path that respells /static/a.css is not answered from its entry either.
  const respelt = await send(s, "/account/../static/a.css");
  ok(!respelt.chain.includes("cache:hit"), String(respelt.chain));
  assertEquals(lines(up), [
    "GET /static/a.css HTTP/1.1",
    "GET /static/..;/account HTTP/1.1",
    "GET /static/..;/account HTTP/1.1",
    "GET /static/x/../../account HTTP/1.1",
    "GET /static/x/../../account HTTP/1.1",
    "GET /static//a.css HTTP/1.1",
    "GET /static//a.css HTTP/1.1",
    "GET /account/../static/a.css HTTP/1.1",
  ]);
});

Deno.test("a custom path rule judges the normalised path, a query rule the decoded query too", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  for (const [kind, pattern] of [["path", "^/api/v0/"], ["query", "debug=on$"]]) {
    const r = await apiFor(s)("POST", "/api/rules/custom", {
      name: kind,
      target: { kind },
      pattern,
      action: "block",
    });
    assertEquals(r.status, 201);
  }
  for (
    const target of ["/api/v0/x", "//api/v0/x", "/api/v1/../v0/x", "/API/V0/x", "/api/%76%30/x"]
  ) {
    assertEquals((await send(s, target)).status, 403, target);
  }
  assertEquals((await send(s, "/x?debug%3Don")).status, 403);
  assertEquals((await send(s, "/api/v1/x?debug=off")).status, 200);
  assertEquals(lines(up), ["GET /api/v1/x?debug=off HTTP/1.1"]);
});

Deno.test("API discovery records the normalised path, and its ignored prefixes hold for respelt paths", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/apisec/config", {
    discovery: { enabled: true, sample_limit: 100, ignore_prefixes: ["/static/"] },
  });
  assertEquals(put.status, 200);
  for (const target of ["/api/users/12", "//api/users/13", "/api/x/../users/14", "/API/Users/15"]) {
    assertEquals((await send(s, target)).status, 200, target);
  }
  for (const target of ["//static/app.js", "/x/../static/app.js"]) await send(s, target);
  const list = await (await api("GET", "/api/apisec/endpoints", undefined, "read:apisec")).json();
  assertEquals(
    list.items.map((e: { template: string; hits: number }) => [e.template, e.hits]),
    [["/api/users/{id}", 4]],
  );
});

/** The status of one HTTP/1.1 request over TLS to `shop.test` (SNI), target as written. */
function tlsStatus(port: number, ca: string, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, servername: "shop.test", ca }, () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`);
    });
    let reply = "";
    socket.on("data", (d: Uint8Array) => reply += new TextDecoder().decode(d));
    socket.on("end", () => resolve(Number(reply.slice(9, 12))));
    socket.on("error", reject);
  });
}

Deno.test("over HTTPS the path is judged the same way", async () => {
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const leaf = await createLeaf(
    ca,
    { commonName: "shop.test", dnsNames: ["shop.test"] },
    now,
    systemRandom,
  );
  await using up = startAnsweringUpstream();
  await using s = await startTestServer({
    config: { server: { data: { https_listen: "127.0.0.1:0" } } },
  });
  addSite(s, up.url, { tls: leaf });
  await blockAdmin(s);
  const port = Number(new URL(s.dataHttpsUrl!).port);
  for (const target of EVERY_KIND) {
    assertEquals(await tlsStatus(port, ca.cert, target), 403, target);
  }
  assertEquals(await tlsStatus(port, ca.cert, "/x/..%2fadmin"), 400);
  assertEquals(await tlsStatus(port, ca.cert, "/x/../ok"), 200);
  assertEquals(lines(up), ["GET /x/../ok HTTP/1.1"]);
});
