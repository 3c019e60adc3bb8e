/**
 * Node monitoring over the real mTLS channel: a controller and two node servers on port 0.
 * Heartbeats are accepted only with the node's own certificate from the cluster CA; other
 * certificates, none, another node's and a revoked one are refused and audited. A silent node
 * goes stale, then offline (a `node.offline` notification, `node.status` on the realtime bus);
 * a revoked node's heartbeats are refused while the other node keeps working.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { eventually, joinedNode, nodeHealth, startController } from "../_helpers/cluster.ts";
import { callJson } from "../_helpers/identity.ts";
import { parseExposition, valueOf } from "../_helpers/prometheus.ts";
import { ControllerClient } from "../../mod/cluster/controller_client.ts";
import { loadNodeIdentity } from "../../mod/cluster/node_identity.ts";
import { certificateFacts, createCa, createCsr, createLeaf } from "../../mod/tls/x509.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import type { BusEvent } from "../../mod/monitor/event_bus.ts";

const REPORT = {
  version: "0.1.0",
  uptime_s: 1,
  policy_version: null,
  time: Date.now(),
  counters: {},
  health: {},
};

type Row = { action: string; result: string; target: string; detail: string | null };

Deno.test("heartbeats over mTLS: list and health show the nodes; foreign, missing, borrowed and revoked certificates are refused and audited", async () => {
  const ctl = await startController();
  await using _c = ctl.server;
  const events: BusEvent[] = [];
  ctl.server.monitor.bus.listen((e) => events.push(e));
  await using a = await joinedNode(ctl, "edge-a");
  await using b = await joinedNode(ctl, "edge-b");
  const idA = (await loadNodeIdentity(a.dir))!;
  const idB = (await loadNodeIdentity(b.dir))!;

  const list = await callJson(ctl.server, "GET", "/api/cluster/nodes", { session: ctl.admin });
  assertEquals(list.status, 200);
  const items = list.body.items as Record<string, unknown>[];
  assertEquals(items.map((n) => [n.name, n.state]), [["edge-a", "online"], ["edge-b", "online"]]);
  assertEquals(items[0]!.version, "0.1.0");
  ok(typeof (items[0]!.counters as Record<string, number>).requests === "number");
  // The controller's Prometheus metrics: nodes by state, each node's requests and clock skew.
  const scrape = parseExposition(ctl.server.monitor.metrics.scrape());
  assertEquals(valueOf(scrape.samples, "waf_cluster_nodes", { state: "online" }), 2);
  assertEquals(scrape.types.get("waf_cluster_node_requests_total"), "counter");
  ok(
    scrape.samples.some((s) =>
      s.name === "waf_cluster_node_requests_total" && s.labels.node === "edge-a" &&
      s.labels.action === "pass" && s.labels.node_id === idA.nodeId
    ),
  );
  ok(scrape.samples.some((s) => s.name === "waf_cluster_node_clock_skew_seconds"));
  const nodeScrape = parseExposition(a.monitor.metrics.scrape());
  assertEquals(valueOf(nodeScrape.samples, "waf_cluster_controller_connected"), 1);
  const health = await (await ctl.server.api("/health/cluster")).json();
  assertEquals(health.mode, "controller");
  assertEquals(health.counts.online, 2);
  ok(!JSON.stringify(health).includes("BEGIN"), "no certificate or key material in health");
  const statuses = () =>
    events.filter((e) => e.kind === "node.status").map((e) =>
      `${(e as unknown as { payload: { name: string; state: string } }).payload.name}:${
        (e as unknown as { payload: { state: string } }).payload.state
      }`
    );
  await eventually("node.status events", () => statuses().length >= 4 ? true : undefined);
  assertEquals(statuses().slice(0, 4).sort(), [
    "edge-a:enrolled",
    "edge-a:online",
    "edge-b:enrolled",
    "edge-b:online",
  ]);

  const url = ctl.server.clusterUrl!;
  const beat = async (client: ControllerClient, id: string) => {
    const r = await client.request("POST", `/api/cluster/nodes/${id}/heartbeat`, REPORT);
    return { status: r.status, code: (r.body.error as { code?: string } | undefined)?.code };
  };
  const bare = new ControllerClient(url, idA.caCert);
  const foreignCa = await createCa("not the cluster CA", Date.now(), systemRandom);
  const foreignCert = await createLeaf(
    foreignCa,
    {
      commonName: idA.nodeId,
      usage: "client",
    },
    Date.now(),
    systemRandom,
  );
  const foreign = new ControllerClient(url, idA.caCert, foreignCert);
  const asA = new ControllerClient(url, idA.caCert, { cert: idA.cert, key: idA.key });
  try {
    assertEquals(await beat(bare, idA.nodeId), {
      status: 401,
      code: "NODE_CERTIFICATE_REQUIRED",
    });
    assertEquals(await beat(foreign, idA.nodeId), {
      status: 401,
      code: "NODE_CERTIFICATE_UNTRUSTED",
    });
    assertEquals(await beat(asA, idB.nodeId), { status: 403, code: "NODE_IDENTITY_MISMATCH" });
    assertEquals((await beat(asA, idA.nodeId)).status, 200);
    // The management listener asks for no client certificate: a heartbeat there is refused.
    const plain = await ctl.server.api(`/api/cluster/nodes/${idA.nodeId}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(REPORT),
    });
    assertEquals(plain.status, 401);

    // Revoke B: its next heartbeat is refused; A keeps working.
    const revoked = await callJson(
      ctl.server,
      "POST",
      `/api/cluster/nodes/${idB.nodeId}/revoke`,
      { session: ctl.admin },
    );
    assertEquals(revoked.status, 200);
    assertEquals((revoked.body.item as { state: string }).state, "revoked");
    await b.cluster.agent()!.beat();
    const bHealth = await nodeHealth(b);
    assertEquals([bHealth.link, bHealth.problem], ["refused", "NODE_REVOKED"]);
    const bScrape = parseExposition(b.monitor.metrics.scrape());
    assertEquals(valueOf(bScrape.samples, "waf_cluster_controller_connected"), 0);
    assertEquals((await a.cluster.agent()!.beat())?.status, 200);
    assertEquals((await nodeHealth(a)).link, "connected");
    const after = await callJson(ctl.server, "GET", "/api/cluster/nodes", { session: ctl.admin });
    assertEquals(
      (after.body.items as { name: string; state: string }[]).map((n) => `${n.name}:${n.state}`),
      ["edge-a:online", "edge-b:revoked"],
    );
  } finally {
    bare.close();
    foreign.close();
    asA.close();
  }

  const denied = (ctl.server.db.prepare(
    "SELECT action, result, target, detail FROM audit_log WHERE action = 'cluster.node.authenticate' ORDER BY id",
  ).all() as Row[]).map((r) => `${r.target}:${JSON.parse(r.detail!).reason}`);
  for (
    const want of [
      `cluster_node:${idA.nodeId}:no_certificate`,
      `cluster_node:${idA.nodeId}:untrusted_certificate`,
      `cluster_node:${idB.nodeId}:identity_mismatch`,
      `cluster_node:${idB.nodeId}:revoked`,
    ]
  ) ok(denied.includes(want), `audited: ${want} in ${denied.join(", ")}`);
  ok(
    (ctl.server.db.prepare(
      "SELECT count(*) AS n FROM audit_log WHERE action = 'cluster.node.revoke'",
    )
      .get() as { n: number }).n === 1,
  );

  // A revoked node can be removed; an active one cannot.
  const keep = await callJson(ctl.server, "DELETE", `/api/cluster/nodes/${idA.nodeId}`, {
    session: ctl.admin,
  });
  assertEquals([keep.status, (keep.body.error as { code: string }).code], [
    409,
    "NODE_NOT_REVOKED",
  ]);
  const gone = await callJson(ctl.server, "DELETE", `/api/cluster/nodes/${idB.nodeId}`, {
    session: ctl.admin,
  });
  assertEquals(gone.status, 204);
  const upgrade = await callJson(ctl.server, "POST", "/api/cluster/upgrades", {
    session: ctl.admin,
    body: {},
  });
  assertEquals([upgrade.status, (upgrade.body.error as { code: string }).code], [
    501,
    "CLUSTER_UPGRADE_NOT_IMPLEMENTED",
  ]);
});

Deno.test("a silent node goes stale, then offline with a node.offline notification; a node's clock skew is shown and notified", async () => {
  const ctl = await startController({ offline_after: "30s" });
  await using _c = ctl.server;
  const events: BusEvent[] = [];
  ctl.server.monitor.bus.listen((e) => events.push(e));
  // This node's clock runs a minute ahead of the controller's.
  await using skewed = await joinedNode(ctl, "edge-skew", {
    deps: { clock: new FakeClock(ctl.server.clock.now() + 60_000) },
  });
  const id = (await loadNodeIdentity(skewed.dir))!.nodeId;
  const node = async () =>
    ((await callJson(ctl.server, "GET", `/api/cluster/nodes/${id}`, { session: ctl.admin }))
      .body.item) as { state: string; clock_skew_ms: number; clock_skewed: boolean };
  ok(Math.abs((await node()).clock_skew_ms - 60_000) < 5_000, "the skew is shown");
  assertEquals((await node()).clock_skewed, true, "beyond time.max_offset");
  const listed = await callJson(ctl.server, "GET", "/api/cluster/nodes", { session: ctl.admin });
  assertEquals(listed.body.clock_skew_limit_ms, 1000);
  const kinds = () =>
    ctl.server.db.prepare("SELECT kind, title FROM notifications ORDER BY time").all() as {
      kind: string;
      title: string;
    }[];
  ok(kinds().some((n) => n.kind === "time.offset" && n.title.includes("edge-skew")));

  await skewed.shutdown();
  ctl.server.clock.advance(16_000);
  ctl.server.cluster.sweep();
  assertEquals((await node()).state, "stale");
  assertEquals((await (await ctl.server.api("/health/cluster")).json()).status, "degraded");
  ctl.server.clock.advance(15_000);
  ctl.server.cluster.sweep();
  assertEquals((await node()).state, "offline");
  const offline = kinds().filter((n) => n.kind === "node.offline");
  assertEquals(offline.length, 1);
  ok(offline[0]!.title.includes("edge-skew"));
  // Another sweep does not notify again.
  ctl.server.cluster.sweep();
  assertEquals(kinds().filter((n) => n.kind === "node.offline").length, 1);
  await eventually("node.status offline", () =>
    events.some((e) =>
        e.kind === "node.status" &&
        (e as unknown as { payload: { state: string } }).payload.state === "offline"
      )
      ? true
      : undefined);
});

Deno.test("a node renews its certificate before expiry over mTLS with a new key; the new one replaces the old at its first use", async () => {
  const ctl = await startController();
  await using _c = ctl.server;
  await using node = await joinedNode(ctl, "edge-renew");
  const before = (await loadNodeIdentity(node.dir))!;
  const oldSerial = (await certificateFacts(before.cert))!.serial;
  const agent = node.cluster.agent()!;
  const registered = async () =>
    ((await callJson(ctl.server, "GET", `/api/cluster/nodes/${before.nodeId}`, {
      session: ctl.admin,
    })).body.item as { certificate: { serial: string } }).certificate.serial;

  // Not due yet: a heartbeat renews nothing.
  await agent.beat();
  assertEquals((await loadNodeIdentity(node.dir))!.cert, before.cert);
  // 340 days on (the node's clock): the certificate expires within 30 days, the next accepted
  // heartbeat renews it.
  node.clock.advance(340 * 86_400_000);
  await agent.beat();
  const after = (await loadNodeIdentity(node.dir))!;
  ok(after.cert !== before.cert && after.key !== before.key, "a new key and certificate");
  assertEquals((await Deno.stat(`${node.dir}/cluster/node.key`)).mode! & 0o777, 0o600);
  const newSerial = (await certificateFacts(after.cert))!.serial;
  ok(agent.certificateExpiry() > Date.now() + 360 * 86_400_000, "valid for a year again");
  // Signed but not presented yet: the registration still names the old certificate.
  assertEquals(await registered(), oldSerial);
  await agent.beat();
  assertEquals((await nodeHealth(node)).link, "connected");
  assertEquals(await registered(), newSerial);

  const url = ctl.server.clusterUrl!;
  const asOld = new ControllerClient(url, before.caCert, { cert: before.cert, key: before.key });
  const asNew = new ControllerClient(url, after.caCert, { cert: after.cert, key: after.key });
  try {
    // The old certificate is refused from then on.
    const old = await asOld.request(
      "POST",
      `/api/cluster/nodes/${before.nodeId}/heartbeat`,
      REPORT,
    );
    assertEquals([old.status, (old.body.error as { code: string }).code], [
      403,
      "NODE_IDENTITY_MISMATCH",
    ]);
    // A renewal CSR must name the node itself.
    const { csr } = await createCsr("0123456789abcdef");
    const other = await asNew.request("POST", `/api/cluster/nodes/${before.nodeId}/certificate`, {
      csr,
    });
    assertEquals([other.status, (other.body.error as { code: string }).code], [
      400,
      "CSR_IDENTITY_MISMATCH",
    ]);
  } finally {
    asOld.close();
    asNew.close();
  }
  const audited = (ctl.server.db.prepare(
    "SELECT action, result, target, detail FROM audit_log WHERE action IN ('cluster.node.renew', 'cluster.node.certificate') ORDER BY id",
  ).all() as Row[]).map((r) => `${r.action}:${r.result}`);
  assertEquals(audited, [
    "cluster.node.renew:success",
    "cluster.node.certificate:success",
    "cluster.node.renew:denied",
  ]);
});
