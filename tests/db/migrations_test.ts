import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertThrows, ok } from "../_helpers/assert.ts";
import { tempDir } from "../_helpers/temp.ts";
import { ADDED_COLUMNS, MIGRATIONS, SCHEMA_VERSION } from "../../db/migrations.ts";
import { createNotificationsRepo } from "../../db/notifications_repo.ts";
import { openStore, SchemaTooNewError, schemaVersion } from "../../db/store.ts";

const NOW = Date.UTC(2026, 0, 1);
/** Breaks today's username rule: leading space, NBSP, zero-width space and upper case. */
const HISTORICAL_NAME = " Admin\u00a0\u200bé";

/** Inserts rows valid at schema `version` (each version's columns only). */
function seed(db: DatabaseSync, version: number): void {
  db.prepare(
    "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
  ).run("u1", HISTORICAL_NAME, "scrypt$x", "admin", NOW, NOW);
  db.prepare(
    "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
  ).run("u2", "alice", "scrypt$y", "readonly", NOW, NOW);
  db.prepare(
    "INSERT INTO admin_sessions (id_hash, user_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)",
  ).run("h1", "u1", NOW, NOW, NOW + 1000);
  db.prepare("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)").run(
    "setup",
    '{"complete":true}',
    NOW,
  );
  db.prepare(
    "INSERT INTO audit_log (time, actor_type, action, result) VALUES (?, 'system', 'seed', 'ok')",
  ).run(NOW);
  if (version >= 2) {
    db.prepare(
      "INSERT INTO api_tokens (id, secret_hash, note, permissions, created_by, created_at) VALUES ('t1', 'hash', 'ci', '[]', 'u1', ?)",
    ).run(NOW);
  }
  if (version >= 3) {
    db.prepare(
      "INSERT INTO sites (id, name, config, created_at, updated_at) VALUES ('s1', 'shop', '{}', ?, ?)",
    ).run(NOW, NOW);
  }
  if (version >= 4) {
    db.prepare(
      "INSERT INTO username_repairs (user_id, old_username, new_username, reason, os_user, revoked_sessions, time) VALUES ('u2', 'x y', 'alice', 'r', 'root', 0, ?)",
    ).run(NOW);
  }
}

function count(db: DatabaseSync, table: string): number {
  return (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
}

function indexNames(db: DatabaseSync, table: string): string[] {
  return db.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? ORDER BY name",
  )
    .all(table).map((r) => String(r.name)).filter((n) => !n.startsWith("sqlite_autoindex"));
}

Deno.test("a fresh store reaches schema version 5 (the specification's) in private files", async () => {
  await using dir = await tempDir();
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  try {
    assertEquals(SCHEMA_VERSION, 5);
    assertEquals(schemaVersion(db), 5);
    const recorded = db.prepare("SELECT version FROM schema_migrations ORDER BY version").all()
      .map((r) => r.version);
    assertEquals(recorded, [1, 2, 3, 4, 5]);
    assertEquals(indexNames(db, "access_logs"), ["access_logs_time"]);
    assertEquals(
      (db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode,
      "wal",
    );
    assertEquals(
      (db.prepare("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys,
      1,
    );
    const tables = db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ai_%' ORDER BY name",
    ).all().map((r) => r.name);
    assertEquals(tables, ["ai_approvals", "ai_conversations", "ai_messages", "ai_usage"]);
    db.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
    for (const file of ["waf.db", "waf.db-wal", "waf.db-shm"]) {
      assertEquals((await Deno.stat(`${dir}/${file}`)).mode! & 0o777, 0o600, file);
    }
  } finally {
    db.close();
  }
});

for (let from = 1; from < SCHEMA_VERSION; from++) {
  Deno.test(`a store at version ${from} upgrades to ${SCHEMA_VERSION} with every row intact`, async () => {
    await using dir = await tempDir();
    const path = `${dir}/waf.db`;
    const old = openStore(path, { now: NOW, targetVersion: from });
    assertEquals(schemaVersion(old), from);
    seed(old, from);
    const before = old.prepare("SELECT id, username, password_hash, role FROM users ORDER BY id")
      .all();
    old.close();

    const db = openStore(path, { now: NOW });
    try {
      assertEquals(schemaVersion(db), SCHEMA_VERSION);
      const after = db.prepare("SELECT id, username, password_hash, role FROM users ORDER BY id")
        .all();
      assertEquals(after, before);
      const raw = db.prepare("SELECT hex(username) AS h FROM users WHERE id = 'u1'").get() as {
        h: string;
      };
      assertEquals(
        raw.h,
        new TextEncoder().encode(HISTORICAL_NAME).reduce(
          (s, b) => s + b.toString(16).padStart(2, "0").toUpperCase(),
          "",
        ),
      );
      const epoch = db.prepare("SELECT credential_epoch FROM users WHERE id = 'u1'").get() as {
        credential_epoch: number;
      };
      assertEquals(epoch.credential_epoch, 1);
      assertEquals(count(db, "admin_sessions"), 1);
      assertEquals(count(db, "audit_log"), 1);
      if (from >= 2) assertEquals(count(db, "api_tokens"), 1);
      if (from >= 3) assertEquals(count(db, "sites"), 1);
      if (from >= 4) {
        assertEquals(count(db, "username_repairs"), 1);
      }
      assertEquals(indexNames(db, "access_logs"), ["access_logs_time"]);
    } finally {
      db.close();
    }
  });
}

Deno.test("a store with a newer schema (such as version 6 of a development build) is refused and left byte-identical", async () => {
  await using dir = await tempDir();
  const path = `${dir}/waf.db`;
  const db = openStore(path, { now: NOW });
  db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
    SCHEMA_VERSION + 1,
    "from the future",
    NOW,
  );
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  const before = await Deno.readFile(path);
  assertThrows(
    () => openStore(path, { now: NOW }),
    (e: unknown) =>
      e instanceof SchemaTooNewError && e.message.includes("version 6") &&
      e.message.includes("version 5"),
  );
  assertEquals(await Deno.readFile(path), before);
  const check = new DatabaseSync(path, { readOnly: true });
  assertEquals(schemaVersion(check), SCHEMA_VERSION + 1);
  check.close();
});

Deno.test("the audit log and username repair tables refuse updates and deletes", async () => {
  await using dir = await tempDir();
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  try {
    seed(db, 5);
    for (const table of ["audit_log", "username_repairs"]) {
      assertThrows(() => db.exec(`UPDATE ${table} SET time = 0`), /append-only/);
      assertThrows(() => db.exec(`DELETE FROM ${table}`), /append-only/);
    }
  } finally {
    db.close();
  }
});

Deno.test("only aggregated authentication failures may grow their count and be deleted; their identity stays", async () => {
  await using dir = await tempDir();
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  try {
    seed(db, 5);
    db.prepare(
      "INSERT INTO audit_log (time, actor_type, action, result, client_ip, retention) VALUES (?, 'anonymous', 'auth.login', 'failure', '10.0.0.1', 'auth_failure')",
    ).run(NOW);
    db.exec(
      "UPDATE audit_log SET count = 7, detail = '{}', trace_id = 'x' WHERE retention = 'auth_failure'",
    );
    for (
      const change of [
        "time = 0",
        "client_ip = '10.9.9.9'",
        "action = 'user.create'",
        "result = 'success'",
        "actor_type = 'user'",
        "retention = 'forever'",
      ]
    ) {
      assertThrows(
        () => db.exec(`UPDATE audit_log SET ${change} WHERE retention = 'auth_failure'`),
        /append-only/,
        change,
      );
    }
    // The seeded administrative record can be neither changed nor deleted, not even its count.
    assertThrows(
      () => db.exec("UPDATE audit_log SET count = 2 WHERE action = 'seed'"),
      /append-only/,
    );
    assertThrows(() => db.exec("DELETE FROM audit_log WHERE action = 'seed'"), /append-only/);
    db.exec("DELETE FROM audit_log WHERE retention = 'auth_failure'");
    assertEquals(count(db, "audit_log"), 1);
  } finally {
    db.close();
  }
});

Deno.test("every migration has a unique ascending version", () => {
  MIGRATIONS.forEach((m, i) => assertEquals(m.version, i + 1));
});

Deno.test("access-log inserts maintain only the indexes a query uses (time for retention, trace id)", async () => {
  await using dir = await tempDir();
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  try {
    const indexes = db.prepare("PRAGMA index_list(access_logs)").all()
      .map((r) => String(r.name)).sort();
    assertEquals(indexes, ["access_logs_time", "sqlite_autoindex_access_logs_1"]);
    const plan = (sql: string) =>
      db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => String(r.detail)).join("; ");
    ok(plan("SELECT * FROM access_logs WHERE trace_id = 'x'").includes("sqlite_autoindex"));
    ok(
      plan("SELECT id FROM access_logs WHERE time < 5 ORDER BY time LIMIT 10")
        .includes("access_logs_time"),
    );
  } finally {
    db.close();
  }
});

/** The columns of `table`, in order. */
function columns(db: DatabaseSync, table: string): string[] {
  return db.prepare(`PRAGMA table_info(${table})`).all().map((r) => String(r.name));
}

Deno.test("a version 5 store from before notifications had params and link gains them on open, once, rows intact", async () => {
  await using dir = await tempDir();
  const path = `${dir}/waf.db`;
  // The old shape: version 5 applied when its SQL did not yet add the two columns.
  const made = openStore(path, { now: NOW });
  made.exec("ALTER TABLE notifications DROP COLUMN params");
  made.exec("ALTER TABLE notifications DROP COLUMN link");
  made.prepare(
    "INSERT INTO notifications (id, time, audience, level, kind, title, body) VALUES ('n1', ?, 'admin', 'info', 'k', 'Old title', 'Old body')",
  ).run(NOW);
  assertEquals(columns(made, "notifications").includes("params"), false);
  made.close();

  for (const round of [1, 2]) {
    const db = openStore(path, { now: NOW + round });
    try {
      assertEquals(schemaVersion(db), 5);
      const cols = columns(db, "notifications");
      assertEquals(cols.filter((c) => c === "params" || c === "link"), ["params", "link"]);
      const old = createNotificationsRepo(db).get("n1", "u1");
      assertEquals([old?.title, old?.body, old?.params, old?.link], [
        "Old title",
        "Old body",
        null,
        null,
      ]);
      const id = `n${round + 1}`;
      createNotificationsRepo(db).insert({
        id,
        time: NOW,
        audience: "admin",
        level: "info",
        kind: "k",
        title: "t",
        body: "b",
        params: '{"ip":"192.0.2.1"}',
        link: "/console#/protection/alap",
      });
      assertEquals(createNotificationsRepo(db).get(id, "u1")?.link, "/console#/protection/alap");
      // No migration is recorded again: the repair is no new version.
      assertEquals(count(db, "schema_migrations"), 5);
    } finally {
      db.close();
    }
  }
});

Deno.test("every added column belongs to a known version and is in that version's SQL", () => {
  for (const c of ADDED_COLUMNS) {
    const m = MIGRATIONS.find((x) => x.version === c.version);
    ok(m, `version ${c.version}`);
    ok(m!.sql.includes(`ALTER TABLE ${c.table} ADD COLUMN ${c.column} ${c.definition}`), c.column);
  }
});
