/**
 * The cluster CA lives in the management store, so the controllers of one deployment (here: two
 * connections to one store, the same schema on PostgreSQL) share it: they agree on one CA when
 * they start together, an on-disk CA of a single box is adopted once, and a node enrolled
 * through one controller is authenticated by the other.
 */
import { assertEquals, assertRejects, ok } from "../../_helpers/assert.ts";
import { type TestStore, testStore } from "../../_helpers/store.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { createSettingsRepo } from "../../../db/settings_repo.ts";
import { createClusterRepo } from "../../../db/cluster_repo.ts";
import { createAuditRepo } from "../../../db/audit_repo.ts";
import { type SqliteDb, transaction } from "../../../db/store.ts";
import { createAudit } from "../../../mod/core/audit.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createSecretBox } from "../../../mod/core/secret_box.ts";
import { CLUSTER_CA_SETTING, loadClusterCa } from "../../../mod/cluster/cluster_ca.ts";
import { createEnrollment } from "../../../mod/cluster/enrollment.ts";
import { createJoinTokens } from "../../../mod/cluster/join_tokens.ts";
import { NodeAuthenticator } from "../../../mod/cluster/node_auth.ts";
import { certificateFacts, createCa, createCsr, issuedBy } from "../../../mod/tls/x509.ts";

const NOW = Date.UTC(2026, 5, 1);
const NAMES = ["localhost", "127.0.0.1"];
const CTX = { actor: { type: "user" as const, id: "u1", name: "alice" }, clientIp: "127.0.0.1" };

/** One controller of the deployment: its own connection and data directory, the shared key. */
function controller(db: SqliteDb, dataDir: string, key: Uint8Array) {
  return {
    db,
    deps: {
      settings: createSettingsRepo(db),
      transaction: <T>(fn: () => T) => transaction(db, fn),
      box: createSecretBox({ key }, systemRandom),
      dataDir,
      random: systemRandom,
    },
  };
}

async function twoControllers(store: TestStore) {
  const key = systemRandom.bytes(32);
  const dirA = await tempDir();
  const dirB = await tempDir();
  const other = store.reopen();
  return {
    key,
    a: controller(store.db, dirA, key),
    b: controller(other, dirB, key),
    async [Symbol.asyncDispose]() {
      other.close();
      await dirA[Symbol.asyncDispose]();
      await dirB[Symbol.asyncDispose]();
    },
  };
}

const pemDer = (pem: string) =>
  Uint8Array.from(
    atob(pem.replace(/-----[^-]+-----/g, "").replace(/\s/g, "")),
    (c) => c.charCodeAt(0),
  );

Deno.test("two controllers starting together on one store agree on one cluster CA", async () => {
  await using store = await testStore(NOW);
  await using c = await twoControllers(store);
  const [a, b] = await Promise.all([
    loadClusterCa(c.a.deps, NAMES, NOW),
    loadClusterCa(c.b.deps, NAMES, NOW),
  ]);
  assertEquals(a.fingerprint, b.fingerprint);
  assertEquals(a.ca.cert, b.ca.cert);
  assertEquals([a.origin, b.origin].sort(), ["created", "store"]);
  // Each controller has its own listener certificate, both from the shared CA.
  ok(a.server.cert !== b.server.cert);
  ok(await issuedBy(a.server.cert, b.ca.cert, NOW));
  ok(await issuedBy(b.server.cert, a.ca.cert, NOW));
  // The private key is sealed in the store and written to no data directory.
  const row = JSON.parse(
    (store.db.prepare("SELECT value FROM settings WHERE key = ?").get(CLUSTER_CA_SETTING) as {
      value: string;
    }).value,
  );
  assertEquals(row.cert, a.ca.cert);
  ok(!JSON.stringify(row).includes("PRIVATE KEY"), "the key is sealed");
  ok(row.key_sealed.startsWith("v1."));
  for (const dir of [c.a.deps.dataDir, c.b.deps.dataDir]) {
    const names = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
    assertEquals(names.map((e) => e.name).filter((n) => n !== "cluster"), []);
    await assertRejects(() => Deno.stat(`${dir}/cluster/ca.key`), Deno.errors.NotFound);
  }
  // A restart reads the stored CA.
  const again = await loadClusterCa(c.a.deps, NAMES, NOW + 1000);
  assertEquals([again.origin, again.fingerprint], ["store", a.fingerprint]);
});

Deno.test("a single box's CA in <data>/cluster/ is adopted into the store once, then the store's is used", async () => {
  await using store = await testStore(NOW);
  await using c = await twoControllers(store);
  const old = await createCa("waf cluster CA", NOW, systemRandom);
  await Deno.mkdir(`${c.a.deps.dataDir}/cluster`);
  await Deno.writeTextFile(`${c.a.deps.dataDir}/cluster/ca.crt`, old.cert);
  await Deno.writeTextFile(`${c.a.deps.dataDir}/cluster/ca.key`, old.key);
  const pin = (await certificateFacts(old.cert))!.fingerprint;

  const adopted = await loadClusterCa(c.a.deps, NAMES, NOW);
  assertEquals([adopted.origin, adopted.fingerprint, adopted.staleFile], ["adopted", pin, false]);
  // The second controller, with no file, takes the adopted CA (tokens made on one box still pin).
  const b = await loadClusterCa(c.b.deps, NAMES, NOW);
  assertEquals([b.origin, b.fingerprint, b.staleFile], ["store", pin, false]);
  // Another CA in a controller's data directory no longer counts, and is reported as stale.
  const stray = await createCa("waf cluster CA", NOW, systemRandom);
  await Deno.mkdir(`${c.b.deps.dataDir}/cluster`);
  await Deno.writeTextFile(`${c.b.deps.dataDir}/cluster/ca.crt`, stray.cert);
  await Deno.writeTextFile(`${c.b.deps.dataDir}/cluster/ca.key`, stray.key);
  const later = await loadClusterCa(c.b.deps, NAMES, NOW);
  assertEquals([later.origin, later.fingerprint, later.staleFile], ["store", pin, true]);
});

Deno.test("a node's directory (ca.crt without a key) is not taken for a controller's CA", async () => {
  await using store = await testStore(NOW);
  await using c = await twoControllers(store);
  const node = await createCa("waf cluster CA", NOW, systemRandom);
  await Deno.mkdir(`${c.a.deps.dataDir}/cluster`);
  await Deno.writeTextFile(`${c.a.deps.dataDir}/cluster/ca.crt`, node.cert);
  const ca = await loadClusterCa(c.a.deps, NAMES, NOW);
  assertEquals(ca.origin, "created");
  ok(ca.ca.cert !== node.cert);
});

Deno.test("a controller whose sealing key is not the deployment's cannot open the stored CA", async () => {
  await using store = await testStore(NOW);
  await using c = await twoControllers(store);
  await loadClusterCa(c.a.deps, NAMES, NOW);
  const wrong = {
    ...c.b.deps,
    box: createSecretBox({ key: systemRandom.bytes(32) }, systemRandom),
  };
  await assertRejects(
    () => loadClusterCa(wrong, NAMES, NOW),
    (err) => err instanceof AppError && err.code === "CLUSTER_CA_KEY_UNREADABLE",
  );
});

Deno.test("a node enrolled through controller A with a token made on B is authenticated by B", async () => {
  await using store = await testStore(NOW);
  await using c = await twoControllers(store);
  const clock = new FakeClock(NOW);
  const side = async (ctl: typeof c.a) => {
    const ca = await loadClusterCa(ctl.deps, NAMES, NOW);
    const repo = createClusterRepo(ctl.db);
    const base = {
      repo,
      audit: createAudit({ repo: createAuditRepo(ctl.db), clock }),
      clock,
      random: systemRandom,
      transaction: ctl.deps.transaction,
    };
    return {
      ca,
      tokens: createJoinTokens({ ...base, caFingerprint: ca.fingerprint }),
      enrollment: createEnrollment({ ...base, ca }),
      auth: new NodeAuthenticator({ ...base, caCert: ca.ca.cert }),
    };
  };
  const a = await side(c.a);
  const b = await side(c.b);
  const token = b.tokens.create({ note: "edge" }, CTX);
  assertEquals(token.ca_fingerprint, a.ca.fingerprint);
  const { csr } = await createCsr(token.node_id);
  const joined = await a.enrollment.join({ token: token.token, csr, name: "edge" }, CTX);
  assertEquals(joined.ca_certificate, b.ca.ca.cert);
  const peer = { authorized: true, der: pemDer(joined.certificate) };
  await b.auth.authenticate(joined.node_id, peer, CTX);
  await a.auth.authenticate(joined.node_id, peer, CTX);
  // The token was spent on A: B refuses it too.
  const again = await createCsr(token.node_id);
  await assertRejects(
    () => b.enrollment.join({ token: token.token, csr: again.csr, name: "edge" }, CTX),
    (err) => err instanceof AppError && err.code === "JOIN_TOKEN_INVALID",
  );
});
