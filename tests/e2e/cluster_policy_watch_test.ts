/**
 * The node's policy watch over the real mTLS channel, in one process: at the default heartbeat
 * interval (5 s) a site and an IP block created on the controller are enforced by the node's data
 * plane within 1 s; shutting down either side while a watch waits does not wait for it; and a
 * controller without the watch route (an older build, here a relay that answers it 404) is
 * followed by heartbeat.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import {
  eventually,
  joinedNode,
  nodeHealth,
  startController,
  startNode,
} from "../_helpers/cluster.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { callJson } from "../_helpers/identity.ts";
import type { TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { ControllerClient } from "../../mod/cluster/controller_client.ts";
import { loadNodeIdentity } from "../../mod/cluster/node_identity.ts";
import { listenMtls } from "../../net/mtls_listen.ts";

/** The default `cluster.heartbeat_interval`, set explicitly (the helper's nodes beat every 1 s). */
const DEFAULT_HEARTBEAT = { heartbeat_interval: "5s" };
/** What issue #34 asks of a change's way to every data plane. */
const PROPAGATION_MS = 1_000;
/** Far below the controller's 25 s wait: a shutdown that waited for the watch would miss it. */
const SHUTDOWN_BOUND_MS = 10_000;

async function status(node: TestServer, host: string, ip = "192.0.2.10"): Promise<number> {
  const r = await hostFetch(`${node.dataUrl}/`, host, { headers: { "x-forwarded-for": ip } });
  await r.body?.cancel();
  return r.status;
}

const answering = (node: TestServer, host: string, want: number, ip?: string, ms?: number) =>
  eventually(
    `${host} from ${ip ?? "a client"} answering ${want}`,
    async () => await status(node, host, ip) === want ? true : undefined,
    ms,
  );

const watching = (node: TestServer) =>
  eventually("the node watching the policy", async () => {
    const h = await nodeHealth(node);
    return h.policy_watch === "watching" ? h : undefined;
  });

/** Resolves with how long `p` took; rejects when it takes longer than `ms`. */
async function within(what: string, p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("at the default heartbeat interval a site and an IP block on the controller are enforced by the node within 1 s", async () => {
  await using up = startUpstream();
  const ctl = await startController();
  await using controller = ctl.server;
  const post = async (path: string, body: unknown) => {
    const r = await callJson(controller, "POST", path, { session: ctl.admin, body });
    assertEquals(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
  };
  await post("/api/sites", {
    name: "shop",
    hosts: ["shop.test"],
    upstreams: [up.url],
    trusted_proxies: ["127.0.0.1/32"],
  });
  const node = await joinedNode(ctl, "edge-watch", { config: DEFAULT_HEARTBEAT });
  try {
    await answering(node, "shop.test", 200);
    await watching(node);

    await post("/api/sites", {
      name: "blog",
      hosts: ["blog.test"],
      upstreams: [up.url],
      trusted_proxies: ["127.0.0.1/32"],
    });
    await answering(node, "blog.test", 200, undefined, PROPAGATION_MS);

    await post("/api/protection/ip-lists", { action: "block", cidr: "203.0.113.0/24" });
    await answering(node, "shop.test", 403, "203.0.113.7", PROPAGATION_MS);
    assertEquals(await status(node, "shop.test", "192.0.2.10"), 200);
    assertEquals((await nodeHealth(node)).policy_watch, "watching");

    // The node's shutdown ends its waiting watch instead of waiting for the answer.
    await watching(node);
    await within("the node's shutdown", node.shutdown(), SHUTDOWN_BOUND_MS);
  } finally {
    await node[Symbol.asyncDispose]();
  }
});

Deno.test("a controller shutting down answers the node's waiting watch and does not wait for it", async () => {
  const ctl = await startController();
  await using node = await joinedNode(ctl, "edge-stop", { config: DEFAULT_HEARTBEAT });
  try {
    await watching(node);
    await within("the controller's shutdown", ctl.server.shutdown(), SHUTDOWN_BOUND_MS);
  } finally {
    await ctl.server[Symbol.asyncDispose]();
  }
  // The node keeps serving and follows by heartbeat once a controller is back.
  await eventually("the watch failing", async () => {
    const h = await nodeHealth(node);
    return h.policy_watch === "failing" ? h : undefined;
  });
  await within("the node's shutdown", node.shutdown(), SHUTDOWN_BOUND_MS);
});

Deno.test("a node of a controller without the watch route follows the policy by heartbeat", async () => {
  await using up = startUpstream();
  const ctl = await startController();
  await using controller = ctl.server;
  const first = await joinedNode(ctl, "edge-old", { config: DEFAULT_HEARTBEAT });
  const dir = first.dir;
  const id = (await loadNodeIdentity(dir))!;
  await first.shutdown();

  // An older controller: the same CA and paths, without `/policy/watch` (answered 404).
  const upstream = new ControllerClient(controller.clusterUrl!, id.caCert, {
    cert: id.cert,
    key: id.key,
  });
  const ca = controller.cluster.ca!;
  const old = await listenMtls({
    name: "old-cluster",
    hostname: "127.0.0.1",
    port: 0,
    cert: ca.server.cert,
    key: ca.server.key,
    ca: ca.ca.cert,
    maxBodyBytes: 1_048_576,
    handler: async (req) => {
      const path = new URL(req.url).pathname;
      if (path.endsWith("/policy/watch")) {
        return Response.json({ error: { code: "NOT_FOUND", message: "Not a cluster endpoint" } }, {
          status: 404,
        });
      }
      const body = req.method === "POST" ? await req.json() : undefined;
      const answer = await upstream.request(req.method as "GET" | "POST", path, body);
      return Response.json(answer.body, { status: answer.status });
    },
  });
  const meta = `${dir}/cluster/node.json`;
  const json = JSON.parse(await Deno.readTextFile(meta));
  await Deno.writeTextFile(
    meta,
    JSON.stringify({ ...json, controller_url: `https://127.0.0.1:${old.port}` }),
  );
  try {
    await using node = await startNode(`https://127.0.0.1:${old.port}`, {
      dir,
      name: "edge-old",
      // A short interval keeps the test short; the watch would make it needless.
      config: { heartbeat_interval: "1s" },
    });
    await eventually("the node falling back to the heartbeat", async () => {
      const h = await nodeHealth(node);
      return h.policy_watch === "unsupported" && h.link === "connected" ? h : undefined;
    });
    const site = await callJson(controller, "POST", "/api/sites", {
      session: ctl.admin,
      body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url] },
    });
    assertEquals(site.status, 201);
    await answering(node, "shop.test", 200);
    ok(
      node.logs.some((l) => l.includes("no policy watch; following its policy by heartbeat")),
      "the fallback is logged",
    );
    assertEquals(node.logs.filter((l) => l.includes("policy watch failed")).length, 0);
  } finally {
    await old.shutdown();
    upstream.close();
    await first[Symbol.asyncDispose]();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
