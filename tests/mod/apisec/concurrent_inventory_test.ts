/**
 * Two controllers' inventories in two processes writing one store at the same time: each flushes
 * a hundred times, and every stored endpoint holds both controllers' counts in full (no write
 * lost to another that read the row before it was written).
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { WRITER_ENDPOINTS } from "../../_helpers/inventory_writer.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";
import { testSchemaName } from "../../_helpers/store.ts";
import { openPgStore } from "../../../db/pg/pg_database.ts";
import { type Db, openStore } from "../../../db/store.ts";

const available = await hasPostgres();
const ROUNDS = 100;
const WRITER = new URL("../../_helpers/inventory_writer.ts", import.meta.url).pathname;

/** Runs a writer per method on the store `target` names, all at once; their `failed` counts. */
async function writeAtOnce(target: readonly string[], methods: readonly string[]) {
  const outs = await Promise.all(methods.map((m) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", WRITER, ...target, m, String(ROUNDS)],
      stdout: "piped",
      stderr: "piped",
    }).output()
  ));
  return outs.map((o) => {
    const text = new TextDecoder().decode(o.stdout);
    if (!o.success) throw new Error(`a writer failed: ${new TextDecoder().decode(o.stderr)}`);
    return (JSON.parse(text) as { failed: number }).failed;
  });
}

function assertAddedUp(db: Db): void {
  const rows = db.prepare("SELECT template, data FROM apisec_endpoints ORDER BY template")
    .all() as { template: string; data: string }[];
  assertEquals(rows.length, WRITER_ENDPOINTS);
  for (const r of rows) {
    const d = JSON.parse(r.data) as { hits: number; methods: Record<string, number> };
    assertEquals([r.template, d.hits, d.methods], [r.template, 2 * ROUNDS, {
      GET: ROUNDS,
      POST: ROUNDS,
    }]);
  }
}

Deno.test("two processes flushing one SQLite store's inventory at once add up", async () => {
  const dir = await Deno.makeTempDir({ prefix: "waf-inventory-" });
  try {
    openStore(`${dir}/waf.db`, { now: Date.UTC(2026, 0, 1) }).close(); // migrated before the writers start
    await writeAtOnce(["sqlite", `${dir}/waf.db`], ["GET", "POST"]);
    const db = openStore(`${dir}/waf.db`, { now: Date.UTC(2026, 0, 1) });
    try {
      assertAddedUp(db);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "two controllers flushing one PostgreSQL store's inventory at once add up (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const dsn = postgresDsn(available);
    const schema = testSchemaName();
    const open = () =>
      openPgStore({
        dsn,
        schema,
        connectTimeoutMs: 5_000,
        statementTimeoutMs: 10_000,
        controllerId: "check",
        now: Date.UTC(2026, 0, 1),
      });
    const db = open();
    try {
      await writeAtOnce(["postgresql", dsn, schema], ["GET", "POST"]);
      assertAddedUp(db as unknown as Db);
    } finally {
      db.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      db.close();
    }
  },
});
