import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { startTestServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";
import { type Db, openStore, schemaVersion, transaction } from "../../db/store.ts";
import { SCHEMA_VERSION } from "../../db/migrations.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const NOW = Date.UTC(2026, 0, 1);

function count(db: DatabaseSync, sql: string): number {
  return Number((db.prepare(sql).get() as { n: number }).n);
}

/** One write: an audit row and the settings counter move together, in one transaction. */
function tick(db: Db, n: number): void {
  transaction(db, () => {
    db.prepare(
      "INSERT INTO audit_log (time, actor_type, action, result, detail) VALUES (?, 'system', 'test.tick', 'success', ?)",
    ).run(NOW + n, JSON.stringify({ n }));
    db.prepare(
      "INSERT INTO settings (key, value, updated_at) VALUES ('tick', ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    ).run(String(n), NOW + n);
  });
}

Deno.test("waf store backup takes a consistent snapshot while the server keeps writing", async () => {
  await using server = await startTestServer();
  const db = server.db;
  // Enough data that the snapshot takes a while, so writes really overlap it.
  transaction(db, () => {
    const insert = db.prepare(
      "INSERT INTO access_logs (trace_id, time, action, record) VALUES (?, ?, 'allow', ?)",
    );
    const record = JSON.stringify({ pad: "x".repeat(400) });
    // Within retention, so the server's own start-up pruning (on its writer thread) keeps them.
    const time = server.clock.now();
    for (let i = 0; i < 40_000; i++) insert.run(`t${i}`, time, record);
  });
  let n = 0;
  let writing = true;
  const writer = (async () => {
    while (writing) {
      tick(db, ++n);
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  })();
  while (n < 20) await new Promise((resolve) => setTimeout(resolve, 1));
  const before = n;
  const out = `${server.dir}/backup.db`;
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "store", "backup", "--out", out, "--data-dir", server.dir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const after = n;
  writing = false;
  await writer;
  const stdout = new TextDecoder().decode(child.stdout);
  assertEquals(child.code, 0, new TextDecoder().decode(child.stderr));
  assertMatch(
    stdout,
    new RegExp(
      `Backup written to ".*backup\\.db" \\(\\d+ bytes, schema version ${SCHEMA_VERSION}\\)`,
    ),
  );
  assertMatch(stdout, /\nok\n$/);
  ok(after > before, "the server kept writing while the backup ran");

  const copy = new DatabaseSync(out, { readOnly: true });
  try {
    assertEquals({ ...copy.prepare("PRAGMA integrity_check").get() }, { integrity_check: "ok" });
    assertEquals(schemaVersion(copy), SCHEMA_VERSION);
    const ticks = count(copy, "SELECT COUNT(*) AS n FROM audit_log WHERE action = 'test.tick'");
    const counter = copy.prepare("SELECT value FROM settings WHERE key = 'tick'").get() as {
      value: string;
    };
    // Consistent: the counter and the rows of the same transactions agree exactly.
    assertEquals(Number(counter.value), ticks);
    ok(ticks >= before && ticks < after, `snapshot ${ticks} within [${before}, ${after})`);
    assertEquals(count(copy, "SELECT COUNT(*) AS n FROM access_logs"), 40_000);
  } finally {
    copy.close();
  }
  assertEquals((await Deno.stat(out)).mode! & 0o777, 0o600);
  const leftovers = [...Deno.readDirSync(server.dir)].filter((e) => e.name.endsWith(".tmp"));
  assertEquals(leftovers, []);
});

Deno.test("waf store backup refuses to overwrite an existing file", async () => {
  await using dir = await tempDir();
  openStore(`${dir}/waf.db`, { now: NOW }).close();
  const out = `${dir}/existing.db`;
  await Deno.writeTextFile(out, "keep me");
  const r = await cli(["store", "backup", "--out", out, "--data-dir", dir]);
  assertEquals(r.code, 1);
  assertMatch(r.stderr, /Refusing to overwrite/);
  assertEquals(await Deno.readTextFile(out), "keep me");
  const second = `${dir}/second.db`;
  assertEquals((await cli(["store", "backup", "--out", second, "--data-dir", dir])).code, 0);
  assertEquals((await cli(["store", "backup", "--out", second, "--data-dir", dir])).code, 1);
});

Deno.test("waf store backup names a missing folder (or a file where a folder should be)", async () => {
  await using dir = await tempDir();
  openStore(`${dir}/waf.db`, { now: NOW }).close();
  const missing = await cli([
    "store",
    "backup",
    "--out",
    `${dir}/missing/sub/x.db`,
    "--data-dir",
    dir,
  ]);
  assertEquals(missing.code, 1);
  assertMatch(missing.stderr, new RegExp(`The folder ".*/missing/sub" does not exist`));
  await Deno.writeTextFile(`${dir}/plain`, "x");
  const file = await cli(["store", "backup", "--out", `${dir}/plain/x.db`, "--data-dir", dir]);
  assertEquals(file.code, 1);
  assertMatch(file.stderr, /".*\/plain" is not a folder/);
});

Deno.test("waf store backup copies an older store as it is, without migrating it", async () => {
  await using dir = await tempDir();
  openStore(`${dir}/waf.db`, { now: NOW, targetVersion: 3 }).close();
  const r = await cli(["store", "backup", "--out", `${dir}/pre-upgrade.db`, "--data-dir", dir]);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /schema version 3/);
  for (const path of [`${dir}/waf.db`, `${dir}/pre-upgrade.db`]) {
    const db = new DatabaseSync(path, { readOnly: true });
    assertEquals(schemaVersion(db), 3, path);
    db.close();
  }
});

Deno.test("waf store backup and check fail with exit 1 when there is no store", async () => {
  await using dir = await tempDir();
  const r = await cli(["store", "backup", "--out", `${dir}/b.db`, "--data-dir", dir]);
  assertEquals(r.code, 1);
  assertMatch(r.stderr, /No store at/);
  assertEquals((await cli(["store", "check", "--data-dir", dir])).code, 1);
  let created = true;
  await Deno.stat(`${dir}/waf.db`).catch(() => created = false);
  ok(!created, "no store file is created");
});

Deno.test("waf store check prints ok for a sound store, also while the server runs", async () => {
  await using server = await startTestServer();
  tick(server.db, 1);
  const r = await cli(["store", "check", "--data-dir", server.dir]);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /Integrity check of ".*waf\.db" \(schema version 5\):\nok\n/);
});

Deno.test("waf store check reports a damaged store and exits 1", async () => {
  await using dir = await tempDir();
  const path = `${dir}/waf.db`;
  const db = openStore(path, { now: NOW });
  transaction(db, () => {
    for (let i = 1; i <= 2000; i++) tick(db, i);
  });
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.exec("PRAGMA journal_mode = DELETE");
  const pageSize = Number(
    (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size,
  );
  db.close();
  // Scribble over an interior page of the audit table (not page 1, so it still opens).
  const bytes = await Deno.readFile(path);
  const pages = bytes.length / pageSize;
  ok(pages > 6, `${pages} pages`);
  bytes.fill(0x55, pageSize * (pages - 3), pageSize * (pages - 3) + 200);
  await Deno.writeFile(path, bytes);
  const r = await cli(["store", "check", "--data-dir", dir]);
  assertEquals(r.code, 1, r.stdout);
  assertMatch(r.stderr, /failed the integrity check/);
});
