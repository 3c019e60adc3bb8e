/**
 * The PostgreSQL store's own semantics against the real database (each test in a schema of its
 * own, dropped after): SQLite's statement-level failure inside a transaction, the write lock,
 * change notices sent only when a commit is, the row id of an insert, a schema too new refused,
 * and an unreachable database failing fast with STORE_UNAVAILABLE and recovering by itself.
 * The repositories' behaviour on both engines is tests/db/store_contract_test.ts.
 */
import postgres from "postgres";
import { assertEquals, assertMatch, ok as assert } from "../_helpers/assert.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { testSchemaName } from "../_helpers/store.ts";
import { startRelayThread } from "../_helpers/tcp_relay_thread.ts";
import { openPgStore, PgDatabase, StoreUnavailableError } from "../../db/pg/pg_database.ts";
import { translateMigration, translateStatement } from "../../db/pg/dialect.ts";
import { NO_CHANGE_NOTICE, SchemaTooNewError, transaction } from "../../db/store.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "../../db/migrations.ts";

const available = await hasPostgres();

/** The error `fn` throws, checked to be a `cls` whose message includes `includes`. */
function throws<E extends Error>(
  fn: () => unknown,
  cls: new (...a: never[]) => E = Error as never,
  includes = "",
): E {
  try {
    fn();
  } catch (err) {
    assert(err instanceof cls, `expected a ${cls.name}, got ${err}`);
    assert(
      (err as Error).message.includes(includes),
      `"${(err as Error).message}" lacks "${includes}"`,
    );
    return err as E;
  }
  throw new Error("expected an error");
}

function open(schema: string, dsn = postgresDsn(available), id = "c-test") {
  return openPgStore({
    dsn,
    schema,
    connectTimeoutMs: 2_000,
    statementTimeoutMs: 5_000,
    controllerId: id,
    now: 1_000,
  });
}

async function withSchema(fn: (schema: string) => Promise<void> | void): Promise<void> {
  const schema = testSchemaName();
  try {
    await fn(schema);
  } finally {
    const sql = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}

Deno.test("statements are translated once into PostgreSQL's dialect", () => {
  const t = translateStatement(
    "INSERT OR IGNORE INTO notification_reads (notification_id, reader, read_at) VALUES (?, ?, ?)",
  );
  assertEquals(
    t.text,
    "INSERT INTO notification_reads (notification_id, reader, read_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
  );
  assertEquals(t.writes, "notification_reads");
  assertEquals(t.returnsRowid, false, "a WITHOUT ROWID table answers no row id");
  const named = translateStatement(
    "SELECT * FROM audit_log WHERE (:from IS NULL OR time >= :from) AND action LIKE 'a?%' LIMIT :limit",
  );
  assertEquals(
    named.text,
    "SELECT * FROM audit_log WHERE (time >= $1 OR $1 IS NULL) AND action ILIKE 'a?%' LIMIT $2",
  );
  assertEquals(named.names, ["from", "limit"]);
  assertEquals(
    translateStatement(
      "SELECT COALESCE(json_extract(config, '$.target.client_ip'), MAX(a, ?)) AS x",
    )
      .text,
    "SELECT COALESCE(((config)::jsonb #>> '{target,client_ip}'), GREATEST(a, $1)) AS x",
  );
  assertEquals(
    translateStatement("INSERT INTO audit_log (time) VALUES (?)").text,
    "INSERT INTO audit_log (time) VALUES ($1) RETURNING id AS rowid__",
  );
  throws(() => translateStatement("INSERT OR REPLACE INTO t VALUES (1)"), Error, "ON CONFLICT");
  // Every migration translates; the append-only trigger becomes a PL/pgSQL function.
  const sql = MIGRATIONS.map((m) => translateMigration(m.sql)).join("\n");
  assertMatch(sql, /CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW/);
  assert(!/\bINTEGER\b|WITHOUT ROWID|AUTOINCREMENT/.test(sql));
});

Deno.test({
  name: "a failed statement inside a transaction fails alone, as on SQLite; the row id is answered",
  ignore: ignoreWithout(available),
  fn: () =>
    withSchema((schema) => {
      const db = open(schema);
      try {
        assertEquals(db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get(), {
          v: SCHEMA_VERSION,
        });
        transaction(db, () => {
          db.prepare("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)").run(
            "a",
            "1",
            1,
          );
          throws(
            () =>
              db.prepare("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)").run(
                "a",
                "2",
                2,
              ),
            Error,
            "duplicate key",
          );
          db.prepare("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)").run(
            "b",
            "3",
            3,
          );
        });
        assertEquals(db.prepare("SELECT key, value FROM settings ORDER BY key").all(), [
          { key: "a", value: "1" },
          { key: "b", value: "3" },
        ]);
        throws(() =>
          transaction(db, () => {
            db.prepare("UPDATE settings SET value = 'x'").run();
            throw new Error("rolled back");
          })
        );
        assertEquals(db.prepare("SELECT value FROM settings WHERE key = 'a'").get(), {
          value: "1",
        });
        const first = db.prepare(
          "INSERT INTO audit_log (time, actor_type, action, result) VALUES (?, 'system', 'x', 'success')",
        ).run(5);
        const second = db.prepare(
          "INSERT INTO audit_log (time, actor_type, action, result) VALUES (?, 'system', 'y', 'success')",
        ).run(6);
        assertEquals([
          first.changes,
          Number(second.lastInsertRowid) - Number(first.lastInsertRowid),
        ], [1, 1]);
        throws(() => db.prepare("DELETE FROM audit_log").run(), Error, "append-only");
        // Booleans and counts read back as SQLite answers them: numbers.
        assertEquals(db.prepare("SELECT COUNT(*) AS n, 1 = 1 AS yes FROM audit_log").get(), {
          n: 2,
          yes: 1,
        });
      } finally {
        db.close();
      }
    }),
});

Deno.test({
  name:
    "a commit tells the other controllers which tables it wrote, and in which schema; a rollback tells nothing",
  ignore: ignoreWithout(available),
  fn: () =>
    withSchema(async (schema) => {
      const db = open(schema, undefined, "controller-a");
      const listener = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
      const heard: { controller: string; schema: string; tables: string[] }[] = [];
      try {
        // Only this schema's notices: other tests' deployments share the database's channel.
        await listener.listen("waf_store_changes", (p) => {
          const n = JSON.parse(p);
          if (n.schema === schema) heard.push(n);
        });
        throws(() =>
          transaction(db, () => {
            db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('r', '1', 1)").run();
            throw new Error("no");
          })
        );
        transaction(db, () => {
          db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('k', '1', 1)").run();
          db.prepare(
            "INSERT INTO audit_log (time, actor_type, action, result) VALUES (1, 'system', 'x', 'success')",
          ).run();
        });
        // Writes marked as state no other controller reacts to are told of by no notice.
        db.prepare(
          `${NO_CHANGE_NOTICE} INSERT INTO settings (key, value, updated_at) VALUES ('q', '1', 1)`,
        )
          .run();
        transaction(db, () => {
          db.prepare(`${NO_CHANGE_NOTICE} DELETE FROM settings WHERE key = 'q'`).run();
        });
        db.prepare("DELETE FROM settings WHERE key = 'k'").run();
        const until = Date.now() + 3_000;
        while (heard.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 100));
        assertEquals(heard, [
          { controller: "controller-a", schema, tables: ["settings", "audit_log"] },
          { controller: "controller-a", schema, tables: ["settings"] },
        ]);
        assertEquals(db.prepare("SELECT COUNT(*) AS n FROM settings WHERE key = 'q'").get(), {
          n: 0,
        });
      } finally {
        db.close();
        await listener.end();
      }
    }),
});

Deno.test({
  name: "a store whose schema is newer than this binary is refused, naming both versions",
  ignore: ignoreWithout(available),
  fn: () =>
    withSchema((schema) => {
      const db = open(schema);
      db.prepare(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)",
      )
        .run(SCHEMA_VERSION + 1);
      db.close();
      const err = throws(() => open(schema), SchemaTooNewError);
      assertMatch(
        err.message,
        new RegExp(`version ${SCHEMA_VERSION + 1} .*version ${SCHEMA_VERSION}`),
      );
    }),
});

Deno.test({
  name: "with the database cut off calls fail fast with STORE_UNAVAILABLE and resume by themselves",
  ignore: ignoreWithout(available),
  fn: () =>
    withSchema(async (schema) => {
      await using relay = await startRelayThread({ hostname: "127.0.0.1", port: 5432 });
      const db = open(schema, `postgres://postgres@127.0.0.1:${relay.port}/test`);
      try {
        db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('k', '1', 1)").run();
        await relay.set("refuse");
        const err = throws(
          () => db.prepare("SELECT value FROM settings").get(),
          StoreUnavailableError,
        );
        assertEquals(err.code, "STORE_UNAVAILABLE");
        assert(db.unavailable);
        // Fails at once now, without waiting for a connection.
        const started = performance.now();
        throws(() => db.prepare("SELECT 1 AS one").get(), StoreUnavailableError);
        assert(performance.now() - started < 1_000);
        await relay.set("up");
        const until = Date.now() + 10_000;
        while (db.unavailable && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
        assertEquals(db.prepare("SELECT value FROM settings WHERE key = 'k'").get(), {
          value: "1",
        });
      } finally {
        db.close();
      }
    }),
});

Deno.test({
  name:
    "after an outage long enough to grow the driver's reconnect delay, the store is back within 2 s of the database",
  ignore: ignoreWithout(available),
  fn: () =>
    withSchema(async (schema) => {
      await using relay = await startRelayThread({ hostname: "127.0.0.1", port: 5432 });
      const db = open(schema, `postgres://postgres@127.0.0.1:${relay.port}/test`);
      try {
        await relay.set("refuse");
        throws(() => db.prepare("SELECT 1 AS one").get(), StoreUnavailableError);
        // Eight failed probes: the driver's default delay would be 6 to 20 s by now.
        const cut = performance.now();
        while (performance.now() - cut < 8_000) await new Promise((r) => setTimeout(r, 200));
        await relay.set("up");
        const back = performance.now();
        while (db.unavailable && performance.now() - back < 10_000) {
          await new Promise((r) => setTimeout(r, 50));
        }
        const took = performance.now() - back;
        assert(took < 2_000, `back after ${Math.round(took)} ms`);
        assertEquals(db.prepare("SELECT 1 AS one").get(), { one: 1 });
      } finally {
        db.close();
      }
    }),
});

Deno.test("PgDatabase is the store interface", () => {
  // A type-level check that the facade satisfies what the repositories take.
  const take = (_: import("../../db/store.ts").Db) => {};
  take({} as PgDatabase);
});

Deno.test({
  name:
    "a controller killed in the middle of a transaction leaves no half-applied change, and no lock held",
  ignore: ignoreWithout(available),
  fn: () =>
    withSchema(async (schema) => {
      open(schema).close(); // the schema and its tables
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../_helpers/killed_writer.ts", import.meta.url).pathname,
          postgresDsn(available),
          schema,
        ],
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let out = "";
      while (!out.includes("written")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the writer ended before writing: ${out}`);
        out += value;
      }
      child.kill("SIGKILL");
      await child.status;
      reader.releaseLock();
      const db = open(schema, undefined, "survivor");
      try {
        // The write lock the dead transaction held is gone with its connection: this one takes it.
        transaction(db, () => {
          db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('after', '1', 1)")
            .run();
        });
        assertEquals(
          db.prepare("SELECT key FROM settings WHERE key LIKE 'half.%' OR key = 'after'").all(),
          [{ key: "after" }],
        );
      } finally {
        db.close();
      }
    }),
});
