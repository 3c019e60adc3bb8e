/**
 * The data plane on several worker threads (`server.data.workers: 2`): both workers serve the
 * one port, a policy change reaches both, shared limits and puzzles are exact across them, and a
 * crashed or killed worker thread is replaced while the other keeps serving.
 */
import tls from "node:tls";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { testCertificate } from "../_helpers/certificates.ts";
import { solves } from "../../engine/bot.ts";
import { addSite, apiFor, seededIp, seedIpEntries } from "../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { localServer } from "../_helpers/local_server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { createPolicyObjectsRepo } from "../../db/policy_objects_repo.ts";
import { transaction } from "../../db/store.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import { FOLD_HERE_BELOW } from "../../mod/protection/ip_list_fold_thread.ts";
import { ADMIN, startConsoleKit } from "../_helpers/console.ts";
import { workerHooks } from "../_helpers/data_workers.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const WORKERS = { server: { data: { workers: 2 } } };
const UA = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0";

/** One request on a connection of its own (so the kernel may pick either worker). */
async function send(
  s: TestServer,
  path: string,
  init: { ip?: string; method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string; headers: Headers }> {
  const client = Deno.createHttpClient({ allowHost: true, poolMaxIdlePerHost: 0 });
  try {
    const headers = new Headers({ host: "shop.test", "user-agent": UA, ...init.headers });
    if (init.ip) headers.set("x-forwarded-for", init.ip);
    const r = await fetch(`${s.dataUrl}${path}`, {
      method: init.method ?? "GET",
      headers,
      body: init.body,
      client,
      redirect: "manual",
    });
    return { status: r.status, body: await r.text(), headers: r.headers };
  } finally {
    client.close();
  }
}

/** Requests each worker has finished (from the records it sent to the main thread). */
function served(s: TestServer): number[] {
  return s.dataWorkers!.status().map((w) => w.requests);
}

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The inodes of the IPv4 sockets listening on `port` (one per worker thread that listens). */
function listeners(port: number): string[] {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return Deno.readTextFileSync("/proc/net/tcp").split("\n").map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(hex) && f[3] === "0A").map((f) => f[9]!);
}

/**
 * Waits until one of `sockets` no longer listens: an ended worker's socket closes only once its
 * thread is gone, and until then the kernel still queues connections on it, which die with it.
 */
async function oneClosed(port: number, sockets: string[], what: string): Promise<void> {
  await until(
    () => listeners(port).filter((i) => sockets.includes(i)).length === sockets.length - 1,
    what,
    60_000,
  );
}

/** Sends requests until each worker has served at least `each` more than now. */
async function untilBothServe(
  s: TestServer,
  request: () => Promise<void>,
  each = 1,
  max = 200,
): Promise<number> {
  const before = served(s);
  for (let i = 1; i <= max; i++) {
    await request();
    const now = served(s);
    if (now.every((n, w) => n - before[w]! >= each)) return i;
    if (i % 10 === 0) await new Promise((r) => setTimeout(r, 30));
  }
  throw new Error(`requests did not reach both workers: ${served(s)}`);
}

async function ready(s: TestServer): Promise<number> {
  return (await s.api("/health/ready")).status;
}

Deno.test("two workers serve the data port, and a site change is enforced by both", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  assertEquals(s.dataWorkers?.count, 2);
  const site = addSite(s, up.url);
  await until(() => s.dataWorkers!.current(), "both workers on the new policy");
  assertEquals(await ready(s), 200);
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/hello")).status, 200);
  }, 3);
  // Records from both workers reach the one access log and monitoring's counters.
  await until(() => up.seen.length >= 6, "upstream requests");
  const scrape = s.monitor.metrics.scrape();
  for (const w of ["1", "2"]) {
    ok(scrape.includes(`waf_data_worker_up{worker="${w}"} 1`), scrape);
  }
  const counted = [...scrape.matchAll(/^waf_requests_total\{site="shop"[^}]*\} (\d+)/gm)]
    .reduce((n, m) => n + Number(m[1]), 0);
  assertEquals(counted, served(s).reduce((a, b) => a + b, 0));

  // An ACME HTTP-01 answer the issuer adds on the main thread is served by both workers.
  s.dataPlane.acmeChallenges.add("shop.test", "tok-1", "tok-1.thumbprint");
  await untilBothServe(s, async () => {
    const r = await send(s, "/.well-known/acme-challenge/tok-1");
    assertEquals([r.status, r.body], [200, "tok-1.thumbprint"]);
  });
  s.dataPlane.acmeChallenges.remove("shop.test", "tok-1");

  // A change: the site goes to another host name; both workers answer 404 for the old one.
  s.dataPlane.sites.update(
    site.id,
    siteInput({ upstreams: [up.url], hosts: ["other.test"] }),
    SYSTEM,
  );
  await until(() => s.dataWorkers!.current(), "both workers on the changed policy", 1000);
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/hello")).status, 404);
  }, 2);
  await (await s.api("/health/ready")).body?.cancel();
});

Deno.test("with 100,000 IP entries, a change to the list through the API is enforced by both workers", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  seedIpEntries(s, 100_000);
  await until(() => s.dataWorkers!.current(), "both workers on the seeded list", 60_000);
  const status = async (ip: string) => (await send(s, "/hello", { ip })).status;
  // The list arrived compiled: a listed address is refused and an allowed one served by both.
  await untilBothServe(s, async () => {
    assertEquals(await status(seededIp(4321)), 403);
    assertEquals(await status(seededIp(4329)), 200);
    assertEquals(await status("203.0.113.7"), 200);
  });

  // A new entry through the API: both workers refuse its address once the write is answered
  // and they acknowledge the version.
  const api = apiFor(s);
  const added = await api("POST", "/api/protection/ip-lists", {
    action: "block",
    cidr: "203.0.113.0/24",
    site_id: null,
  });
  assertEquals(added.status, 201);
  await until(() => s.dataWorkers!.current(), "both workers on the changed list", 60_000);
  await untilBothServe(s, async () => {
    assertEquals(await status("203.0.113.7"), 403);
  }, 2);
  // A removed entry: its address is served again by both.
  const removed = await api("DELETE", "/api/protection/ip-lists/seed-ip-4321");
  assertEquals(removed.status, 204);
  await until(() => s.dataWorkers!.current(), "both workers after the removal", 60_000);
  await untilBothServe(s, async () => {
    assertEquals(await status(seededIp(4321)), 200);
    assertEquals(await status(seededIp(4322)), 403);
  }, 2);
});

Deno.test("concurrent IP-list changes (added, removed, replaced) reach both workers as stored", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  seedIpEntries(s, 2_000);
  await until(() => s.dataWorkers!.current(), "both workers on the seeded list", 60_000);
  const api = apiFor(s);
  // Seeded entries are blocks except every tenth (i % 10 === 9); these are all blocks.
  const removed = Array.from({ length: 15 }, (_, i) => 100 + i * 10);
  const replaced = Array.from({ length: 10 }, (_, i) => 1000 + i * 10);
  const added = Array.from({ length: 15 }, (_, i) => `198.51.100.${i + 1}`);
  const writes = [
    ...added.map((ip) => api("POST", "/api/protection/ip-lists", { action: "block", cidr: ip })),
    ...removed.map((i) => api("DELETE", `/api/protection/ip-lists/seed-ip-${i}`)),
    ...replaced.map((i) =>
      api("PUT", `/api/protection/ip-lists/seed-ip-${i}`, {
        action: "allow",
        cidr: `${seededIp(i)}/32`,
        site_id: null,
      })
    ),
  ];
  for (const r of await Promise.all(writes)) {
    await r.body?.cancel();
    ok(r.status < 300, `a write answered ${r.status}`);
  }
  await until(() => s.dataWorkers!.current(), "both workers on the changed list", 60_000);
  const status = async (ip: string) => (await send(s, "/hello", { ip })).status;
  await untilBothServe(s, async () => {
    for (const ip of added.slice(0, 3)) assertEquals(await status(ip), 403, ip);
    for (const i of removed.slice(0, 3)) assertEquals(await status(seededIp(i)), 200, `${i}`);
    for (const i of replaced.slice(0, 3)) assertEquals(await status(seededIp(i)), 200, `${i}`);
    assertEquals(await status(seededIp(101)), 403, "an unchanged entry");
  }, 2);
  // The main thread's list counts what the store holds.
  const stored = s.dataPlane.policy.current.protection!.ipList;
  assertEquals(stored.size, 2_000 + added.length - removed.length);
});

Deno.test("IP-list patches and folds stay in step with a worker restarted between them and during a fold", async () => {
  // Large enough for the server to fold on its thread (smaller lists fold in the change).
  const ENTRIES = FOLD_HERE_BELOW + 1_000;
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  seedIpEntries(s, ENTRIES);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers on the seeded list", 60_000);
  const api = apiFor(s);
  const write = async (method: string, path: string, body?: unknown) => {
    const r = await api(method, path, body);
    await r.body?.cancel();
    ok(r.status < 300, `${method} ${path} answered ${r.status}`);
  };
  const restarted = (w: number, times: number) => {
    const st = pool.status()[w - 1]!;
    return st.restarts === times && st.live;
  };
  const status = async (ip: string) => (await send(s, "/hello", { ip })).status;
  // Changes pending on the base (a patch), then worker 1 restarted: it starts from the base
  // and the patch together, and the next patch applies to the base it received.
  await write("POST", "/api/protection/ip-lists", { action: "block", cidr: "198.51.100.1" });
  await write("DELETE", "/api/protection/ip-lists/seed-ip-100");
  await until(() => pool.current(), "both workers on the patch");
  hooks.kill(1);
  await until(() => restarted(1, 1), "worker 1 restarted", 60_000);
  await write("POST", "/api/protection/ip-lists", { action: "block", cidr: "198.51.100.2" });
  // Past the pending limit: a fold starts on a thread of its own, and the list keeps serving the
  // base with its changes until the new base is complete.
  const repo = createPolicyObjectsRepo(s.db);
  transaction(s.db, () => {
    for (let i = 0; i < 300; i++) {
      repo.insert({
        id: `fold-${i}`,
        kind: KIND.ip,
        site_id: null,
        position: 5,
        config: JSON.stringify({
          action: "block",
          cidr: `192.0.2.${i & 255}/32`,
          site_id: null,
          path_prefix: null,
          expires_at: null,
          note: "",
        }),
        created_at: 1,
        updated_at: 1,
      });
    }
  });
  s.dataPlane.policy.rebuild();
  const ipState = () => s.dataPlane.policy.current.protection!.ipList.state;
  const unfolded = ipState().base;
  ok((ipState().added?.allow.length ?? 0) > 300, "the changes pending while the fold runs");
  await until(() => pool.current(), "both workers on the changes pending", 60_000);
  // Worker 1 restarted during the fold (the list is the base and its changes until a change
  // swaps the new base in): it takes the base and the changes together. One more change: it
  // swaps the new base in if the fold is done, else it waits with the rest.
  hooks.kill(1);
  await until(() => restarted(1, 2), "worker 1 restarted again", 60_000);
  ok(ipState().base === unfolded, "still the base the fold started from");
  await write("POST", "/api/protection/ip-lists", { action: "block", cidr: "198.51.100.3" });
  await s.dataPlane.ipFolds.settled();
  // The next change swaps the new base in (if not done yet); the workers receive it as shared
  // memory.
  await write("DELETE", "/api/protection/ip-lists/seed-ip-103");
  ok(ipState().base !== unfolded, "the folded base is in force");
  ok((ipState().added?.allow.length ?? 0) < 10, "the changes folded in are no longer pending");
  await until(() => pool.current(), "both workers on the fold", 60_000);
  // Worker 2 restarted after the fold (it gets the new base), then one more patch.
  hooks.kill(2);
  await until(() => restarted(2, 1), "worker 2 restarted", 60_000);
  await write("PUT", "/api/protection/ip-lists/seed-ip-101", {
    action: "allow",
    cidr: `${seededIp(101)}/32`,
    site_id: null,
  });
  await until(() => pool.current(), "both workers on the last patch", 60_000);
  await untilBothServe(s, async () => {
    assertEquals(await status("198.51.100.1"), 403, "added before the restart");
    assertEquals(await status("198.51.100.2"), 403, "added after the restart");
    assertEquals(await status(seededIp(100)), 200, "removed before the restart");
    assertEquals(await status("192.0.2.77"), 403, "folded in");
    assertEquals(await status("198.51.100.3"), 403, "added during the fold");
    assertEquals(await status(seededIp(103)), 200, "removed after the fold");
    assertEquals(await status(seededIp(101)), 200, "replaced by an allow");
    assertEquals(await status(seededIp(102)), 403, "unchanged");
    assertEquals(await status(seededIp(109)), 200, "an unchanged allow");
  }, 3);
  assertEquals(s.dataPlane.policy.current.protection!.ipList.size, ENTRIES + 2 - 1 + 300 + 1 - 1);
});

/** One HTTP/1.1 request over TLS with SNI `servername`; the reply's text. */
function tlsGet(port: number, servername: string, ca: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, servername, ca }, () => {
      let reply = "";
      socket.on("data", (d: Uint8Array) => reply += new TextDecoder().decode(d));
      socket.on("end", () => resolve(reply));
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
    socket.on("error", reject);
  });
}

Deno.test("both workers serve HTTPS on the one port, with the site's certificate by SNI", async () => {
  const { ca, leaf } = await testCertificate("a.test");
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { workers: 2, https_listen: "127.0.0.1:0" } } },
  });
  const port = Number(new URL(s.dataHttpsUrl!).port);
  s.dataPlane.sites.create(
    siteInput({ name: "a", hosts: ["a.test"], upstreams: [up.url], tls: leaf }),
    SYSTEM,
  );
  await until(() => s.dataWorkers!.current(), "both workers on the new policy");
  await untilBothServe(s, async () => {
    const reply = await tlsGet(port, "a.test", ca.cert, "/x");
    assertMatch(reply, /^HTTP\/1\.1 200/);
    assertMatch(reply, /"x-forwarded-proto":"https"/);
  });
});

/** Records every message the main thread posts to a worker until disposed. */
function spyWorkerMessages(): { readonly texts: string[] } & Disposable {
  const texts: string[] = [];
  const original = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: Worker, ...args: unknown[]) {
    texts.push(JSON.stringify(args[0], (_k, v) => v instanceof SharedArrayBuffer ? null : v));
    return (original as (...a: unknown[]) => void).apply(this, args);
  } as typeof original;
  return { texts, [Symbol.dispose]: () => (Worker.prototype.postMessage = original) };
}

Deno.test("workers serving no HTTPS port get the sites' certificates but never their private keys", async () => {
  const { leaf } = await testCertificate("a.test");
  using spy = spyWorkerMessages();
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  s.dataPlane.sites.create(
    siteInput({ name: "a", hosts: ["a.test"], upstreams: [up.url], tls: leaf }),
    SYSTEM,
  );
  await until(() => s.dataWorkers!.current(), "both workers on the new policy");
  // The site is served by both workers (over HTTP: the only data port here).
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/x", { headers: { host: "a.test" } })).status, 200);
  });
  const policies = spy.texts.filter((t) =>
    t.startsWith('{"t":"init"') || t.startsWith('{"t":"policy"')
  );
  ok(policies.length >= 3, `init to each worker and the change: ${policies.length}`);
  ok(policies.some((t) => t.includes("BEGIN CERTIFICATE")), "the certificate is sent");
  ok(!policies.some((t) => t.includes("PRIVATE KEY")), "no private key reaches a worker");
});

Deno.test("a rate limit of N per window lets exactly N through across both workers", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const api = apiFor(s);
  const N = 7;
  const put = await api("PUT", "/api/protection/rate-limit", {
    enabled: true,
    requests: N,
    window_seconds: 600,
    burst: 0,
  });
  assertEquals(put.status, 200);
  await until(() => s.dataWorkers!.current(), "both workers on the rate limit");
  const statuses: number[] = [];
  await untilBothServe(
    s,
    async () => {
      statuses.push((await send(s, "/", { ip: "192.0.2.77" })).status);
    },
    N,
    400,
  );
  assertEquals(statuses.filter((x) => x === 200).length, N, statuses.join(" "));
  assertEquals(statuses.filter((x) => x !== 200 && x !== 429).length, 0);
  ok(statuses.length >= 2 * N, "each worker saw at least N of them");
});

Deno.test("upstream health seen through the API follows the workers: last success and cool-down", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  const site = addSite(s, up.url);
  const api = apiFor(s);
  const health = async () => {
    const r = await api("GET", "/api/sites/health", undefined, "read:sites");
    const items = (await r.json()).items as {
      site_id: string;
      upstreams: { healthy: boolean; down_until: string | null; last_ok_at: string | null }[];
    }[];
    return items.find((x) => x.site_id === site.id)!.upstreams[0]!;
  };
  assertEquals((await health()).last_ok_at, null);
  assertEquals((await send(s, "/")).status, 200);
  const end = Date.now() + 5000;
  let seen = await health();
  while (seen.last_ok_at === null && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    seen = await health();
  }
  ok(seen.last_ok_at !== null, "the success a worker saw reaches the health route");
  // The upstream goes away: the worker that fails on it cools it down, and the API says so.
  await up[Symbol.asyncDispose]();
  assertEquals((await send(s, "/")).status, 502);
  await until(() => s.dataPlane.sites.health()[0]!.upstreams[0]!.failures > 0, "the failure");
  const down = await health();
  assertEquals(down.healthy, false);
  ok(down.down_until !== null && Date.parse(down.down_until) > Date.now(), String(down.down_until));
});

Deno.test("a cache purge answers how many entries it removed from every worker's cache", async () => {
  await using up = localServer((req) =>
    new Response(`static ${new URL(req.url).pathname}`, {
      headers: { "content-type": "text/plain", "cache-control": "public, max-age=600" },
    })
  );
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/edge/settings", {
    cache: { enabled: true, paths: [{ path_prefix: "/static/" }] },
  }, "write:edge");
  assertEquals(put.status, 200, await put.text());
  await until(() => s.dataWorkers!.current(), "both workers on the cache settings");
  // Each path once, on connections of their own: each is cached by the one worker that served it.
  let n = 0;
  await untilBothServe(s, async () => {
    const r = await send(s, `/static/${++n}`);
    assertEquals([r.status, r.headers.get("x-waf-cache")], [200, "MISS"]);
  }, 2);
  // Served again by the worker that has it (a HIT) or by the other, which then caches it too.
  const again1 = (await send(s, "/static/1")).headers.get("x-waf-cache");
  const cached = n + (again1 === "MISS" ? 1 : 0);
  const purge = await api(
    "POST",
    "/api/edge/cache/purge",
    { path_prefix: "/static/" },
    "write:edge",
  );
  assertEquals([purge.status, await purge.json()], [200, {
    purged: cached,
    complete: true,
    unanswered_workers: 0,
  }]);
  const again = await api(
    "POST",
    "/api/edge/cache/purge",
    { path_prefix: "/static/" },
    "write:edge",
  );
  assertEquals(await again.json(), { purged: 0, complete: true, unanswered_workers: 0 });
  assertEquals((await send(s, "/static/1")).headers.get("x-waf-cache"), "MISS");
});

Deno.test("a cache purge a worker does not answer in time says its count is missing", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  const api = apiFor(s);
  // Worker 1 is busy for 3 s: the purge waits its 1 s for it, then answers without its count.
  hooks.stall(1, 3000);
  const purge = await api("POST", "/api/edge/cache/purge", {}, "write:edge");
  assertEquals([purge.status, await purge.json()], [200, {
    purged: 0,
    complete: false,
    unanswered_workers: 1,
  }]);
  // Past its 3 s (however late it began them on a loaded machine): complete again.
  const purgeAgain = async () =>
    await (await api("POST", "/api/edge/cache/purge", {}, "write:edge")).json();
  let again = await purgeAgain();
  for (let i = 0; i < 60 && !again.complete; i++) again = await purgeAgain();
  assertEquals(again, { purged: 0, complete: true, unanswered_workers: 0 });
});

Deno.test("a cache purge waits for a worker still starting: complete means every thread purged", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  // Worker 1 starts again and is busy for 2 s before it reads the purge; this thread has not
  // read that it started (same turn). It listens, and caches, as soon as it starts, so a
  // "complete" purge that did not wait for it could leave it serving what the purge removed.
  hooks.kill(1);
  hooks.stall(1, 2000);
  assertEquals(pool.status()[0]!.live, false);
  assertEquals(await pool.edgeCache.purgeAll(null, null), { purged: 0, unanswered: 1 });
  // Past its start and its 2 s, however late on a loaded machine: it answers again.
  let again = await pool.edgeCache.purgeAll(null, null);
  for (let i = 0; i < 60 && again.unanswered > 0; i++) {
    again = await pool.edgeCache.purgeAll(null, null);
  }
  assertEquals(again, { purged: 0, unanswered: 0 });
});

Deno.test("a cache purge is not held up by a worker ended while it waits (its cache went with it)", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  hooks.stall(1, 3000);
  // Only the kill can answer for worker 1: no answer is given up on in the test's time (on a
  // loaded machine the restart's blocking start can hold this thread, and worker 2's answer with
  // it, past 1 s).
  const before = hooks.setAskTimeout(120_000);
  try {
    const purge = pool.edgeCache.purgeAll(null, null);
    hooks.kill(1);
    assertEquals(await purge, { purged: 0, unanswered: 0 });
  } finally {
    hooks.setAskTimeout(before);
  }
});

Deno.test("a solved bot puzzle is accepted once: replayed on the other worker it is refused", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const api = apiFor(s);
  const bot = await api("POST", "/api/protection/bot-policies", { mode: "all", difficulty: 8 });
  assertEquals(bot.status, 201);
  await until(() => s.dataWorkers!.current(), "both workers on the bot policy");
  const page = await send(s, "/");
  assertEquals(page.status, 403);
  const token = /name="token" value="([^"]+)"/.exec(page.body)?.[1] ?? "";
  const nonce = /data-nonce="([^"]+)"/.exec(page.body)?.[1] ?? "";
  let answer = 0;
  while (!solves(nonce, String(answer), 8)) answer++;
  const post = () =>
    send(s, "/.well-known/waf/challenge", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token, answer: String(answer), ret: "/" }).toString(),
    });
  const first = await post();
  assertEquals(first.status, 303, "the first answer earns the clearance");
  ok((first.headers.get("set-cookie") ?? "").includes("waf_clearance="));
  const replays: number[] = [];
  await untilBothServe(s, async () => {
    replays.push((await post()).status);
  }, 1);
  ok(replays.length >= 1);
  assertEquals(replays.filter((x) => x !== 403), [], "every replay is refused, on both workers");
});

Deno.test("a crashed or killed worker thread is restarted while the other keeps serving", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  const restarted = (w: number) => {
    const st = pool.status()[w - 1]!;
    return st.restarts === 1 && st.live;
  };
  const port = Number(new URL(s.dataUrl).port);
  const first = listeners(port);
  assertEquals(first.length, 2);
  hooks.crash(1);
  // Once the crash is seen and its socket closed (a connection it had accepted dies with it),
  // worker 2 answers every request while worker 1 is replaced.
  await until(() => !pool.status()[0]!.live, "worker 1 down");
  await oneClosed(port, first, "worker 1's socket closed");
  for (let i = 0; i < 10; i++) assertEquals((await send(s, "/")).status, 200);
  await until(() => restarted(1), "worker 1 restarted", 60_000);
  const second = listeners(port);
  assertEquals(second.length, 2);
  hooks.kill(2);
  await oneClosed(port, second, "worker 2's socket closed");
  for (let i = 0; i < 10; i++) assertEquals((await send(s, "/")).status, 200);
  await until(() => restarted(2), "worker 2 restarted", 60_000);
  assertEquals(await ready(s), 200);
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/")).status, 200);
  });
  ok(s.logs.some((l) => l.includes("data-plane worker crashed")), "the crash is logged");
});

Deno.test("shutdown drains every worker: a request in flight finishes, its record is written, new connections are refused", async () => {
  await using up = startUpstream();
  const s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  await until(() => s.dataWorkers!.current(), "both workers ready");
  const inFlight = send(s, "/slow");
  await up.held();
  const port = Number(new URL(s.dataUrl).port);
  assertEquals(listening(port), 2);
  const stopping = s.shutdown();
  // Draining closes both workers' sockets while the held request is still in flight.
  await until(() => listening(port) === 0, "both workers stopped listening", 60_000);
  const refused = await send(s, "/").then(() => "answered", () => "refused");
  assertEquals(refused, "refused", "no worker accepts once draining started");
  up.release();
  assertEquals((await inFlight).status, 200, "the held request finished");
  await stopping;
  assertEquals(s.dataWorkers!.status().filter((w) => w.requests > 0).length, 1);
  ok(s.logs.some((l) => l.includes("stopped")));
  await Deno.remove(s.dir, { recursive: true });
});

Deno.test("a worker ended while the workers drain does not hold shutdown up to its deadline", async () => {
  await using up = startUpstream();
  const s = await startTestServer({
    config: { ...WORKERS, server: { ...WORKERS.server, shutdown_timeout: "30s" } },
  });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  // Worker 1 is busy and does not read the drain; it ends (a crash, as a bug would make) while
  // the shutdown waits for it. Its threads went with it: nothing is left to drain.
  hooks.stall(1, 30_000);
  const stopping = s.shutdown();
  hooks.kill(1);
  await stopping;
  ok(!s.logs.some((l) => l.includes("shutdown deadline reached")), "no wait for the deadline");
  ok(s.logs.some((l) => l.includes("stopped")));
  await Deno.remove(s.dir, { recursive: true });
});

Deno.test({
  name:
    "the system page shows the worker setting and each worker on the current policy (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(WORKERS);
  const { server } = kit;
  addSite(server, up.url);
  await until(() => server.dataWorkers!.current(), "both workers on the new policy");
  const admin = await kit.signIn(ADMIN);
  await admin.open("system");
  await admin.page.locator("#data-plane table").waitFor();
  assertEquals(
    (await admin.page.locator("#data-plane-setting").textContent())?.trim(),
    "server.data.workers: 2",
  );
  ok((await admin.page.locator("#data-plane-workers").textContent())!.includes("2 worker threads"));
  assertEquals(await admin.page.locator("#data-plane tbody tr").count(), 2);
  const policy = (await admin.page.locator("#data-plane-policy").textContent())!;
  ok(policy.includes("every worker current"), policy);
  const chinese = await kit.signIn(ADMIN, "zh-CN");
  await chinese.open("system");
  await chinese.page.locator("#data-plane h2", { hasText: "数据面" }).waitFor();
});

Deno.test("a worker restarted after a policy build that failed gets the policy in force, not the failed build's reads", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const api = apiFor(s);
  const N = 3;
  const put = await api("PUT", "/api/protection/rate-limit", {
    enabled: true,
    requests: N,
    window_seconds: 600,
    burst: 0,
  });
  assertEquals(put.status, 200);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers on the rate limit");
  // An IP entry the build cannot parse (written around the API): the build fails part-way,
  // after reading some kinds and before others (the rate limit is read after the IP list).
  createPolicyObjectsRepo(s.db).insert({
    id: "broken",
    kind: KIND.ip,
    site_id: null,
    position: 1,
    config: "{not json",
    created_at: 1,
    updated_at: 1,
  });
  let failed = false;
  try {
    s.dataPlane.policy.rebuild();
  } catch {
    failed = true;
  }
  ok(failed, "the build failed; the policy in force is unchanged");
  assertEquals(s.dataPlane.snapshot()!.singletons[KIND.rateLimit] !== undefined, true);
  // Both workers restarted: they start from what the policy in force was built from.
  for (const w of [1, 2]) {
    hooks.kill(w);
    await until(() => pool.status()[w - 1]!.live, `worker ${w} restarted`, 60_000);
  }
  const statuses: number[] = [];
  await untilBothServe(
    s,
    async () => {
      statuses.push((await send(s, "/", { ip: "192.0.2.78" })).status);
    },
    N,
    400,
  );
  assertEquals(statuses.filter((x) => x === 200).length, N, statuses.join(" "));
});

/** Sockets listening on `port` (IPv4, this host), read synchronously from the kernel's table. */
function listening(port: number): number {
  return listeners(port).length;
}

Deno.test("a cache purge reaches a worker that listens before the main thread has seen it start", async () => {
  // The upstream in a process of its own: this thread is kept busy below.
  const upstream = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => console.log(a.port) },
        () => new Response("static", { headers: { "cache-control": "public, max-age=600" } }));`,
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  await using _ = {
    async [Symbol.asyncDispose]() {
      upstream.kill();
      await upstream.status;
    },
  };
  const reader = upstream.stdout.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  const up = { url: `http://127.0.0.1:${Number(first.trim())}` };
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/edge/settings", {
    cache: { enabled: true, paths: [{ path_prefix: "/static/" }] },
  }, "write:edge");
  assertEquals(put.status, 200, await put.text());
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers on the cache settings");
  const port = Number(new URL(s.dataUrl).port);
  assertEquals(listening(port), 2);
  const before = pool.status()[0]!.requests;
  // Requests from another process (each path once, each on a connection of its own) until told
  // to stop, while this thread, kept busy, reads no message: worker 1 starts again, listens and
  // caches what it serves, and its "listening" answer waits unread. The purge is asked then.
  const stop = await Deno.makeTempFile();
  await Deno.remove(stop);
  const client = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `let i = 0;
      while (true) {
        try { Deno.statSync(${JSON.stringify(stop)}); break; } catch { /* not yet */ }
        const client = Deno.createHttpClient({ allowHost: true, poolMaxIdlePerHost: 0 });
        const r = await fetch("${s.dataUrl}/static/" + ++i, {
          headers: { host: "shop.test", "user-agent": ${JSON.stringify(UA)} }, client });
        await r.body?.cancel();
        client.close();
        await new Promise((r) => setTimeout(r, 10));
      }`,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  hooks.kill(1);
  const busy = (ms: number, done = () => false) => {
    const end = Date.now() + ms;
    while (Date.now() < end && !done()) { /* no message is read meanwhile */ }
  };
  busy(30_000, () => listening(port) === 2);
  assertEquals(listening(port), 2, "worker 1 listens again");
  busy(1500);
  Deno.writeTextFileSync(stop, "");
  busy(500);
  assertEquals(pool.status()[0]!.live, false, "the main thread has not seen worker 1 start");
  const purged = pool.edgeCache.purgeAll(null, "/static/");
  await client.status;
  await Deno.remove(stop);
  await purged;
  await until(() => pool.status()[0]!.live, "worker 1 restarted", 60_000);
  await pool.flush();
  ok(pool.status()[0]!.requests > before, "worker 1 served (and cached) before the purge");
  // Each worker's cache as it reports it (once a second): nothing left under /static/. Once each
  // worker has reported since it answered the flush (after the purge), then until the reports
  // show it: a loaded worker's report comes late, and until it comes the last one is from before.
  const reports = [1, 2].map((w) => hooks.cacheReport(w));
  await until(
    () => [1, 2].every((w, i) => hooks.cacheReport(w) !== reports[i]),
    "a cache report from each worker since the purge",
    60_000,
  );
  await until(() => pool.edgeCache.stats().entries === 0, "every cached entry gone", 60_000)
    .catch(() => {
      throw new Error(`entries left after the purge: ${pool.edgeCache.stats().entries}`);
    });
});

Deno.test("an upstream that failed on a worker since restarted is up again once a worker reaches it", async () => {
  // An upstream on a fixed port, stopped and started again.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const serve = () =>
    Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, () => new Response("ok"));
  let upstream = serve();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, `http://127.0.0.1:${port}`);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  const mirrored = () => s.dataPlane.policy.current.sites[0]!.pool.upstreams[0]!;
  assertEquals((await send(s, "/")).status, 200);
  await upstream.shutdown();
  assertEquals((await send(s, "/")).status, 502);
  await until(() => mirrored().failures > 0, "the failure mirrored");
  // Every worker restarted (the one that saw the failure among them), then the upstream is back
  // and both workers reach it: none of them has a failure to recover from.
  for (const w of [1, 2]) {
    hooks.kill(w);
    await until(() => pool.status()[w - 1]!.live, `worker ${w} restarted`, 60_000);
  }
  upstream = serve();
  try {
    await untilBothServe(s, async () => {
      assertEquals((await send(s, "/")).status, 200);
    });
    // Reported with the workers' periodic stats, which a loaded worker sends late.
    await until(
      () => mirrored().failures === 0,
      "the upstream up again on the main thread",
      60_000,
    );
    assertEquals(mirrored().downUntil, 0);
  } finally {
    await upstream.shutdown();
  }
});

/** What the server logged of failed restart attempts (one line an attempt). */
function failedRestarts(s: TestServer): string[] {
  return s.logs.filter((l) => l.includes("data-plane worker failed to restart"));
}

Deno.test("a worker whose restart fails is started again with back-off until it serves", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  hooks.failStarts(3);
  hooks.kill(1);
  await until(() => pool.status()[0]!.live, "worker 1 started again", 60_000);
  const failed = failedRestarts(s);
  assertEquals(failed.length, 3, failed.join("\n"));
  failed.forEach((l, i) => assertMatch(l, new RegExp(`attempt\\W+${i + 1}\\b`)));
  assertEquals(pool.status()[0]!.restarts, 1);
  assertEquals(await ready(s), 200);
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/")).status, 200);
  });
});

Deno.test("while no worker serves, /health/ready says not ready; once one is started again, ready", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  const attempts = () => failedRestarts(s).length;
  hooks.failStarts(Number.MAX_SAFE_INTEGER);
  hooks.kill(1);
  hooks.kill(2);
  await until(() => attempts() >= 4, "two failed restarts of each worker", 60_000);
  assertEquals(pool.status().map((w) => w.live), [false, false]);
  assertEquals(await ready(s), 503);
  const down = s.monitor.metrics.scrape();
  for (const w of ["1", "2"]) {
    ok(down.includes(`waf_data_worker_up{worker="${w}"} 0`), down);
    ok(down.includes(`waf_data_worker_restarts_total{worker="${w}"} 1`), down);
  }
  ok(/waf_data_worker_restart_failures_total\{worker="1"\} [1-9]/.test(down), down);
  hooks.failStarts(0);
  await until(() => pool.status().every((w) => w.live), "both workers started again", 60_000);
  await until(() => pool.current(), "both workers on the current policy");
  assertEquals(await ready(s), 200);
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/")).status, 200);
  });
});

Deno.test("shutdown is not held up by a worker waiting to be started again", async () => {
  await using up = startUpstream();
  const s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  hooks.failStarts(Number.MAX_SAFE_INTEGER);
  hooks.kill(1);
  await until(
    () => failedRestarts(s).length > 0,
    "a failed restart",
    60_000,
  );
  let drained = false;
  const draining = pool.drain().then(() => drained = true);
  await until(() => drained, "the drain", 10_000);
  await draining;
  await s[Symbol.asyncDispose]();
});

Deno.test("a purge asked while a restart attempt fails is answered without waiting for that attempt", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  // Long: only the attempt's own failure may end the wait (a busy worker 2 answers, however late).
  const before = hooks.setAskTimeout(60_000);
  try {
    hooks.failStarts(1);
    // The restart attempt is under way (its thread loading) when the purge is asked; it fails.
    hooks.kill(1);
    const purged = await pool.edgeCache.purgeAll(null, null);
    assertEquals(purged, { purged: 0, unanswered: 0 });
    ok(failedRestarts(s).length > 0, s.logs.join("\n"));
  } finally {
    hooks.setAskTimeout(before);
  }
  await until(() => pool.status()[0]!.live, "worker 1 started again", 60_000);
});

Deno.test("workers started again after failed attempts enforce what changed meanwhile: an IP block, an ACME answer", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: WORKERS });
  addSite(s, up.url);
  const pool = s.dataWorkers!;
  const hooks = workerHooks(pool);
  await until(() => pool.current(), "both workers ready");
  const attempts = () => failedRestarts(s).length;
  hooks.failStarts(Number.MAX_SAFE_INTEGER);
  hooks.kill(1);
  hooks.kill(2);
  await until(() => attempts() >= 2, "a failed restart of each worker", 60_000);
  // Changed while no thread runs: the swap and the answer reach no worker now.
  const added = await apiFor(s)("POST", "/api/protection/ip-lists", {
    action: "block",
    cidr: "203.0.113.0/24",
    site_id: null,
  });
  assertEquals(added.status, 201);
  s.dataPlane.acmeChallenges.add("shop.test", "tok-2", "tok-2.thumbprint");
  const version = s.dataPlane.policy.current.version;
  hooks.failStarts(0);
  await until(() => pool.status().every((w) => w.live), "both workers started again", 60_000);
  ok(pool.status().every((w) => w.version >= version), JSON.stringify(pool.status()));
  await untilBothServe(s, async () => {
    assertEquals((await send(s, "/hello", { ip: "203.0.113.7" })).status, 403);
    const r = await send(s, "/.well-known/acme-challenge/tok-2");
    assertEquals([r.status, r.body], [200, "tok-2.thumbprint"]);
  }, 2);
});
