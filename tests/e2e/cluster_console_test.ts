/**
 * The console's Cluster page in a real chromium against a real controller: create a join token
 * (shown once), join a real node with it, watch the node come online, see the traffic through it
 * on the dashboard and the Cluster page, see its clock skew flagged and notified, revoke it (the node's next heartbeat is refused); a
 * readonly user sees the nodes without any control.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit, textMatches, unlabelled } from "../_helpers/console.ts";
import { eventually, nodeHealth, startNode } from "../_helpers/cluster.ts";
import { callJson, createUser, login } from "../_helpers/identity.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { parseJoinToken } from "../../mod/cluster/join_tokens.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };

Deno.test({
  name:
    "the console's Cluster page issues a join token, shows the node and revokes it (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using kit = await startConsoleKit({ cluster: { listen: "127.0.0.1:0" } });
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const admin = await kit.signIn(ADMIN);
  let token = "";

  await t.step("create a join token: shown once with the command that uses it", async () => {
    await admin.open("cluster");
    await textMatches(admin, "main", /No node has joined/);
    await admin.page.locator("#join-token-note").fill("edge in rack 2");
    await admin.page.locator("#join-token-minutes").fill("30");
    assertEquals(await unlabelled(admin.page), []);
    await admin.page.locator("#join-token-create").click();
    token = (await textMatches(admin, "#join-token", /^wafjoin\./)).trim();
    ok(parseJoinToken(token), "a well-formed token");
    await textMatches(admin, "main pre", /waf serve --join-token wafjoin\./);
    await textMatches(admin, "main", /edge in rack 2/);
    await admin.screenshot("cluster-token");
    const listed = await callJson(server, "GET", "/api/cluster/join-tokens", { session: api });
    const item = (listed.body.items as { note: string; expires_at: string }[])[0]!;
    assertEquals(item.note, "edge in rack 2");
    assertEquals(Date.parse(item.expires_at) - server.clock.now(), 30 * 60_000);
  });

  // This node's clock runs a minute ahead of the controller's (beyond time.max_offset, 1 s).
  await using node = await startNode(server.clusterUrl!, {
    token,
    name: "edge-rack2",
    deps: { clock: new FakeClock(server.clock.now() + 60_000) },
  });
  await eventually(
    "the node connected",
    async () => (await nodeHealth(node)).link === "connected" ? true : undefined,
  );

  await t.step("the node's counters reach the dashboard and the Cluster page", async () => {
    await using up = startUpstream();
    const site = await callJson(server, "POST", "/api/sites", {
      session: api,
      body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url] },
    });
    assertEquals(site.status, 201);
    const through = async (path: string) => {
      const r = await hostFetch(`${node.dataUrl}${path}`, "shop.test");
      await r.body?.cancel();
      return r.status;
    };
    await eventually(
      "the node serves the site",
      async () => await through("/") === 200 || undefined,
    );
    assertEquals(await through("/search?q=1%20union%20select%20password%20from%20users"), 403);
    await node.cluster.agent()!.beat();
    const listed = await callJson(server, "GET", "/api/cluster/nodes", { session: api });
    const totals = listed.body.totals as Record<string, number>;
    ok(totals.requests! >= 2 && totals.block! >= 1, JSON.stringify(totals));

    await admin.open("dashboard");
    const shown = await textMatches(admin, "#cluster-totals", /\d/);
    ok(shown.includes(String(totals.requests)), `dashboard totals: ${shown}`);
    ok(shown.includes(String(totals.block)), `dashboard blocked: ${shown}`);
    await textMatches(admin, "#cluster-nodes table", /edge-rack2.*online/s);
    await admin.screenshot("dashboard-cluster");
    await admin.open("cluster");
    await textMatches(
      admin,
      "#cluster-totals",
      new RegExp(`${totals.requests} requests, ${totals.block} blocked`),
    );
  });

  await t.step(
    "the node appears online, its clock skew flagged and notified; revoking it refuses its next heartbeat",
    async () => {
      await textMatches(admin, "main table", /edge-rack2.*online/s);
      const id = parseJoinToken(token)!.nodeId;
      await textMatches(admin, `#skew-${id}`, /^(59|60),\d{3} ms: over the 1,000 ms limit/);
      await admin.screenshot("cluster-online");
      await admin.open("notifications");
      await textMatches(admin, "main", /Cluster node "edge-rack2" clock is off by (59|60)\d{3} ms/);
      await admin.open("cluster");
      await admin.page.locator(`#revoke-${id}`).click();
      await admin.page.locator(`#revoke-${id} + dialog button.danger`).click();
      await textMatches(admin, "main table", /edge-rack2.*revoked/s);
      await node.cluster.agent()!.beat();
      assertEquals((await nodeHealth(node)).problem, "NODE_REVOKED");
      ok(await admin.page.locator(`#remove-${id}`).isVisible(), "a revoked node can be removed");
      assertEquals(admin.problems, []);
    },
  );

  await t.step("a readonly user sees the nodes without controls", async () => {
    await createUser(server, VIEWER.username, VIEWER.password, "readonly");
    const viewer = await kit.signIn(VIEWER);
    await viewer.open("cluster");
    await textMatches(viewer, "main table", /edge-rack2/);
    assertEquals(await viewer.page.locator("#join-token-form").count(), 0);
    assertEquals(await viewer.page.locator("main table button").count(), 0);
    ok(await viewer.page.locator(".readonly-note").isVisible());
    assertEquals(viewer.problems, []);
    await viewer.close();
  });

  await admin.close();
});
