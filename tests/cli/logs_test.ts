import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";
import { openStore } from "../../db/store.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { generateSigningKey } from "../../mod/ops/crp/crp_build.ts";
import { SCHEMA_VERSION } from "../../db/migrations.ts";

const NOW = Date.UTC(2026, 0, 1, 12, 30, 5);

/** Every secret planted in the fixture; none may appear anywhere in the archive. */
const SECRETS = [
  "S3cretPw",
  "R3disPw",
  "SetupTok123456789",
  "PRIVKEYDATA",
  "TOTPKEYDATA",
  "SECRETHASHVALUE",
  "TOKENHASHVALUE",
  "SESSIONHASHVALUE",
  "AuditPw12345",
  "AccessTok123",
  "Cookie12345",
  "LogTok12345",
  "LogPw12345",
  "KvSecret999",
];

async function fixture(dir: string): Promise<void> {
  const { publicKey } = await generateSigningKey();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `storage:
  postgresql:
    dsn: "postgres://waf:S3cretPw@127.0.0.1:5432/waf"
  redis:
    url: "redis://:R3disPw@127.0.0.1:6379"
crp:
  public_keys: ["${publicKey}"]
`,
  );
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  db.prepare(
    "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ('u1', 'admin', 'scrypt$SECRETHASHVALUE', 'admin', ?, ?)",
  ).run(NOW, NOW);
  db.prepare(
    "INSERT INTO api_tokens (id, secret_hash, note, permissions, created_by, created_at) VALUES ('t1', 'TOKENHASHVALUE', 'ci', '[]', 'u1', ?)",
  ).run(NOW);
  db.prepare(
    "INSERT INTO admin_sessions (id_hash, user_id, created_at, last_seen_at, expires_at) VALUES ('SESSIONHASHVALUE', 'u1', ?, ?, ?)",
  ).run(NOW, NOW, NOW + 1000);
  db.prepare(
    "INSERT INTO audit_log (time, actor_type, actor_name, action, result, detail) VALUES (?, 'user', 'admin', 'user.update', 'success', ?)",
  ).run(NOW, JSON.stringify({ password: "AuditPw12345", field: "role" }));
  db.prepare(
    "INSERT INTO access_logs (trace_id, time, action, path, record) VALUES ('tr1', ?, 'block', '/login', ?)",
  ).run(
    NOW,
    JSON.stringify({
      headers: { authorization: "Bearer AccessTok123", cookie: "sid=Cookie12345" },
      rule: "sqli",
    }),
  );
  db.close();
  await Deno.mkdir(`${dir}/tls`);
  await Deno.writeTextFile(
    `${dir}/tls/server.key`,
    "-----BEGIN PRIVATE KEY-----\nPRIVKEYDATA\n-----END PRIVATE KEY-----\n",
  );
  await Deno.mkdir(`${dir}/runtime`);
  await Deno.writeTextFile(`${dir}/runtime/setup.url`, "http://x/setup#token=SetupTok123456789");
  await Deno.writeTextFile(`${dir}/totp.key`, "TOTPKEYDATA");
  await Deno.mkdir(`${dir}/logs`);
  await Deno.writeTextFile(
    `${dir}/logs/waf.log`,
    [
      "2026-01-01T12:00:00.000Z INFO  waf started data_plane=127.0.0.1:8080",
      "2026-01-01T12:00:01.000Z INFO  setup link token=SetupTok123456789",
      "2026-01-01T12:00:02.000Z WARN  upstream said Authorization: Bearer LogTok12345",
      '{"time":"2026-01-01T12:00:03.000Z","level":"info","msg":"x","password":"LogPw12345"}',
      "2026-01-01T12:00:04.000Z INFO  key api_key=KvSecret999 done",
      "",
    ].join("\n"),
  );
  await Deno.writeTextFile(`${dir}/logs/waf.log.1`, "2025-12-31T23:59:59.000Z INFO  older line\n");
  await Deno.writeTextFile(`${dir}/logs/other.txt`, "not a waf log\n");
}

async function unzip(...args: string[]): Promise<string> {
  const out = await new Deno.Command("unzip", { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  return text;
}

function readTree(dir: string, prefix = ""): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of Deno.readDirSync(dir)) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory) {
      for (const [k, v] of readTree(`${dir}/${entry.name}`, rel)) files.set(k, v);
    } else files.set(rel, Deno.readTextFileSync(`${dir}/${entry.name}`));
  }
  return files;
}

Deno.test("waf logs pack writes a ZIP that unzip opens, with logs, exports and masked config", async () => {
  await using dir = await tempDir();
  await fixture(dir);
  const out = `${dir}/support`;
  const r = await cli(["logs", "pack", "--dir", out, "--data-dir", dir], {
    clock: new FakeClock(NOW),
    env: { setupToken: "SetupTok123456789" },
  });
  assertEquals(r.code, 0, r.stderr);
  const zip = `${out}/waf-support-20260101T123005Z.zip`;
  assertMatch(r.stdout, /Support archive written to ".*waf-support-20260101T123005Z\.zip"/);
  assertEquals((await Deno.stat(zip)).mode! & 0o777, 0o600);

  await unzip("-t", zip);
  const listing = await unzip("-Z1", zip);
  assertEquals(listing.trim().split("\n").sort(), [
    "config/effective.json",
    "exports/access_logs.jsonl",
    "exports/audit_log.jsonl",
    "logs/waf.log",
    "logs/waf.log.1",
    "manifest.json",
  ]);
  ok((await unzip("-l", zip)).includes("2026-01-01 12:30"), "entries carry the pack time");
  await unzip("-q", "-d", `${dir}/x`, zip);
  const files = readTree(`${dir}/x`);

  for (const [name, text] of files) {
    for (const secret of SECRETS) ok(!text.includes(secret), `${secret} leaked into ${name}`);
  }
  const manifest = JSON.parse(files.get("manifest.json")!);
  assertEquals(manifest.format, "waf-support/1");
  assertEquals(manifest.created_at, "2026-01-01T12:30:05.000Z");
  assertEquals(manifest.schema_version, SCHEMA_VERSION);
  assertEquals(typeof manifest.waf_version, "string");
  assertEquals(typeof manifest.host.hostname, "string");
  assertEquals(typeof manifest.host.os, "string");
  ok(manifest.never_included.includes("the setup token"));

  const config = JSON.parse(files.get("config/effective.json")!);
  assertEquals(config.storage.postgresql.dsn, "[masked]");
  assertEquals(config.storage.redis.url, "redis://[masked]@127.0.0.1:6379");
  assertEquals(config.crp.public_keys, ["[masked]"]);
  assertEquals(config.server.management.listen, "127.0.0.1:9443");

  const log = files.get("logs/waf.log")!;
  assertMatch(log, /waf started data_plane=127\.0\.0\.1:8080/);
  assertMatch(log, /token=\[masked\]/);
  assertMatch(log, /Bearer \[masked\]/);
  assertMatch(log, /"password":"\[masked\]"/);
  assertMatch(files.get("logs/waf.log.1")!, /older line/);

  const audit = JSON.parse(files.get("exports/audit_log.jsonl")!.trim());
  assertEquals(audit.action, "user.update");
  assertEquals(audit.detail, { password: "[masked]", field: "role" });
  const access = JSON.parse(files.get("exports/access_logs.jsonl")!.trim());
  assertEquals(access.path, "/login");
  assertEquals(access.record.rule, "sqli");
  assertEquals(access.record.headers.authorization, "[masked]");
});

Deno.test("waf logs pack refuses to overwrite and checks the archive name", async () => {
  await using tmp = await tempDir();
  const dir = String(tmp);
  const pack = () =>
    cli(["logs", "pack", "--dir", dir, "--name", "case-42.zip", "--data-dir", dir]);
  const first = await pack();
  assertEquals(first.code, 0, first.stderr);
  const before = await Deno.readFile(`${dir}/case-42.zip`);
  const again = await pack();
  assertEquals(again.code, 1);
  assertMatch(again.stderr, /Refusing to overwrite/);
  assertEquals(await Deno.readFile(`${dir}/case-42.zip`), before);
  for (const name of ["../escape.zip", "a/b.zip", "notzip.tar", ".hidden.zip"]) {
    const r = await cli(["logs", "pack", "--dir", dir, "--name", name, "--data-dir", dir]);
    assertEquals(r.code, 2, name);
  }
  assertEquals((await cli(["logs", "pack", "--data-dir", dir])).code, 2);
  // Without a store or logs the archive still has the manifest and the configuration.
  assertEquals(
    (await unzip("-Z1", `${dir}/case-42.zip`)).trim().split("\n").sort(),
    ["config/effective.json", "manifest.json"],
  );
});

Deno.test("waf serve appends its log lines to <data-dir>/logs/waf.log", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n',
  );
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  await waf.waitFor(/waf started/);
  assertEquals(await waf.stop("SIGTERM"), 0);
  const log = await Deno.readTextFile(`${dir}/logs/waf.log`);
  assertMatch(log, /INFO {2}waf started/);
  assertMatch(log, /INFO {2}stopped/);
  assertEquals((await Deno.stat(`${dir}/logs/waf.log`)).mode! & 0o777, 0o600);
});
