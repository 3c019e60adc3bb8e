/** Threat-intelligence feeds served by a local HTTP server: sync, enforcement, failure, lookup. */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { localServer } from "../_helpers/local_server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

/** Serves `bodies[path]`; a missing path answers 500. */
function feedServer(bodies: Record<string, string>) {
  const server = localServer((req) => {
    const body = bodies[new URL(req.url).pathname];
    return body === undefined ? new Response("down", { status: 500 }) : new Response(body);
  });
  return Object.assign(server, { bodies });
}

Deno.test("a feed synced from a URL blocks its addresses, and a failing sync keeps the previous indicators", async () => {
  await using feeds = feedServer({
    "/drop.txt": "# DROP list\n203.0.113.0/24 ; SBL1\n2001:db8:bad::/48\n",
  });
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const created = await api("POST", "/api/threat-intel/feeds", {
    name: "drop",
    url: `${feeds.url}/drop.txt`,
    action: "block",
  }, "write:threat_intel");
  assertEquals(created.status, 201);
  const feed = await created.json();
  const sync = await api(
    "POST",
    `/api/threat-intel/feeds/${feed.id}/sync`,
    undefined,
    "write:threat_intel",
  );
  assertEquals(sync.status, 200);
  const synced = await sync.json();
  assertEquals([synced.status.last_result, synced.status.count], ["ok", 2]);

  const blocked = await hit(s, "/", { ip: "203.0.113.9" });
  assertEquals(blocked.status, 403);
  assertEquals(steps(blocked).at(-1), `threat_intel:block:${feed.id}`);
  assertEquals((await hit(s, "/", { ip: "2001:db8:bad::1" })).status, 403);
  assertEquals((await hit(s, "/", { ip: "198.51.100.2" })).status, 200);

  delete feeds.bodies["/drop.txt"];
  const failed = await (await api("POST", `/api/threat-intel/feeds/${feed.id}/sync`)).json();
  assertEquals(failed.status.last_result, "error");
  assertEquals(failed.status.error, "Feed answered HTTP 500");
  assertEquals(failed.status.count, 2, "the count of the indicators still enforced");
  assertEquals((await hit(s, "/", { ip: "203.0.113.9" })).status, 403, "previous indicators kept");
  const listed = await (await api("GET", "/api/threat-intel/feeds", undefined, "read:threat_intel"))
    .json();
  assertEquals(listed.items[0].status.last_result, "error");

  const audit = s.db.prepare(
    "SELECT result FROM audit_log WHERE action = 'threat_intel.feed.sync' ORDER BY id",
  ).all();
  assertEquals(audit.map((r) => r.result), ["success", "failure"]);
});

Deno.test("CSV and JSON feeds, an uploaded list, challenge and log actions, and lookup by feed", async () => {
  await using feeds = feedServer({
    "/list.csv": "seen,address,score\n2026-01-01,192.0.2.10,90\n2026-01-02,192.0.2.11,80\n",
    "/list.json": JSON.stringify([{ ip: "192.0.2.20" }, { ip: "192.0.2.10" }]),
  });
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const make = async (body: unknown) => {
    const feed = await (await api("POST", "/api/threat-intel/feeds", body)).json();
    await api("POST", `/api/threat-intel/feeds/${feed.id}/sync`);
    return feed.id as string;
  };
  const csv = await make({
    name: "csv",
    url: `${feeds.url}/list.csv`,
    format: { kind: "csv", column: "address" },
    action: "challenge",
  });
  const json = await make({
    name: "json",
    url: `${feeds.url}/list.json`,
    format: { kind: "json", field: "ip" },
    action: "log",
  });
  const upload = await make({ name: "mine", content: "192.0.2.30\n", action: "block" });

  const challenged = await hit(s, "/", { ip: "192.0.2.11" });
  assertEquals([challenged.status, challenged.action], [403, "challenge"]);
  const logged = await hit(s, "/", { ip: "192.0.2.20" });
  assertEquals(logged.status, 200);
  ok(steps(logged).includes(`threat_intel:log:${json}`));
  assertEquals((await hit(s, "/", { ip: "192.0.2.30" })).status, 403);

  const lookup =
    await (await api("POST", "/api/threat-intel/lookup", { ip: "192.0.2.10" }, "read:threat_intel"))
      .json();
  assertEquals(lookup.listed, true);
  assertEquals(lookup.feeds.map((f: { id: string }) => f.id).sort(), [csv, json].sort());
  const clean = await (await api("POST", "/api/threat-intel/lookup", { ip: "10.1.1.1" })).json();
  assertEquals([clean.listed, clean.feeds], [false, []]);
  assertEquals((await api("POST", "/api/threat-intel/lookup", { ip: "nope" })).status, 400);
  assertEquals((await api("DELETE", `/api/threat-intel/feeds/${upload}`)).status, 204);
  assertEquals(
    (await hit(s, "/", { ip: "192.0.2.30" })).status,
    200,
    "a deleted feed stops blocking",
  );
  assertEquals(
    (await api("GET", "/api/threat-intel/feeds", undefined, "read:protection")).status,
    403,
  );
});

Deno.test("the scheduler syncs a feed again once its refresh interval has passed", async () => {
  await using feeds = feedServer({ "/a.txt": "192.0.2.40\n" });
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const feed = await (await api("POST", "/api/threat-intel/feeds", {
    name: "a",
    url: `${feeds.url}/a.txt`,
    refresh_minutes: 5,
  })).json();
  await api("POST", `/api/threat-intel/feeds/${feed.id}/sync`);
  feeds.bodies["/a.txt"] = "192.0.2.41\n";
  await s.dataPlane.protection.feeds.tick();
  assertEquals((await hit(s, "/", { ip: "192.0.2.41" })).status, 200, "not due yet");
  s.clock.advance(5 * 60_000);
  await s.dataPlane.protection.feeds.tick();
  assertEquals((await hit(s, "/", { ip: "192.0.2.41" })).status, 403);
  assertEquals((await hit(s, "/", { ip: "192.0.2.40" })).status, 200);
});
