/**
 * A node the controller keeps refusing (revoked, then removed) over the real mTLS channel: the
 * node backs off from its heartbeat interval up to `REFUSED_MAX_DELAY_MS` and logs the refusal
 * once; the controller audits the refusal once per certificate and hour (with the count of those
 * in between), and again at once when the refusal changes (the removed node is unknown).
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { joinedNode, nodeHealth, startController } from "../_helpers/cluster.ts";
import { ADMIN, callJson, login } from "../_helpers/identity.ts";
import { loadNodeIdentity } from "../../mod/cluster/node_identity.ts";
import { REFUSED_MAX_DELAY_MS } from "../../mod/cluster/node_agent.ts";
import { REPEATED_REFUSAL_AUDIT_MS } from "../../mod/cluster/node_auth.ts";

Deno.test("a refused node backs off up to a cap, and the controller audits its refusals once an hour and at each change", async () => {
  const ctl = await startController();
  await using _c = ctl.server;
  await using node = await joinedNode(ctl, "edge-gone");
  const id = (await loadNodeIdentity(node.dir))!.nodeId;
  const agent = node.cluster.agent()!;
  assertEquals(agent.delayMs(), 1000, "the heartbeat interval while accepted");

  const revoked = await callJson(ctl.server, "POST", `/api/cluster/nodes/${id}/revoke`, {
    session: ctl.admin,
  });
  assertEquals(revoked.status, 200);
  const denied = () =>
    (ctl.server.db.prepare(
      "SELECT detail FROM audit_log WHERE action = 'cluster.node.authenticate' AND target = ? ORDER BY id",
    ).all(`cluster_node:${id}`) as { detail: string }[]).map((r) => JSON.parse(r.detail));

  const delays: number[] = [];
  for (let i = 0; i < 12; i++) {
    const answer = await agent.beat();
    assertEquals((answer?.body.error as { code: string }).code, "NODE_REVOKED");
    delays.push(agent.delayMs());
  }
  ok(delays[0]! >= 2000, `backs off after a refusal: ${delays}`);
  for (let i = 1; i < delays.length; i++) {
    ok(delays[i]! >= delays[i - 1]!, `the wait never shrinks: ${delays}`);
  }
  assertEquals(delays.at(-1), REFUSED_MAX_DELAY_MS, "the wait stops growing at the cap");
  const health = await nodeHealth(node);
  assertEquals([health.link, health.problem], ["refused", "NODE_REVOKED"]);
  ok(typeof health.last_attempt_at === "string");
  // Logged once with the back-off, and once more on reaching the cap.
  const refusedLines = node.logs.filter((l) => l.includes("refused this node's heartbeat"));
  assertEquals(refusedLines.length, 1, refusedLines.join("\n"));
  ok(refusedLines[0]!.includes("retry_in_ms"));
  assertEquals(node.logs.filter((l) => l.includes("at the longest interval")).length, 1);

  // Twelve refusals (and any the node's own timer sent), one audit record.
  assertEquals(denied(), [{ reason: "revoked" }]);
  // An hour on, the next refusal is audited again with how many were not.
  ctl.server.clock.advance(REPEATED_REFUSAL_AUDIT_MS);
  await agent.beat();
  const again = denied();
  assertEquals(again.length, 2);
  assertEquals(again[1].reason, "revoked");
  ok(again[1].repeated >= 11, `counts the unaudited refusals: ${JSON.stringify(again[1])}`);
  await agent.beat();
  assertEquals(denied().length, 2);

  // Removed, the node is unknown: a new refusal, audited at once, then throttled again. (The
  // session of an hour ago has expired on the controller's clock.)
  const admin = await login(ctl.server, ADMIN.username, ADMIN.password);
  const gone = await callJson(ctl.server, "DELETE", `/api/cluster/nodes/${id}`, {
    session: admin,
  });
  assertEquals(gone.status, 204);
  for (let i = 0; i < 3; i++) {
    const answer = await agent.beat();
    assertEquals((answer?.body.error as { code: string }).code, "NODE_IDENTITY_MISMATCH");
  }
  assertEquals(denied().slice(2), [{ reason: "unknown_node" }]);
  assertEquals(agent.delayMs(), REFUSED_MAX_DELAY_MS);
});
