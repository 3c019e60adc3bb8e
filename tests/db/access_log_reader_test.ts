/**
 * The access-log reader's contract, one suite run against both engines: this controller's
 * SQLite table (a real file) and the production database's deployment-wide table (the real
 * PostgreSQL at 127.0.0.1:5432, database `test`, a schema of each test's own, dropped after).
 * Both hold the same records (shipped the way a controller ships them: read back from the local
 * store, then inserted), and every case asserts the same answers. Without PostgreSQL the
 * PostgreSQL cases are ignored, except under CI (`CI` or `WAF_REQUIRE_SERVICES=1`).
 */
import postgres from "postgres";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { record } from "../_helpers/records.ts";
import { hasPostgres, postgresDsn, REQUIRE_SERVICES } from "../_helpers/services.ts";
import { testStore } from "../_helpers/store.ts";
import { createAccessLogRepo } from "../../db/access_log_repo.ts";
import { createAccessLogQueryRepo } from "../../db/access_log_queries.ts";
import { type AccessLogReader, sqliteAccessLogReader } from "../../db/access_log_reader.ts";
import { createDeploymentLogSink, openDeploymentPool } from "../../db/access_log_pg.ts";
import { createPgAccessLogReader } from "../../db/access_log_pg_queries.ts";
import { createSitesRepo } from "../../db/sites_repo.ts";
import { lineFormat } from "../../mod/access_log/lines.ts";
import { type AccessRecord, toRow } from "../../mod/access_log/record.ts";

const pg = await hasPostgres();
const pgIgnored = !pg && !REQUIRE_SERVICES && Deno.env.get("CI") === undefined;

const T = Date.UTC(2026, 0, 1);
const SITE = { check: "site", result: "match", us: 1 };
const finding = (cls: string) => ({
  class: cls,
  confidence: "high",
  score: 85,
  location: "query:q",
  evidence: "zz-evidence-only",
  rule: `${cls}.rule`,
});

/** The records both engines hold, oldest first. */
function fixtures(): AccessRecord[] {
  return [
    record({ trace_id: "a".repeat(32), time: T, client_ip: "192.0.2.1" }),
    record({
      trace_id: "b".repeat(32),
      time: T + 1_000,
      action: "block",
      status: 403,
      path: "/search",
      query: "q=1%20UNION%20select",
      client_ip: "203.0.113.9",
      finding: finding("sqli"),
      chain: [SITE, { check: "engine", result: "block", us: 40 }],
    }),
    record({
      trace_id: "c".repeat(32),
      time: T + 2_000,
      action: "block",
      status: 403,
      client_ip: "198.51.100.7",
      chain: [SITE, { check: "ip_list", result: "block", us: 1, rule: "ip_1" }],
    }),
    record({
      trace_id: "d".repeat(32),
      time: T + 3_000,
      action: "challenge",
      client_ip: "198.51.100.7",
      chain: [SITE, { check: "bot", result: "challenge:all", us: 1 }],
    }),
    record({
      trace_id: "e".repeat(32),
      time: T + 4_000,
      action: "log",
      path: "/c%3Cscript%3E",
      client_ip: "203.0.113.9",
      finding: finding("xss"),
      chain: [SITE, { check: "engine", result: "log", us: 30 }],
    }),
    record({
      trace_id: "f".repeat(32),
      time: T + 5_000,
      action: "block",
      status: 429,
      site_id: "s2",
      site: "blog",
      client_ip: "203.0.113.9",
      chain: [SITE, { check: "rate_limit", result: "limited", us: 1 }],
    }),
    record({
      trace_id: "0".repeat(31) + "1",
      time: T + 6_000,
      site_id: "s2",
      site: "blog",
      host: "API.shop.test",
      path: "/v1/Orders",
      query: "a=b+c&name=%C3%BCnic",
      user_agent: "sqlmap/1.7 \u0000nul",
      client_ip: "192.0.2.11",
    }),
  ];
}

interface Engine extends AsyncDisposable {
  readonly reader: AccessLogReader;
}

/** A SQLite store holding the fixtures and the sites `shop` (s1) and `blog` (s2). */
async function localStore(searchScan?: number) {
  const store = await testStore();
  const sites = createSitesRepo(store.db);
  for (const [id, name] of [["s1", "shop"], ["s2", "blog"]]) {
    sites.insert({ id: id!, name: name!, config: "{}", created_at: T, updated_at: T });
  }
  const repo = createAccessLogRepo(store.db, lineFormat);
  repo.insertBatch(fixtures().map(toRow));
  const queries = createAccessLogQueryRepo(store.db, lineFormat, { searchScan });
  const siteIds = (name: string) => {
    const id = sites.getByName(name)?.id;
    return id === undefined ? [] : [id];
  };
  return { store, repo, queries, siteIds };
}

async function sqliteEngine(searchScan?: number): Promise<Engine> {
  const { store, queries } = await localStore(searchScan);
  return {
    reader: sqliteAccessLogReader(queries),
    [Symbol.asyncDispose]: () => store[Symbol.asyncDispose](),
  };
}

/** A schema of the test's own holding what the local store ships; dropped on dispose. */
async function pgEngine(searchScan?: number): Promise<Engine> {
  const dsn = postgresDsn(pg || REQUIRE_SERVICES || Deno.env.get("CI") !== undefined);
  const { store, repo, siteIds } = await localStore();
  const schema = `alog_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const options = { dsn, poolSize: 2, schema, name: "waf-test" };
  const sink = createDeploymentLogSink({ ...options, controllerId: "ctl-a" });
  await sink.ensureTable();
  await sink.insert(repo.readAfter(0, 1_000).rows);
  await sink.close();
  const sql = openDeploymentPool(options);
  return {
    reader: createPgAccessLogReader(sql, { siteIds, searchScan }),
    async [Symbol.asyncDispose]() {
      await sql.end({ timeout: 2 });
      const admin = postgres(dsn, { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
      await store[Symbol.asyncDispose]();
    },
  };
}

const traces = (rows: readonly { trace_id: string }[]) => rows.map((r) => r.trace_id[0]);

type Case = (reader: AccessLogReader, open: (scan?: number) => Promise<Engine>) => Promise<void>;

const CASES: Record<string, Case> = {
  "pages newest first and goes on below the cursor": async (r) => {
    const first = await r.page({ limit: 3 });
    assertEquals(traces(first.rows), ["0", "f", "e"]);
    assertEquals(first.searchedTo, null);
    const next = await r.page({ limit: 3, beforeId: first.rows[2]!.id });
    assertEquals(traces(next.rows), ["d", "c", "b"]);
    const last = await r.page({ limit: 3, beforeId: next.rows[2]!.id });
    assertEquals(traces(last.rows), ["a"]);
  },
  "filters by action, rate limit, class, status, address, site, trace id and time": async (r) => {
    const t = async (f: Parameters<AccessLogReader["page"]>[0]) => traces((await r.page(f)).rows);
    assertEquals(await t({ limit: 50, actions: ["block", "challenge", "log"] }), [
      "f",
      "e",
      "d",
      "c",
      "b",
    ]);
    assertEquals(await t({ limit: 50, action: "challenge" }), ["d"]);
    assertEquals(await t({ limit: 50, rateLimited: true }), ["f"]);
    assertEquals(await t({ limit: 50, actions: ["challenge"], rateLimited: true }), ["f", "d"]);
    assertEquals(await t({ limit: 50, attackClass: "sqli" }), ["b"]);
    assertEquals(await t({ limit: 50, attackClass: "ip_list" }), ["c"]);
    assertEquals(await t({ limit: 50, attackClass: "xss" }), ["e"]);
    assertEquals(await t({ limit: 50, attackClass: "rate_limit" }), ["f"]);
    assertEquals(await t({ limit: 50, status: 403 }), ["c", "b"]);
    assertEquals(await t({ limit: 50, clientIp: "198.51.100.7" }), ["d", "c"]);
    assertEquals(await t({ limit: 50, siteId: "blog" }), ["0", "f"]);
    assertEquals(await t({ limit: 50, siteId: "s2" }), ["0", "f"]);
    assertEquals(await t({ limit: 50, siteId: "nowhere" }), []);
    assertEquals(await t({ limit: 50, traceId: "c".repeat(32) }), ["c"]);
    assertEquals(await t({ limit: 50, from: T + 2_000, to: T + 4_000 }), ["e", "d", "c"]);
  },
  "searches path, decoded query, user agent, host and address, case-insensitively": async (r) => {
    const s = async (search: string) => traces((await r.page({ limit: 50, search })).rows);
    assertEquals(await s("union select"), ["b"]);
    assertEquals(await s("<SCRIPT>"), ["e"]);
    assertEquals(await s("b c"), ["0"]);
    assertEquals(await s("ünic"), ["0"]);
    assertEquals(await s("SQLMAP"), ["0"]);
    assertEquals(await s("api.shop"), ["0"]);
    assertEquals(await s("/v1/orders"), ["0"]);
    assertEquals(await s("203.0.113"), ["f", "e", "b"]);
    assertEquals(await s("zz-evidence-only"), []);
    // A term never spans two texts: the path's end and the host's start.
    assertEquals(await s("search\nshop"), []);
  },
  "a search reads a bounded number of rows a page and says where it stopped": async (_r, open) => {
    await using small = await open(3);
    const first = await small.reader.page({ limit: 10, search: "203.0.113" });
    assertEquals(traces(first.rows), ["f", "e"]);
    ok(first.searchedTo !== null, "the search stopped at its bound");
    const next = await small.reader.page({
      limit: 10,
      search: "203.0.113",
      beforeId: first.searchedTo!,
    });
    assertEquals(traces(next.rows), ["b"]);
    ok(next.searchedTo !== null, "the oldest record is below this bound");
    const last = await small.reader.page({
      limit: 10,
      search: "203.0.113",
      beforeId: next.searchedTo!,
    });
    assertEquals([traces(last.rows), last.searchedTo], [[], null]);
  },
  "finds one record whole by trace id": async (r) => {
    const row = await r.get("b".repeat(32));
    ok(row !== undefined);
    assertEquals(row.time, T + 1_000);
    assertEquals(JSON.parse(row.record), JSON.parse(toRow(fixtures()[1]!).record));
    const nul = await r.get("0".repeat(31) + "1");
    assertEquals(JSON.parse(nul!.record).user_agent, "sqlmap/1.7 \u0000nul");
    assertEquals(await r.get("9".repeat(32)), undefined);
  },
  "counts a period per action and class": async (r) => {
    assertEquals(await r.counts({ from: T, to: T + 10_000 }), {
      byAction: { pass: 2, block: 3, challenge: 1, log: 1 },
      byClass: { sqli: 1, xss: 1 },
    });
    assertEquals(await r.counts({ from: T, to: T + 10_000, site: "blog" }), {
      byAction: { pass: 1, block: 1 },
      byClass: {},
    });
  },
  "ranks the most hostile addresses and paths": async (r) => {
    const period = { from: T, to: T + 10_000 };
    assertEquals(await r.top("client_ip", period, 2), [
      {
        key: "203.0.113.9",
        requests: 3,
        blocked: 2,
        classes: "sqli,xss",
        first_seen: T + 1_000,
        last_seen: T + 5_000,
      },
      {
        key: "198.51.100.7",
        requests: 2,
        blocked: 1,
        classes: null,
        first_seen: T + 2_000,
        last_seen: T + 3_000,
      },
    ]);
    const paths = await r.top("path", period, 10);
    assertEquals(paths.map((p) => [p.key, p.requests]), [
      ["/", 3],
      ["/c%3Cscript%3E", 1],
      ["/search", 1],
    ]);
  },
  "summarises a range in buckets with ranked lists": async (r) => {
    const s = await r.summary(T, T + 6_000, 2_000, 2);
    assertEquals(s.buckets.map((x) => ({ ...x })).sort((x, y) => x.b - y.b), [
      { b: 0, requests: 2, blocked: 1, challenged: 0, logged: 0 },
      { b: 1, requests: 2, blocked: 1, challenged: 1, logged: 0 },
      { b: 2, requests: 2, blocked: 1, challenged: 0, logged: 1 },
    ]);
    assertEquals(s.byClass, [{ key: "ip_list", count: 1 }, { key: "rate_limit", count: 1 }]);
    assertEquals(s.sites, [{ key: "s1", count: 4 }, { key: "s2", count: 1 }]);
    assertEquals(s.clients, [{ key: "203.0.113.9", count: 3 }, { key: "198.51.100.7", count: 2 }]);
    assertEquals(s.paths, [{ key: "/", count: 3 }, { key: "/c%3Cscript%3E", count: 1 }]);
  },
};

const ENGINES = [
  { name: "SQLite", open: sqliteEngine, ignore: false },
  { name: "PostgreSQL", open: pgEngine, ignore: pgIgnored },
];

for (const engine of ENGINES) {
  for (const [name, run] of Object.entries(CASES)) {
    Deno.test({
      name: `access-log reader (${engine.name}) ${name}${
        engine.name === "PostgreSQL" ? " (needs PostgreSQL)" : ""
      }`,
      ignore: engine.ignore,
      fn: async () => {
        await using e = await engine.open();
        await run(e.reader, engine.open);
      },
    });
  }
}

Deno.test({
  name: "access-log reader: both engines answer every query alike (needs PostgreSQL)",
  ignore: pgIgnored,
  fn: async () => {
    await using local = await sqliteEngine();
    await using deployment = await pgEngine();
    const period = { from: T, to: T + 10_000 };
    const ask = async (r: AccessLogReader) => ({
      page: (await r.page({ limit: 50 })).rows.map(({ id: _, ...row }) => row),
      search: traces((await r.page({ limit: 50, search: "c" })).rows),
      counts: await r.counts(period),
      top: [await r.top("client_ip", period, 10), await r.top("path", period, 10)],
      summary: await r.summary(T, T + 7_000, 1_000, 10),
    });
    // As the API serialises them (SQLite's rows have no prototype).
    const a = JSON.parse(JSON.stringify(await ask(local.reader)));
    const b = JSON.parse(JSON.stringify(await ask(deployment.reader)));
    // The columns cut nothing the records hold: compare the answers as the API shows them.
    const records = (x: typeof a) => x.page.map((r: { record: string }) => JSON.parse(r.record));
    assertEquals(records(b), records(a));
    assertEquals({ ...b, page: b.page.length }, { ...a, page: a.page.length });
  },
});
