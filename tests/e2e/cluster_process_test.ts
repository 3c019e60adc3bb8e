/**
 * The cluster as real `waf serve` processes on loopback, each with its own data directory and
 * ports (port 0): what an operator runs on three machines.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { eventually } from "../_helpers/cluster.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { spawnWaf, type WafProcess } from "../_helpers/process.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { tempDir } from "../_helpers/temp.ts";

const LISTEN =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';

Deno.test("waf serve as a node with neither a stored identity nor a join token exits 2 naming cluster.join_token", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `${LISTEN}cluster:\n  role: node\n  controller_url: "https://127.0.0.1:9"\n`,
  );
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  assertEquals(await waf.wait(), 2);
  assertMatch(
    waf.output(),
    /Invalid configuration in ".*waf\.yaml":\n\s+cluster\.join_token: expected a one-time join token/,
  );
  ok(!waf.output().includes("waf started"));
});

/** A `waf serve` process with its data directory and the addresses it printed. */
interface Served extends AsyncDisposable {
  readonly proc: WafProcess;
  readonly dir: string;
  readonly dataUrl: string;
  /** The controller's cluster listener (`https://127.0.0.1:PORT`), when it opened one. */
  readonly clusterUrl: string | undefined;
  api(path: string, init?: RequestInit): Promise<Response>;
}

async function serve(dir: string, yaml: string, env: Record<string, string> = {}): Promise<Served> {
  await Deno.writeTextFile(`${dir}/waf.yaml`, `${LISTEN}${yaml}`);
  const proc = spawnWaf(["serve", "--data-dir", dir], env);
  const m = await proc.waitFor(
    /data_plane=([\d.:]+) management=(http:\/\/[\d.:]+)(?: cluster=(https:\/\/[\d.:]+))?/,
  );
  return {
    proc,
    dir,
    dataUrl: `http://${m[1]}`,
    clusterUrl: m[3],
    api: (path, init) => fetch(`${m[2]}${path}`, init),
    [Symbol.asyncDispose]: () => proc[Symbol.asyncDispose](),
  };
}

const nodeYaml = (controllerUrl: string, name: string) =>
  `cluster:\n  role: node\n  controller_url: "${controllerUrl}"\n  name: ${name}\n  heartbeat_interval: 1s\n`;

/** Status of one request through `node`'s data plane. */
async function status(node: Served, path: string): Promise<number> {
  const r = await hostFetch(`${node.dataUrl}${path}`, "shop.test", {
    headers: { "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0" },
  });
  await r.body?.cancel();
  return r.status;
}

const until = (node: Served, path: string, want: number) =>
  eventually(
    `${path} answering ${want} through ${node.dir}`,
    async () => await status(node, path) === want ? true : undefined,
  );

const health = async (s: Served) => await (await s.api("/health/cluster")).json();

Deno.test("a controller and two node processes: join, policy enforced by both, revocation, the controller killed and back", async () => {
  await using up = startUpstream();
  await using ctlDir = await tempDir();
  await using dirA = await tempDir();
  await using dirB = await tempDir();
  let ctl = await serve(ctlDir, 'cluster:\n  listen: "127.0.0.1:0"\n');
  try {
    await completeSetup(ctl);
    let admin = await login(ctl, ADMIN.username, ADMIN.password);
    const post = async (path: string, body: unknown) => {
      const r = await callJson(ctl, "POST", path, { session: admin, body });
      assertEquals(r.status < 300, true, `${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    /** A custom rule made on the controller: block every path under `prefix`. */
    const blockPath = (prefix: string) =>
      post("/api/rules/custom", {
        name: `no ${prefix}`,
        target: { kind: "path" },
        pattern: `^${prefix}`,
        action: "block",
      });
    const clusterUrl = ctl.clusterUrl!;
    ok(clusterUrl, "the controller printed its cluster listener");
    const tokenA = (await post("/api/cluster/join-tokens", { note: "a" })).token as string;
    const tokenB = (await post("/api/cluster/join-tokens", { note: "b" })).token as string;

    await using a = await serve(dirA, nodeYaml(clusterUrl, "edge-a"), {
      WAF_CLUSTER_JOIN_TOKEN: tokenA,
    });
    await using b = await serve(dirB, nodeYaml(clusterUrl, "edge-b"), {
      WAF_CLUSTER_JOIN_TOKEN: tokenB,
    });
    for (const [node, token] of [[a, tokenA], [b, tokenB]] as const) {
      await node.proc.waitFor(/connected to the cluster controller/);
      ok(!node.proc.output().includes(token), "the token is never logged");
    }
    const idB = (await health(b)).node_id as string;

    // A site and a protection rule made on the controller are enforced by both nodes.
    await post("/api/sites", { name: "shop", hosts: ["shop.test"], upstreams: [up.url] });
    await blockPath("/admin/");
    for (const node of [a, b]) {
      await until(node, "/", 200);
      await until(node, "/admin/x", 403);
      assertEquals(await status(node, "/?q=<script>alert(1)</script>"), 403);
    }

    // Revoke B: its heartbeat is refused and it takes no new policy; A keeps following.
    await post(`/api/cluster/nodes/${idB}/revoke`, {});
    await eventually("B refused", async () => {
      const h = await health(b);
      return h.link === "refused" && h.problem === "NODE_REVOKED" ? true : undefined;
    });
    const changedAt = Date.now();
    await blockPath("/legacy/");
    await until(a, "/legacy/x", 403);
    // A heartbeat of B after the change was refused (B backs off: 2 s, 4 s, 8 s, ...).
    await eventually("a refused heartbeat of B after the change", async () => {
      const h = await health(b);
      return h.link === "refused" && Date.parse(h.last_attempt_at as string) > changedAt
        ? true
        : undefined;
    }, 60_000);
    // The controller audited the refusal (once: a revoked node's refusals are audited hourly).
    const refusals = await callJson(
      ctl,
      "GET",
      `/api/audit?action=cluster.node.authenticate&result=denied`,
      { session: admin },
    );
    assertEquals(
      (refusals.body.items as { target: string }[]).filter((i) =>
        i.target === `cluster_node:${idB}`
      ).length,
      1,
    );
    assertEquals(await status(b, "/legacy/x"), 200, "the revoked node took no new policy");
    assertEquals(await status(b, "/admin/x"), 403, "it keeps enforcing its last policy");

    // Kill the controller: A keeps serving with its last policy and says so.
    const port = new URL(clusterUrl).port;
    await ctl.proc.stop("SIGKILL");
    await eventually("A unreachable", async () => {
      const h = await health(a);
      return h.link === "unreachable" && h.status === "degraded" ? true : undefined;
    });
    assertEquals(await status(a, "/"), 200);
    assertEquals(await status(a, "/legacy/x"), 403);

    // The controller returns on its cluster port: A reconnects and follows new changes.
    ctl = await serve(ctlDir, `cluster:\n  listen: "127.0.0.1:${port}"\n`);
    admin = await login(ctl, ADMIN.username, ADMIN.password);
    await eventually(
      "A reconnected",
      async () => (await health(a)).link === "connected" || undefined,
    );
    await blockPath("/old/");
    await until(a, "/old/x", 403);
    assertEquals(await status(b, "/old/x"), 200);
    for (const node of [a, b]) assertEquals(await node.proc.stop("SIGTERM"), 0);
  } finally {
    await ctl[Symbol.asyncDispose]();
  }
});
