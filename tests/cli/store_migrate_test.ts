/**
 * `waf store migrate` onto the machine's PostgreSQL (a schema of its own per test, dropped
 * after), `waf store check`/`backup` on a production configuration, and `waf user password`
 * acting on the PostgreSQL store when the configuration names it.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { tempDir } from "../_helpers/temp.ts";
import { testSchemaName } from "../_helpers/store.ts";
import { openPgStore, type PgDatabase } from "../../db/pg/pg_database.ts";
import { openStore, type SqliteDb } from "../../db/store.ts";
import { createUsersRepo } from "../../db/users_repo.ts";
import { createSitesRepo } from "../../db/sites_repo.ts";
import { createSettingsRepo } from "../../db/settings_repo.ts";
import { verifyPassword } from "../../mod/identity/password_hash.ts";
import { SCHEMA_VERSION } from "../../db/migrations.ts";

const PG = await hasPostgres();
const NOW = Date.UTC(2026, 0, 1);
const PASSWORD = "Vivid-Lantern-73";

function openPg(schema: string): PgDatabase {
  return openPgStore({
    dsn: postgresDsn(PG),
    schema,
    connectTimeoutMs: 5_000,
    statementTimeoutMs: 10_000,
    controllerId: crypto.randomUUID(),
    now: NOW,
  });
}

function dropSchema(schema: string): void {
  const db = openPg(schema);
  try {
    db.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    db.close();
  }
}

/** A temporary store with an admin (made by the CLI), a session, a site, policy, audit, settings. */
async function seeded(dir: string): Promise<void> {
  const made = await cli(["user", "ensure-admin", "admin", "--password-stdin", "--data-dir", dir], {
    stdin: PASSWORD,
  });
  assertEquals(made.code, 0, made.stderr);
  // The sealing key exists (something was sealed); the signing key was never used, so absent.
  await Deno.writeTextFile(`${dir}/totp.key`, "A".repeat(43) + "\n", { mode: 0o600 });
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  try {
    const id = (db.prepare("SELECT id FROM users WHERE username = 'admin'").get() as { id: string })
      .id;
    db.prepare(
      "INSERT INTO admin_sessions (id_hash, user_id, created_at, last_seen_at, expires_at, credential_epoch) VALUES ('h1', ?, ?, ?, ?, 1)",
    ).run(id, NOW, NOW, NOW + 3_600_000);
    db.prepare(
      "INSERT INTO sites (id, name, config, created_at, updated_at) VALUES ('s1', 'shop', '{\"hosts\":[\"shop.test\"]}', ?, ?)",
    ).run(NOW, NOW);
    db.prepare(
      "INSERT INTO policy_objects (id, kind, site_id, position, config, created_at, updated_at) VALUES ('p1', 'ip_list', 's1', 0, '{\"cidrs\":[\"10.0.0.0/8\"]}', ?, ?)",
    ).run(NOW, NOW);
    db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('k', '\"v\"', ?)").run(NOW);
    for (let i = 0; i < 3; i++) {
      db.prepare(
        "INSERT INTO audit_log (time, actor_type, action, result, detail) VALUES (?, 'system', 'test.seed', 'success', ?)",
      ).run(NOW + i, JSON.stringify({ i }));
    }
    // A WITHOUT ROWID table, and one whose row id is SQLite's implicit one.
    db.prepare(
      "INSERT INTO monitor_rollups (resolution, bucket, site_id, data) VALUES ('minute', 1, 's1', '{}')",
    ).run();
    db.prepare(
      "INSERT INTO ai_usage (owner, owner_name, day, requests, prompt_tokens, completion_tokens) VALUES ('u', 'admin', '2026-01-01', 2, 10, 20)",
    ).run();
    db.prepare(
      "INSERT INTO access_logs (trace_id, time, action, record) VALUES ('t1', ?, 'allow', '{}')",
    ).run(NOW);
  } finally {
    db.close();
  }
}

function count(db: SqliteDb | PgDatabase, table: string): number {
  return Number(db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get()?.n ?? 0);
}

Deno.test({
  name:
    "waf store migrate copies and verifies a temporary store into PostgreSQL (needs postgresql)",
  ignore: ignoreWithout(PG),
  async fn() {
    await using tmp = await tempDir();
    const dir = String(tmp);
    await seeded(dir);
    const schema = testSchemaName();
    try {
      // The password is in the DSN the operator typed; trust auth ignores it.
      const dsn = postgresDsn(PG).replace("postgres@", "postgres:S3cretPw@");
      const run = await cli([
        "store",
        "migrate",
        "--to-dsn",
        dsn,
        "--schema",
        schema,
        "--secrets-file",
        `${dir}/deployment.key`,
        "--data-dir",
        dir,
      ]);
      assertEquals(run.code, 0, run.stderr);
      ok(!`${run.stdout}${run.stderr}`.includes("S3cretPw"), "the password is never printed");
      for (const table of ["users", "admin_sessions", "sites", "policy_objects", "audit_log"]) {
        assertMatch(run.stdout, new RegExp(`${table}\\s+\\d+\\s+\\d+\\s+[0-9a-f]{32}\\s+verified`));
      }
      assertMatch(run.stdout, /storage\.profile: production/);
      assertMatch(run.stdout, /storage\.production\.postgresql\.dsn: "postgres:\/\/postgres:\*+@/);
      ok(!/access_logs/.test(run.stdout), "the access log stays local");
      const keyFile = await Deno.readTextFile(`${dir}/deployment.key`);
      assertMatch(keyFile, /^version: 1$/m);
      assertMatch(
        keyFile,
        new RegExp(`^sealing: ${(await Deno.readTextFile(`${dir}/totp.key`)).trim()}$`, "m"),
      );
      assertMatch(keyFile, /^signing: [A-Za-z0-9_-]{43}$/m);
      assertEquals((await Deno.stat(`${dir}/deployment.key`)).mode! & 0o777, 0o600);

      const pg = openPg(schema);
      try {
        const admin = createUsersRepo(pg).getByUsername("admin");
        ok(admin, "the admin is on PostgreSQL");
        ok(await verifyPassword(PASSWORD, admin.password_hash));
        assertEquals(createSitesRepo(pg).getByName("shop")?.id, "s1");
        assertEquals(createSettingsRepo(pg).get("k"), "v");
        assertEquals(count(pg, "admin_sessions"), 1);
        assertEquals(count(pg, "policy_objects"), 1);
        assertEquals(count(pg, "access_logs"), 0);
        assertEquals(count(pg, "monitor_rollups"), 1);
        assertEquals(count(pg, "ai_usage"), 1);
        // Ids were kept and the identity moved past them: a new audit row does not collide.
        const ids = pg.prepare("SELECT id FROM audit_log ORDER BY id").all().map((r) => r.id);
        const next = pg.prepare(
          "INSERT INTO audit_log (time, actor_type, action, result) VALUES (?, 'system', 'after', 'success')",
        ).run(NOW).lastInsertRowid;
        ok(Number(next) > Math.max(...ids.map(Number)), `new id ${next} after ${ids}`);
      } finally {
        pg.close();
      }

      // An existing key file is never overwritten: refused before anything is copied.
      const keyTaken = await cli([
        "store",
        "migrate",
        "--to-dsn",
        dsn,
        "--schema",
        testSchemaName(),
        "--secrets-file",
        `${dir}/deployment.key`,
        "--data-dir",
        dir,
      ]);
      assertEquals(keyTaken.code, 1);
      assertMatch(keyTaken.stderr, /Refusing to overwrite the key file/);

      // A second migration into the same (now non-empty) schema is refused, naming a table.
      const again = await cli([
        "store",
        "migrate",
        "--to-dsn",
        dsn,
        "--schema",
        schema,
        "--data-dir",
        dir,
      ]);
      assertEquals(again.code, 1);
      assertMatch(again.stderr, /not empty \(table users holds rows\)/);
      ok(!again.stderr.includes("S3cretPw"));

      // The production configuration: check reads PostgreSQL, backup names pg_dump.
      const config = `${dir}/waf.yaml`;
      await Deno.writeTextFile(
        config,
        `storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "${dsn}"\n      schema: ${schema}\n`,
      );
      const check = await cli(["store", "check", "--config", config, "--data-dir", dir]);
      assertEquals(check.code, 0, check.stderr);
      assertMatch(check.stdout, /users\s+1\n/);
      ok(!check.stdout.includes("S3cretPw"));
      const backup = await cli([
        "store",
        "backup",
        "--out",
        `${dir}/b.dump`,
        "--config",
        config,
        "--data-dir",
        dir,
      ]);
      assertEquals(backup.code, 1);
      assertMatch(backup.stdout, new RegExp(`pg_dump --format=custom --schema=${schema}`));
      ok(!backup.stdout.includes("S3cretPw"));

      // waf user password on the production configuration changes the PostgreSQL store.
      const before = (await Deno.readFile(`${dir}/waf.db`)).length;
      const changed = await cli(
        ["user", "password", "admin", "--password-stdin", "--config", config, "--data-dir", dir],
        { stdin: "Quiet-Harbor-58" },
      );
      assertEquals(changed.code, 0, changed.stderr);
      const pg2 = openPg(schema);
      try {
        ok(
          await verifyPassword(
            "Quiet-Harbor-58",
            createUsersRepo(pg2).getByUsername("admin")!.password_hash,
          ),
        );
      } finally {
        pg2.close();
      }
      const local = openStore(`${dir}/waf.db`, { now: NOW });
      try {
        const hash = createUsersRepo(local).getByUsername("admin")!.password_hash;
        ok(await verifyPassword(PASSWORD, hash), "the old local store is untouched");
      } finally {
        local.close();
      }
      ok(before > 0);
    } finally {
      dropSchema(schema);
    }
  },
});

Deno.test({
  name: "a migration that fails leaves the target empty (needs postgresql)",
  ignore: ignoreWithout(PG),
  async fn() {
    await using tmp = await tempDir();
    const dir = String(tmp);
    await seeded(dir);
    // A value PostgreSQL refuses (text in an integer column) makes the copy fail part-way.
    const db = openStore(`${dir}/waf.db`, { now: NOW });
    db.prepare("UPDATE sites SET created_at = 'not a number'").run();
    db.close();
    const schema = testSchemaName();
    try {
      const run = await cli([
        "store",
        "migrate",
        "--to-dsn",
        postgresDsn(PG),
        "--schema",
        schema,
        "--data-dir",
        dir,
      ]);
      assertEquals(run.code, 1);
      assertMatch(run.stderr, /target was left empty/);
      const pg = openPg(schema);
      try {
        assertEquals(count(pg, "users"), 0);
        assertEquals(count(pg, "sites"), 0);
      } finally {
        pg.close();
      }
    } finally {
      dropSchema(schema);
    }
  },
});

Deno.test({
  name:
    "after the move, waf logs pack exports the database's audit and this controller's access records (needs postgresql)",
  ignore: ignoreWithout(PG),
  async fn() {
    await using tmp = await tempDir();
    const dir = String(tmp);
    await seeded(dir);
    const schema = testSchemaName();
    try {
      const moved = await cli([
        "store",
        "migrate",
        "--to-dsn",
        postgresDsn(PG),
        "--schema",
        schema,
        "--secrets-file",
        `${dir}/deployment.key`,
        "--data-dir",
        dir,
      ]);
      assertEquals(moved.code, 0, moved.stderr);
      await Deno.remove(`${dir}/waf.db`);
      await Deno.writeTextFile(
        `${dir}/waf.yaml`,
        `storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "${
          postgresDsn(PG)
        }"\n      schema: ${schema}\n    secrets_file: ${dir}/deployment.key\n`,
      );
      // This controller's own access log file, as `waf serve` keeps it on production.
      const local = openStore(`${dir}/access_log.db`, { now: NOW });
      local.prepare(
        "INSERT INTO access_logs (trace_id, time, action, path, record) VALUES ('local-1', ?, 'block', '/x', '{}')",
      ).run(NOW);
      local.close();
      const packed = await cli(["logs", "pack", "--dir", `${dir}/out`, "--data-dir", dir]);
      assertEquals(packed.code, 0, packed.stderr);
      assertMatch(packed.stdout, /exports\/audit_log\.jsonl/);
      assertMatch(packed.stdout, /exports\/access_logs\.jsonl/);
      const zip = [...Deno.readDirSync(`${dir}/out`)][0]!.name;
      const show = (name: string) =>
        new Deno.Command("unzip", { args: ["-p", `${dir}/out/${zip}`, name], stdout: "piped" })
          .outputSync();
      const audit = new TextDecoder().decode(show("exports/audit_log.jsonl").stdout);
      ok(audit.trim().split("\n").length >= 1, "the deployment's audit");
      assertMatch(new TextDecoder().decode(show("exports/access_logs.jsonl").stdout), /local-1/);
      const manifest = JSON.parse(new TextDecoder().decode(show("manifest.json").stdout));
      assertEquals(manifest.schema_version, SCHEMA_VERSION);
      ok(![...Deno.readDirSync(dir)].some((e) => e.name === "waf.db"), "no SQLite store made");
    } finally {
      dropSchema(schema);
    }
  },
});
