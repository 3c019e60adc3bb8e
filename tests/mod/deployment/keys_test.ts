/**
 * The deployment key file's rules on a real SQLite store (the store's engine does not matter to
 * them: they go through the settings repository): created when the database holds no deployment,
 * adopted when copied in first, accepted when it matches, refused when missing or wrong.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { testConfig } from "../../_helpers/server.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import type { Db } from "../../../db/store.ts";
import {
  DEPLOYMENT_KEYS_SETTING,
  DeploymentKeysError,
  formatKeyFile,
  parseKeyFile,
  resolveDeploymentKeys,
} from "../../../mod/deployment/keys.ts";
import { dataDirKeys, type DeploymentKeys } from "../../../mod/core/deployment_keys.ts";
import { createSecretBox } from "../../../mod/core/secret_box.ts";
import { b64url } from "../../../mod/core/digest.ts";

const NOW = Date.UTC(2026, 0, 1);

function production(secretsFile: string) {
  return testConfig({
    storage: {
      profile: "production",
      production: {
        postgresql: { dsn: "postgres://waf@127.0.0.1:5432/waf" },
        secrets_file: secretsFile,
      },
    },
  });
}

const resolve = (db: Db, file: string, dataDir: string) =>
  resolveDeploymentKeys({ config: production(file), dataDir, db, random: systemRandom, now: NOW });

const recorded = (db: Db) =>
  db.prepare("SELECT value FROM settings WHERE key = ?").get(DEPLOYMENT_KEYS_SETTING) as
    | { value: string }
    | undefined;

function raw(keys: DeploymentKeys): { sealing: Uint8Array; signing: Uint8Array } {
  if (!("key" in keys.sealing) || !("key" in keys.signing)) throw new Error("expected key bytes");
  return { sealing: keys.sealing.key, signing: keys.signing.key };
}

async function refusal(
  fn: () => Promise<unknown>,
  problem: DeploymentKeysError["problem"],
  file: string,
): Promise<void> {
  const err = await fn().then(() => undefined, (e: unknown) => e);
  ok(err instanceof DeploymentKeysError, String(err));
  assertEquals(err.problem, problem);
  assertEquals(err.file, file);
  ok(err.message.includes(`"${file}"`), err.message);
}

Deno.test("resolveDeploymentKeys() creates the key file (mode 0600) and records its fingerprints when the database holds no deployment", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  const file = `${dir}/deployment.key`;
  const keys = raw(await resolve(store.db, file, store.dir));
  assertEquals((await Deno.stat(file)).mode! & 0o777, 0o600);
  const text = await Deno.readTextFile(file);
  assertEquals(parseKeyFile(file, text), keys);
  assertEquals(keys.sealing.length, 32);
  assertEquals(keys.signing.length, 32);
  ok(!keys.sealing.every((b, i) => b === keys.signing[i]), "two different keys");
  const row = recorded(store.db);
  ok(row, "the deployment is recorded");
  const value = JSON.parse(row.value) as Record<string, unknown>;
  assertEquals(Object.keys(value).sort(), ["sealing", "signing", "version"]);
  for (const key of [keys.sealing, keys.signing]) {
    ok(!row.value.includes(b64url(key)), "the store never holds a key");
  }
  // The data directory's one-box key files are not made in production.
  const names = [...Deno.readDirSync(store.dir)].map((e) => e.name);
  ok(!names.includes("totp.key") && !names.includes("auth.key"), names.join(", "));
});

Deno.test("resolveDeploymentKeys() on a second controller with a copy of the file uses the same keys", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  const first = `${dir}/a.key`;
  const copy = `${dir}/b.key`;
  const a = await resolve(store.db, first, store.dir);
  await Deno.copyFile(first, copy);
  await Deno.chmod(copy, 0o644);
  const b = await resolve(store.db, copy, store.dir);
  assertEquals(raw(b), raw(a));
  assertEquals((await Deno.stat(copy)).mode! & 0o777, 0o600, "a too-open copy is tightened");
  // What one controller sealed opens on the other.
  const sealed = await createSecretBox(a.sealing, systemRandom).seal(
    new TextEncoder().encode("smtp password"),
    "channel:1",
  );
  const opened = await createSecretBox(b.sealing, systemRandom).open(sealed, "channel:1");
  assertEquals(new TextDecoder().decode(opened), "smtp password");
});

Deno.test("resolveDeploymentKeys() refuses to start, naming the file, when the file is missing but the database belongs to a deployment", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  await resolve(store.db, `${dir}/a.key`, store.dir);
  const before = recorded(store.db)!.value;
  const missing = `${dir}/elsewhere.key`;
  await refusal(() => resolve(store.db, missing, store.dir), "missing", missing);
  assertEquals(await Deno.stat(missing).then(() => true, () => false), false, "no key minted");
  assertEquals(recorded(store.db)!.value, before, "the record is untouched");
});

Deno.test("resolveDeploymentKeys() refuses a key file whose keys are not the deployment's", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  await resolve(store.db, `${dir}/a.key`, store.dir);
  const other = `${dir}/other.key`;
  await Deno.writeTextFile(
    other,
    formatKeyFile({ sealing: systemRandom.bytes(32), signing: systemRandom.bytes(32) }),
    { mode: 0o600 },
  );
  await refusal(() => resolve(store.db, other, store.dir), "mismatch", other);
  // One key right and the other wrong is still another deployment's file.
  const a = parseKeyFile("a", await Deno.readTextFile(`${dir}/a.key`));
  await Deno.writeTextFile(other, formatKeyFile({ ...a, signing: systemRandom.bytes(32) }));
  await refusal(() => resolve(store.db, other, store.dir), "mismatch", other);
});

Deno.test("resolveDeploymentKeys() adopts a key file copied in before the deployment's first start", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  const file = `${dir}/deployment.key`;
  const keys = { sealing: systemRandom.bytes(32), signing: systemRandom.bytes(32) };
  await Deno.writeTextFile(file, formatKeyFile(keys), { mode: 0o600 });
  assertEquals(raw(await resolve(store.db, file, store.dir)), keys);
  assertEquals(await Deno.readTextFile(file), formatKeyFile(keys), "the file is not rewritten");
  ok(recorded(store.db), "the deployment is recorded");
});

Deno.test("resolveDeploymentKeys() refuses a damaged key file and a key file it cannot create", async () => {
  await using store = await testStore();
  await using dir = await tempDir();
  const damaged = `${dir}/damaged.key`;
  await Deno.writeTextFile(damaged, "version: 1\nsealing: c2hvcnQ\nsigning: c2hvcnQ\n");
  await refusal(() => resolve(store.db, damaged, store.dir), "damaged", damaged);
  const nowhere = `${dir}/no/such/dir/deployment.key`;
  await refusal(() => resolve(store.db, nowhere, store.dir), "unwritable", nowhere);
  assertEquals(recorded(store.db), undefined, "a refusal records no deployment");
});

Deno.test("resolveDeploymentKeys() leaves the temporary profile on the data directory's key files", async () => {
  await using store = await testStore();
  const keys = await resolveDeploymentKeys({
    config: testConfig(),
    dataDir: store.dir,
    db: store.db,
    random: systemRandom,
    now: NOW,
  });
  assertEquals(keys, dataDirKeys(store.dir));
  assertEquals(keys.sealing, { file: `${store.dir}/totp.key` });
  assertEquals(keys.signing, { file: `${store.dir}/auth.key` });
  assertEquals(recorded(store.db), undefined);
  const names = [...Deno.readDirSync(store.dir)].map((e) => e.name);
  ok(!names.includes("totp.key"), "still created on first use, not at start");
});
