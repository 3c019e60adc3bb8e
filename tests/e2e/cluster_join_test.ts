/**
 * Joining a cluster over the real network: a controller with its mTLS cluster listener and node
 * servers on port 0, each with its own data directory. Tokens are single use, expire, are stored
 * only hashed and never logged; the node's private key never leaves its data directory; every
 * refusal is audited.
 */
import { assertEquals, assertRejects, ok } from "../_helpers/assert.ts";
import { eventually, nodeHealth, startController, startNode } from "../_helpers/cluster.ts";
import { callJson } from "../_helpers/identity.ts";
import { sha256Hex } from "../../mod/core/digest.ts";
import { parseJoinToken } from "../../mod/cluster/join_tokens.ts";
import { ControllerClient, fetchPinnedCa } from "../../mod/cluster/controller_client.ts";
import { joinCluster, loadNodeIdentity } from "../../mod/cluster/node_identity.ts";
import {
  certificateFacts,
  certificateUris,
  createCa,
  createCsr,
  issuedBy,
} from "../../mod/tls/x509.ts";
import { tempDir } from "../_helpers/temp.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { nodeUri } from "../../mod/cluster/enrollment.ts";
import { ConfigProblemError } from "../../mod/config/config.ts";

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await filesUnder(p));
    else if (e.isFile) out.push(p);
  }
  return out;
}

function auditRows(
  server: { db: { prepare(sql: string): { all(...a: unknown[]): unknown[] } } },
) {
  return server.db.prepare(
    "SELECT action, result, target, detail FROM audit_log WHERE action LIKE 'cluster.%' ORDER BY id",
  ).all() as { action: string; result: string; target: string; detail: string | null }[];
}

Deno.test("a node joins with a one-time token: CSR signed by the cluster CA, key kept on the node, token hashed and never logged", async () => {
  const ctl = await startController();
  await using _c = ctl.server;
  const token = await ctl.token({ note: "edge one" });
  const parsed = parseJoinToken(token)!;
  ok(parsed, "the token has the documented shape");
  ok(ctl.server.clusterUrl, "the cluster listener is open");

  // Stored hashed only.
  const row = ctl.server.db.prepare("SELECT * FROM cluster_join_tokens WHERE id = ?").get(
    parsed.nodeId,
  ) as Record<string, unknown>;
  assertEquals(row.secret_hash, sha256Hex(parsed.secret));
  ok(!JSON.stringify(row).includes(parsed.secret));
  const listed = await callJson(ctl.server, "GET", "/api/cluster/join-tokens", {
    session: ctl.admin,
  });
  assertEquals((listed.body.items as unknown[]).length, 1);
  ok(!JSON.stringify(listed.body).includes(parsed.secret), "the list never shows the secret");

  await using node = await startNode(ctl.server.clusterUrl, { token, name: "edge-1" });
  const health = await eventually("the node joined", async () => {
    const h = await nodeHealth(node);
    return h.enrolled === true ? h : undefined;
  });
  assertEquals(health.node_id, parsed.nodeId);
  assertEquals(health.mode, "node");

  // The identity on the node: its key (0600), the certificate naming the node, the CA.
  const identity = (await loadNodeIdentity(node.dir))!;
  assertEquals(identity.nodeId, parsed.nodeId);
  assertEquals((await Deno.stat(`${node.dir}/cluster/node.key`)).mode! & 0o777, 0o600);
  // The CA's key is in the store, sealed, and in no file of the controller's data directory.
  const stored = JSON.parse(
    (ctl.server.db.prepare("SELECT value FROM settings WHERE key = 'cluster.ca'").get() as {
      value: string;
    }).value,
  );
  assertEquals(stored.cert.trim(), identity.caCert.trim());
  ok(stored.key_sealed.startsWith("v1.") && !JSON.stringify(stored).includes("PRIVATE KEY"));
  await assertRejects(() => Deno.stat(`${ctl.server.dir}/cluster/ca.key`), Deno.errors.NotFound);
  ok(await issuedBy(identity.cert, identity.caCert, Date.now()), "signed by the cluster CA");
  assertEquals(certificateUris(identity.cert), [nodeUri(parsed.nodeId)]);

  // The controller recorded the node with the certificate's serial and fingerprint...
  const nodeRow = ctl.server.db.prepare("SELECT * FROM cluster_nodes WHERE id = ?").get(
    parsed.nodeId,
  ) as Record<string, unknown>;
  assertEquals(nodeRow.name, "edge-1");
  ok(["enrolled", "online"].includes(nodeRow.status as string));
  // ...and never saw the private key; the secret appears in no file or log of either side.
  // Characters 50-90 of the PKCS#8 text encode the private scalar.
  const keyBody = identity.key.replace(/-----[A-Z ]+-----|\s/g, "");
  for (const f of await filesUnder(ctl.server.dir)) {
    const bytes = await Deno.readFile(f);
    const text = new TextDecoder("latin1").decode(bytes);
    ok(!text.includes(keyBody.slice(50, 90)), `${f} holds no part of the node key`);
    ok(!text.includes(parsed.secret), `${f} does not hold the token secret`);
  }
  for (const line of [...ctl.server.logs, ...node.logs]) {
    ok(!line.includes(parsed.secret), `a log line holds the token secret: ${line}`);
  }
  const joined = auditRows(ctl.server).find((r) =>
    r.action === "cluster.join" && r.result === "success"
  );
  ok(joined, "the join is audited");

  // The token was single use: a replay is refused and audited.
  const ca = await fetchPinnedCa(ctl.server.clusterUrl, parsed.caFingerprint);
  const client = new ControllerClient(ctl.server.clusterUrl, ca);
  try {
    const { csr } = await createCsr(parsed.nodeId);
    const replay = await client.request("POST", "/api/cluster/join", { token, csr, name: "x" });
    assertEquals(replay.status, 401);
    assertEquals((replay.body.error as { code: string }).code, "JOIN_TOKEN_INVALID");
    const denied = auditRows(ctl.server).filter((r) =>
      r.action === "cluster.join" && r.result === "denied"
    );
    assertEquals(denied.map((r) => JSON.parse(r.detail!).reason), ["used"]);
  } finally {
    client.close();
  }

  // A restart keeps the identity: no token needed, the same node.
  await node.shutdown();
  await using again = await startNode(ctl.server.clusterUrl, { dir: node.dir });
  assertEquals((await nodeHealth(again)).node_id, parsed.nodeId);
});

Deno.test("join refusals: expired token, CSR for another node id, wrong secret, another controller's pin; each audited", async () => {
  const ctl = await startController();
  await using _c = ctl.server;
  const url = ctl.server.clusterUrl!;
  const expiring = parseJoinToken(await ctl.token({ ttl_seconds: 60 }))!;
  const fresh = await ctl.token();
  const freshParsed = parseJoinToken(fresh)!;
  const ca = await fetchPinnedCa(url, freshParsed.caFingerprint);
  const client = new ControllerClient(url, ca);
  try {
    const join = async (token: string, cn: string) =>
      await client.request("POST", "/api/cluster/join", {
        token,
        csr: (await createCsr(cn)).csr,
        name: "n",
      });

    // A CSR naming another node: refused, and the token is not consumed by the attempt.
    const other = await join(fresh, "0123456789abcdef");
    assertEquals(other.status, 400);
    assertEquals((other.body.error as { code: string }).code, "CSR_IDENTITY_MISMATCH");

    // A guessed secret for a real id.
    const guessed = `wafjoin.${freshParsed.nodeId}.${"A".repeat(43)}.${freshParsed.caFingerprint}`;
    assertEquals((await join(guessed, freshParsed.nodeId)).status, 401);

    // Expired: the controller's clock moves past the token's TTL.
    ctl.server.clock.advance(61_000);
    const token = `wafjoin.${expiring.nodeId}.${expiring.secret}.${expiring.caFingerprint}`;
    const expired = await join(token, expiring.nodeId);
    assertEquals(expired.status, 401);

    // The fresh token still works after the refused attempts (within its hour).
    assertEquals((await join(fresh, freshParsed.nodeId)).status, 200);
  } finally {
    client.close();
  }

  // A token whose CA pin is not this controller's: the node refuses before sending it.
  const foreign = await createCa("another controller", Date.now(), systemRandom);
  const pin = certificateFacts(foreign.cert);
  const wrongPin = `wafjoin.${freshParsed.nodeId}.${freshParsed.secret}.${
    (await pin)!.fingerprint
  }`;
  await using dir = await tempDir();
  const err = await joinCluster({
    dataDir: `${dir}`,
    controllerUrl: url,
    token: wrongPin,
    name: "n",
  })
    .then(() => undefined, (e) => e as { code: string });
  assertEquals(err?.code, "CLUSTER_CA_MISMATCH");

  const reasons = auditRows(ctl.server).filter((r) => r.action === "cluster.join")
    .map((r) => `${r.result}:${r.detail ? JSON.parse(r.detail).reason ?? "" : ""}`);
  assertEquals(reasons, ["denied:csr_identity", "denied:unknown", "denied:expired", "success:"]);
});

Deno.test("join tokens need write:cluster to issue and read:cluster to list; a node refuses them", async () => {
  const ctl = await startController();
  await using _c = ctl.server;
  const anon = await callJson(ctl.server, "POST", "/api/cluster/join-tokens", { body: {} });
  assertEquals(anon.status, 401);
  const bad = await callJson(ctl.server, "POST", "/api/cluster/join-tokens", {
    session: ctl.admin,
    body: { ttl_seconds: 5 },
  });
  assertEquals(bad.status, 400);
  const created = await callJson(ctl.server, "POST", "/api/cluster/join-tokens", {
    session: ctl.admin,
    body: {},
  });
  const expires = Date.parse(created.body.expires_at as string);
  assertEquals(expires - ctl.server.clock.now(), 3_600_000, "one hour by default");
  const del = await callJson(
    ctl.server,
    "DELETE",
    `/api/cluster/join-tokens/${created.body.id}`,
    { session: ctl.admin },
  );
  assertEquals(del.status, 204);
  const list = await callJson(ctl.server, "GET", "/api/cluster/join-tokens", {
    session: ctl.admin,
  });
  assertEquals(list.body.items, []);

  // A node (here one whose token the controller will refuse) answers the cluster routes 409.
  await using node = await startNode(ctl.server.clusterUrl!, { token: "wafjoin.not-a-token" });
  const refused = await node.api("/api/cluster/ca");
  assertEquals(refused.status, 409);
  assertEquals((await refused.json()).error.code, "CLUSTER_ROLE");
});

Deno.test("a node with neither a stored identity nor a join token refuses to start, naming cluster.join_token", async () => {
  await using dir = await tempDir();
  const err = await startNode("https://127.0.0.1:9", { dir: `${dir}` }).then(
    (s) => s[Symbol.asyncDispose]().then(() => undefined),
    (e) => e as Error,
  );
  ok(err instanceof ConfigProblemError, String(err));
  assertEquals(err.problems.map((p) => p.path), ["cluster.join_token"]);
  ok(/WAF_CLUSTER_JOIN_TOKEN/.test(err.message));
});
