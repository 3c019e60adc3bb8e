/**
 * The store's scheduled maintenance on the production profile, against the real PostgreSQL
 * (each test in a schema of its own, dropped after): the check counts every management table,
 * the backup is a `pg_dump` that `pg_restore` reads back, rotated to `keep` copies, with the
 * DSN's password in no error; and the deployment access log's retention by age and by count.
 */
import postgres from "postgres";
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { hasPostgres, ignoreWithout, postgresDsn, runs } from "../../_helpers/services.ts";
import { testSchemaName } from "../../_helpers/store.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { openPgStore } from "../../../db/pg/pg_database.ts";
import { SCHEMA_VERSION } from "../../../db/migrations.ts";
import {
  analyzePgStore,
  checkPgStore,
  pgDumpBackup,
  splitPassword,
} from "../../../mod/ops/pg_maintenance.ts";
import type { ProductionStoreOptions } from "../../../mod/config/production.ts";
import {
  DEPLOYMENT_LOG_TABLE,
  ensureDeploymentLog,
  pruneDeploymentLog,
} from "../../../db/access_log_pg.ts";

const available = await hasPostgres();
const hasPgDump = await runs("pg_dump").catch(() => false);

function options(schema: string, dsn = postgresDsn(available)): ProductionStoreOptions {
  return { dsn, schema, poolSize: 1, connectTimeoutMs: 2_000, statementTimeoutMs: 5_000 };
}

/** A production store made in a fresh schema (the migrations run), dropped after `fn`. */
async function withStore(fn: (pg: ProductionStoreOptions) => Promise<void>): Promise<void> {
  const schema = testSchemaName();
  const pg = options(schema);
  const db = openPgStore({ ...pg, controllerId: "c-test", now: 1_000 });
  db.prepare("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)").run("k", "v", 1);
  db.close();
  try {
    await fn(pg);
  } finally {
    const sql = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}

Deno.test("splitPassword takes the password out of a URI and its query", () => {
  assertEquals(splitPassword("postgres://waf:s%3Acret@db:5432/waf?sslmode=require"), {
    uri: "postgres://waf@db:5432/waf?sslmode=require",
    password: "s:cret",
  });
  assertEquals(splitPassword("postgres://waf@db/waf?password=pw&x=1"), {
    uri: "postgres://waf@db/waf?x=1",
    password: "pw",
  });
  assertEquals(splitPassword("host=db user=waf"), { uri: "host=db user=waf", password: undefined });
});

Deno.test({
  name: "the production check counts every management table at the build's schema version",
  ignore: ignoreWithout(available),
  fn: () =>
    withStore(async (pg) => {
      const r = await checkPgStore(pg);
      assertEquals(r.schema_version, SCHEMA_VERSION);
      const settings = r.tables.find((t) => t.table === "settings");
      ok(settings && settings.rows >= 1, JSON.stringify(settings));
      ok(r.tables.some((t) => t.table === "users"));
      ok(!r.tables.some((t) => t.table === "access_logs"), "the local access log is not counted");
      assertEquals((await analyzePgStore(pg)).analyzed, r.tables.length);
    }),
});

Deno.test({
  name: "the production backup is a checked pg_dump, 0600, rotated to keep copies",
  ignore: ignoreWithout(available && hasPgDump),
  fn: () =>
    withStore(async (pg) => {
      await using dir = await tempDir();
      const folder = `${dir}/backups`;
      // Trust authentication takes any password: it must reach pg_dump through PGPASSWORD.
      const withPassword = { ...pg, dsn: pg.dsn.replace("://", "://postgres:s3cret-pw@") };
      const first = await pgDumpBackup(withPassword, folder, 2, Date.UTC(2026, 0, 1, 2));
      assertMatch(first.path, /\/waf-20260101-020000\.dump$/);
      ok(first.bytes > 0);
      assertEquals((await Deno.stat(first.path)).mode! & 0o777, 0o600);
      const list = await new Deno.Command("pg_restore", { args: ["--list", first.path] }).output();
      ok(new TextDecoder().decode(list.stdout).includes("TABLE DATA"), "the dump holds data");
      const same = await pgDumpBackup(pg, folder, 2, Date.UTC(2026, 0, 1, 2));
      assertMatch(same.path, /-1\.dump$/, "an existing name is never overwritten");
      const third = await pgDumpBackup(pg, folder, 2, Date.UTC(2026, 0, 2, 2));
      assertEquals(third.removed, ["waf-20260101-020000.dump"]);
      const names = [];
      for await (const e of Deno.readDir(folder)) names.push(e.name);
      assertEquals(names.sort(), ["waf-20260101-020000-1.dump", "waf-20260102-020000.dump"]);
    }),
});

Deno.test({
  name: "a failing pg_dump names the failure without the DSN's password and leaves no file",
  ignore: ignoreWithout(hasPgDump),
  async fn() {
    await using dir = await tempDir();
    const pg = options("public", "postgres://waf:hunter2-secret@127.0.0.1:1/waf");
    let message = "";
    try {
      await pgDumpBackup(pg, `${dir}`, 3, 0);
    } catch (err) {
      message = (err as Error).message;
    }
    assertMatch(message, /^pg_dump failed \(exit \d+\)/);
    ok(!message.includes("hunter2"), message);
    const left = [];
    for await (const e of Deno.readDir(`${dir}`)) left.push(e.name);
    assertEquals(left, []);
  },
});

Deno.test("a host without pg_dump gets a clear error naming the client tools", async () => {
  await using dir = await tempDir();
  let message = "";
  try {
    await pgDumpBackup(options("public", "postgres://waf@127.0.0.1:1/waf"), `${dir}`, 3, 0, {
      pgDump: "/nonexistent/pg_dump",
    });
  } catch (err) {
    message = (err as Error).message;
  }
  assertMatch(message, /"\/nonexistent\/pg_dump" was not found: install the PostgreSQL client/);
});

Deno.test({
  name: "the deployment access log's retention deletes by age, then all but the newest keep",
  ignore: ignoreWithout(available),
  async fn() {
    const schema = testSchemaName();
    const sql = postgres(postgresDsn(available), {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      await ensureDeploymentLog(sql, schema);
      const rows = Array.from({ length: 23 }, (_, i) => ({
        controller_id: i % 2 ? "a" : "b",
        trace_id: `t${i}`,
        time: 1_000 + i,
        action: "pass",
        search_text: "",
        record: "{}",
      }));
      await sql`INSERT INTO ${sql(DEPLOYMENT_LOG_TABLE)} ${sql(rows)}`;
      // Slices of 4: several statements for each pass.
      assertEquals(await pruneDeploymentLog(sql, 1_010, Number.MAX_SAFE_INTEGER, 4), 10);
      assertEquals(await pruneDeploymentLog(sql, 0, 5, 4), 8);
      const left = await sql`SELECT trace_id FROM ${sql(DEPLOYMENT_LOG_TABLE)} ORDER BY id`;
      assertEquals(left.map((r) => r["trace_id"]), ["t18", "t19", "t20", "t21", "t22"]);
      assertEquals(await pruneDeploymentLog(sql, 0, 5, 4), 0);
    } finally {
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    }
  },
});
