/**
 * The production profile's access-log reads against this controller's own, in one run: the same
 * 100,000 records in a SQLite file (the local reader) and in the production database's
 * deployment-wide table (the PostgreSQL reader, a schema of the run's own, dropped after), and
 * the queries the attack log and the dashboard make, alternating the two readers each round.
 * Prints the median and p95 of each and the ratio PostgreSQL / SQLite.
 *
 * ```sh
 * deno task bench:access-log-pg [--rows 100000] [--rounds 30] [--only "attack-log"] \
 *   [--dsn postgres://postgres@127.0.0.1:5432/test]
 * ```
 */
import { parseArgs } from "node:util";
import { createAccessLogRepo } from "../db/access_log_repo.ts";
import { type AccessLogReader, sqliteAccessLogReader } from "../db/access_log_reader.ts";
import { createDeploymentLogSink, openDeploymentPool } from "../db/access_log_pg.ts";
import { createPgAccessLogReader } from "../db/access_log_pg_queries.ts";
import { openStore } from "../db/store.ts";
import { lineFormat } from "../mod/access_log/lines.ts";
import { type AccessRecord, toRow } from "../mod/access_log/record.ts";
import { benignRecord, loadAverage, median } from "./bench_kit.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "100000" },
    rounds: { type: "string", default: "30" },
    dsn: { type: "string", default: "postgres://postgres@127.0.0.1:5432/test" },
    /** Only the cases whose name contains this text. */
    only: { type: "string", default: "" },
  },
});
const ROWS = Number(values.rows);
const ROUNDS = Number(values.rounds);
const DSN = values.dsn!;
const DAY = 86_400_000;
const now = Date.now();

/** A tenth of the traffic blocked, challenged or logged; every fifth query percent-encoded. */
function recordAt(i: number): AccessRecord {
  const r = benignRecord(
    i.toString(16).padStart(32, "0"),
    now - DAY + Math.floor((i * DAY) / ROWS),
  );
  const client = `198.51.100.${i % 200}`;
  const query = i % 5 === 0 ? `q=red%20shoes%20${i % 97}` : `id=${i % 1000}&sort=price`;
  const base = { ...r, client_ip: client, query, path: `/products/${i % 500}` };
  if (i % 10 !== 0) return base as unknown as AccessRecord;
  const kind = (i / 10) % 4;
  const attack = {
    ...base,
    status: 403,
    action: kind === 2 ? "challenge" : kind === 3 ? "log" : "block",
    query: kind === 0 ? "id=1%27%20union%20select%20password--" : query,
    user_agent: kind === 1 ? "sqlmap/1.7" : r["user_agent"],
  };
  if (kind === 1) {
    return {
      ...attack,
      chain: [{ check: "site", result: "match", us: 3 }, {
        check: "ip_list",
        result: "block",
        us: 1,
        rule: "ip_1",
      }],
    } as unknown as AccessRecord;
  }
  return {
    ...attack,
    finding: {
      class: "sqli",
      confidence: "high",
      score: 90,
      location: "query:id",
      evidence: "1' union select",
      rule: "sqli.union",
    },
    findings: 1,
  } as unknown as AccessRecord;
}

const dir = await Deno.makeTempDir({ prefix: "waf-bench-alog-" });
const db = openStore(`${dir}/waf.db`, { now });
const repo = createAccessLogRepo(db, lineFormat);
const schema = `bench_alog_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
const options = { dsn: DSN, poolSize: 4, schema, name: "waf-bench" };
const sql = openDeploymentPool(options);
try {
  console.log(`load ${loadAverage()}; filling ${ROWS} rows in SQLite and PostgreSQL ...`);
  for (let i = 0; i < ROWS; i += 5_000) {
    const n = Math.min(5_000, ROWS - i);
    repo.insertBatch(Array.from({ length: n }, (_, k) => toRow(recordAt(i + k))));
  }
  // Shipped as a controller ships them: read back from the local store after a cursor.
  const sink = createDeploymentLogSink({ ...options, controllerId: "bench" });
  await sink.ensureTable();
  for (let after = 0;;) {
    const { rows } = repo.readAfter(after, 2_000);
    if (rows.length === 0) break;
    await sink.insert(rows);
    after = rows[rows.length - 1]!.id;
  }
  await sink.close();
  await sql.unsafe(`ANALYZE ${schema}.deployment_access_logs`);

  const readers: { name: string; reader: AccessLogReader }[] = [
    { name: "SQLite", reader: sqliteAccessLogReader(repo) },
    { name: "PostgreSQL", reader: createPgAccessLogReader(sql) },
  ];
  const cases: { name: string; run: (r: AccessLogReader) => Promise<unknown> }[] = [
    {
      name: "attack-log page (block,challenge,log; 51)",
      run: (r) => r.page({ actions: ["block", "challenge", "log"], limit: 51 }),
    },
    {
      name: "attack-log page 20 deep (cursor)",
      run: async (r) => {
        let before: number | undefined;
        for (let p = 0; p < 20; p++) {
          const { rows } = await r.page({
            actions: ["block", "challenge", "log"],
            limit: 51,
            beforeId: before,
          });
          before = rows[rows.length - 1]?.id;
        }
      },
    },
    {
      name: "search `union select` (page fills)",
      run: (r) => r.page({ search: "union select", limit: 51 }),
    },
    {
      name: "search matching nothing (reads 100k)",
      run: (r) => r.page({ search: "no such text anywhere", limit: 51 }),
    },
    { name: "class filter ip_list", run: (r) => r.page({ attackClass: "ip_list", limit: 51 }) },
    {
      name: "dashboard summary (24 h, 60 buckets)",
      run: (r) => r.summary(now - DAY, now + 1, DAY / 60, 10),
    },
    { name: "counts (24 h)", run: (r) => r.counts({ from: now - DAY, to: now }) },
  ];
  const results: string[] = [];
  for (const c of cases.filter((c) => c.name.includes(values.only!))) {
    const times = new Map<string, number[]>(readers.map((r) => [r.name, []]));
    for (const r of readers) for (let w = 0; w < 3; w++) await c.run(r.reader);
    for (let i = 0; i < ROUNDS; i++) {
      for (const r of i % 2 === 0 ? readers : [...readers].reverse()) {
        const t0 = performance.now();
        await c.run(r.reader);
        times.get(r.name)!.push(performance.now() - t0);
      }
    }
    const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)]!;
    const [s, p] = [times.get("SQLite")!, times.get("PostgreSQL")!];
    const line = `| ${c.name} | ${median(s).toFixed(1)} / ${p95(s).toFixed(1)} ms | ${
      median(p).toFixed(1)
    } / ${p95(p).toFixed(1)} ms | ${(median(p) / median(s)).toFixed(2)}x |`;
    console.log(line);
    results.push(line);
  }
  console.log(`\nload ${loadAverage()}\n`);
  console.log("| query | SQLite median / p95 | PostgreSQL median / p95 | PG / SQLite |");
  console.log("| ----- | ------------------- | ----------------------- | ----------- |");
  for (const l of results) console.log(l);
} finally {
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
  await sql.end({ timeout: 2 });
  db.close();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
