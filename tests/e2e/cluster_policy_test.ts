/**
 * Policy distribution in one process: a controller and two nodes (real listeners on port 0, each
 * node with its own data directory and store), one upstream. Changes made on the controller reach
 * both nodes' data planes within a few heartbeats, the list shows them current, and nodes refuse
 * local changes. Revocation and the controller's absence run with real processes in
 * `cluster_process_test.ts`.
 */
import { SignJWT } from "jose";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { eventually, joinedNode, startController } from "../_helpers/cluster.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import type { TestServer } from "../_helpers/server.ts";
import { PEM_PRIVATE_KEY, storedPolicyObjects, storedSiteConfigs } from "../_helpers/sites.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";

/** Status of one request through `node`'s data plane from client address `ip`. */
async function status(node: TestServer, path: string, ip = "192.0.2.10"): Promise<number> {
  const r = await hostFetch(`${node.dataUrl}${path}`, "shop.test", {
    headers: {
      "x-forwarded-for": ip,
      "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
    },
  });
  await r.body?.cancel();
  return r.status;
}

const until = (node: TestServer, path: string, want: number, ip?: string) =>
  eventually(
    `${path} from ${ip ?? "a client"} answering ${want}`,
    async () => await status(node, path, ip) === want ? true : undefined,
  );

Deno.test("policy changes on the controller reach every node; nodes refuse local changes", async () => {
  await using up = startUpstream();
  const ctl = await startController();
  await using controller = ctl.server;
  const admin = ctl.admin;
  const post = async (path: string, body: unknown) => {
    const r = await callJson(controller, "POST", path, { session: admin, body });
    assertEquals(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  await post("/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
    trusted_proxies: ["127.0.0.1/32"],
  });
  await using a = await joinedNode(ctl, "edge-a");
  await using b = await joinedNode(ctl, "edge-b");

  // The site created before the nodes joined serves through both, attacks blocked.
  for (const node of [a, b]) {
    await until(node, "/", 200);
    assertEquals(await status(node, "/?q=<script>alert(1)</script>"), 403);
  }
  const seen = up.seen.length;
  ok(seen >= 2, "the upstream was reached through the nodes");

  // A protection change on the controller reaches both data planes.
  await post("/api/protection/ip-lists", { action: "block", cidr: "203.0.113.0/24" });
  await until(a, "/", 403, "203.0.113.7");
  await until(b, "/", 403, "203.0.113.7");
  assertEquals(await status(a, "/", "192.0.2.10"), 200);
  const list = await eventually("both nodes current", async () => {
    const r = await callJson(controller, "GET", "/api/cluster/nodes", { session: admin });
    const items = r.body.items as { policy_current: boolean }[];
    return items.every((n) => n.policy_current) ? items : undefined;
  });
  assertEquals(list.length, 2);

  // A node refuses local changes to the policy it follows.
  await completeSetup(a);
  const local = await login(a, ADMIN.username, ADMIN.password);
  const refused = await callJson(a, "POST", "/api/protection/ip-lists", {
    session: local,
    body: { action: "block", cidr: "198.18.0.0/15" },
  });
  assertEquals(refused.status, 409);
  assertEquals((refused.body.error as { code: string }).code, "CLUSTER_NODE_READ_ONLY");
  // Certificates too: ACME orders are made on the controller.
  const acme = await callJson(a, "POST", "/api/sites/any/certificate/acme", {
    session: local,
    body: {},
  });
  assertEquals([acme.status, (acme.body.error as { code: string }).code], [
    409,
    "CLUSTER_NODE_READ_ONLY",
  ]);
  assertEquals((await callJson(a, "GET", "/api/sites", { session: local })).status, 200);
});

Deno.test("a site's key reaches a node over the mTLS channel and is sealed in both stores", async () => {
  await using up = startUpstream();
  const ctl = await startController();
  await using controller = ctl.server;
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const pem = await createLeaf(
    ca,
    { commonName: "shop.test", dnsNames: ["shop.test"] },
    now,
    systemRandom,
  );
  const created = await callJson(controller, "POST", "/api/sites", {
    session: ctl.admin,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url], tls: pem },
  });
  assertEquals(created.status, 201, JSON.stringify(created.body));
  await using node = await joinedNode(ctl, "edge-tls");
  await until(node, "/", 200);
  // The node compiled the pair (its HTTPS listener serves it) from a row sealed under its own key.
  assertEquals(node.dataPlane.policy.current.match("shop.test")?.tls?.key, pem.key);
  for (const dir of [controller.dir, node.dir]) {
    const [config] = storedSiteConfigs(`${dir}/waf.db`);
    ok(!PEM_PRIVATE_KEY.test(config!), `no PEM private key in ${dir}`);
  }
  ok(
    storedSiteConfigs(`${controller.dir}/waf.db`)[0] !== storedSiteConfigs(`${node.dir}/waf.db`)[0],
  );
  ok(![...controller.logs, ...node.logs].some((l) => l.includes("PRIVATE KEY")));
});

Deno.test("the API-security shared secret reaches a node over the mTLS channel: HS256 tokens verify there, the secret is sealed in both stores and shown nowhere", async () => {
  const SECRET = "cluster-shared-secret-of-32-chars!";
  await using up = startUpstream();
  const ctl = await startController();
  await using controller = ctl.server;
  const admin = ctl.admin;
  const site = await callJson(controller, "POST", "/api/sites", {
    session: admin,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url] },
  });
  assertEquals(site.status, 201, JSON.stringify(site.body));
  const put = await callJson(controller, "PUT", "/api/apisec/config", {
    session: admin,
    body: {
      auth: {
        enabled: true,
        algorithms: ["HS256"],
        secret: SECRET,
        audience: "orders",
        routes: [{ id: "api", method: "*", path_pattern: "^/api/" }],
      },
    },
  });
  assertEquals(put.status, 200, JSON.stringify(put.body));
  await using node = await joinedNode(ctl, "edge-jwt");

  const sign = (key: string) =>
    new SignJWT({ sub: "client-1" }).setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(Math.floor(node.clock.now() / 1000)).setAudience("orders")
      .setExpirationTime(Math.floor(node.clock.now() / 1000) + 600)
      .sign(new TextEncoder().encode(key));
  const call = async (token?: string) => {
    const r = await hostFetch(`${node.dataUrl}/api/orders`, "shop.test", {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    await r.body?.cancel();
    return r.status;
  };
  const good = await sign(SECRET);
  await eventually(
    "the node accepting a token signed with the secret",
    async () => await call(good) === 200 ? true : undefined,
  );
  assertEquals(await call(await sign("another-secret-of-thirty-two-chars")), 401);
  assertEquals(await call(), 401);
  ok(up.seen.some((r) => r.path === "/api/orders"), "the accepted token reached the upstream");

  // Sealed in both stores, each under its own key; neither holds the opened wire form.
  const sealed = [controller.dir, node.dir].map((dir) => {
    const [config] = storedPolicyObjects(`${dir}/waf.db`, "apisec_config");
    ok(!config!.includes(SECRET) && !config!.includes("opened."), `no open secret in ${dir}`);
    return (JSON.parse(config!) as { auth: { secret_sealed: string } }).auth.secret_sealed;
  });
  ok(sealed[0]!.startsWith("v1.") && sealed[1]!.startsWith("v1."), JSON.stringify(sealed));
  ok(sealed[0] !== sealed[1]);

  // No API answer shows it: the settings on both machines say only that one is set.
  await completeSetup(node);
  const local = await login(node, ADMIN.username, ADMIN.password);
  for (const [server, session] of [[controller, admin], [node, local]] as const) {
    for (const path of ["/api/apisec/config", "/api/audit?limit=100"]) {
      const r = await callJson(server, "GET", path, { session });
      assertEquals(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
      ok(!JSON.stringify(r.body).includes(SECRET), `${path} shows no secret`);
    }
  }
  const view = await callJson(node, "GET", "/api/apisec/config", { session: local });
  assertEquals((view.body.auth as { secret_set: boolean }).secret_set, true);
  ok(![...controller.logs, ...node.logs].some((l) => l.includes(SECRET)), "no log holds it");
});
