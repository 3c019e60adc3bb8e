/**
 * Issue #34's proof: two controllers (`waf serve` with `storage.profile: production`) on one
 * PostgreSQL database, and a data-plane node, as real processes. The controllers reach the
 * database through a relay the test can cut, so the outage is the database going away, not a
 * process being stopped.
 */
import postgres from "postgres";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { eventually } from "../_helpers/cluster.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, callJson, completeSetup, login, type Session } from "../_helpers/identity.ts";
import { spawnWaf, type WafProcess } from "../_helpers/process.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { testSchemaName } from "../_helpers/store.ts";
import { startRelayThread } from "../_helpers/tcp_relay_thread.ts";
import { tempDir } from "../_helpers/temp.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const available = await hasPostgres();

const LISTEN =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';
/** How long the database stays cut (the 30 s). */
const OUTAGE_MS = 30_000;
/** A write on one controller reaches every data plane within this (issue #34). */
const PROPAGATION_MS = 1_000;
const HOST = "shop.test";
const WARM_HOST = "warm.test";
const BLOCKED_IP = "203.0.113.7";

/** Every process the test started, for their output when it fails. */
const started: WafProcess[] = [];

/** A `waf serve` process with its data directory and the addresses it printed. */
interface Served extends AsyncDisposable {
  readonly proc: WafProcess;
  readonly dir: string;
  readonly dataUrl: string;
  readonly clusterUrl: string | undefined;
  api(path: string, init?: RequestInit): Promise<Response>;
}

async function serve(dir: string, yaml: string, env: Record<string, string> = {}): Promise<Served> {
  await Deno.writeTextFile(`${dir}/waf.yaml`, `${LISTEN}${yaml}`);
  const proc = spawnWaf(["serve", "--data-dir", dir], env);
  started.push(proc);
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

/** One production controller: the database through the relay, the shared key file. */
const controllerYaml = (dsn: string, schema: string, secretsFile: string) =>
  `storage:
  profile: production
  production:
    postgresql:
      dsn: "${dsn}"
      schema: ${schema}
      connect_timeout: 2s
      statement_timeout: 5s
    secrets_file: "${secretsFile}"
cluster:
  listen: "127.0.0.1:0"
`;

/**
 * The node at the default heartbeat interval (5 s): its policy watch, not the heartbeat, brings
 * it each change within the 1 s.
 */
const nodeYaml = (controllerUrl: string) =>
  `cluster:\n  role: node\n  controller_url: "${controllerUrl}"\n  name: edge-1\n`;

/** Status and trace id of one request through `s`'s data plane, from `ip` when given. */
async function request(
  s: Served,
  path: string,
  ip?: string,
  host = HOST,
): Promise<{ status: number; traceId: string }> {
  const headers: Record<string, string> = {
    "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
  };
  if (ip) headers["x-forwarded-for"] = ip;
  const r = await hostFetch(`${s.dataUrl}${path}`, host, { headers });
  await r.body?.cancel();
  return { status: r.status, traceId: r.headers.get("x-waf-trace-id") ?? "" };
}

/**
 * Polls every data plane in `planes` until each answers `want` for `path` (from `ip`); returns
 * the slowest one's time since `since`. Polling, not sleeping: the time measured is when the
 * change was seen.
 */
async function seenWithin(
  planes: Readonly<Record<string, Served>>,
  path: string,
  want: number,
  since: number,
  ip?: string,
): Promise<{ ms: number; each: string }> {
  const times = await Promise.all(
    Object.entries(planes).map(async ([name, s]) => {
      for (;;) {
        if ((await request(s, path, ip)).status === want) {
          return [name, performance.now() - since] as const;
        }
        if (performance.now() - since > 10_000) {
          throw new Error(`${name}'s data plane never answered ${want} for ${path}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    }),
  );
  return {
    ms: Math.max(...times.map(([, ms]) => ms)),
    each: times.map(([name, ms]) => `${name} ${Math.round(ms)} ms`).join(", "),
  };
}

Deno.test({
  name:
    "two production controllers and a node: shared sessions, writes enforced everywhere within 1 s, one task run, failover and a database outage (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const target = new URL(postgresDsn(available));
    const schema = testSchemaName();
    await using relay = await startRelayThread({
      hostname: target.hostname,
      port: Number(target.port),
    });
    const dsn = `postgres://${target.username}@127.0.0.1:${relay.port}${target.pathname}`;
    await using up = startUpstream();
    await using keys = await tempDir();
    await using dirA = await tempDir();
    await using dirB = await tempDir();
    await using dirN = await tempDir();
    const secretsFile = `${keys}/deployment.key`;
    const yaml = controllerYaml(dsn, schema, secretsFile);
    try {
      // Controller A makes the deployment and its key file; B starts on the same file once
      // setup is complete (a controller starting while setup is pending issues a new setup
      // token, which replaces the one A wrote into its setup file).
      await using a = await serve(dirA, yaml);
      ok((await Deno.stat(secretsFile)).isFile, "A created the deployment key file");
      await completeSetup(a);
      const session = await login(a, ADMIN.username, ADMIN.password);
      const on = (s: Served) =>
      async (
        method: string,
        path: string,
        body?: unknown,
        as: Session = session,
      ) => await callJson(s, method, path, { session: as, body });
      // A first site, made before the node joins, warms every data plane's proxy path (the
      // first request through a new process is slow on a loaded machine): what is timed below
      // is the propagation, not that first request.
      const warm = await on(a)("POST", "/api/sites", {
        name: "warm",
        hosts: [WARM_HOST],
        upstreams: [up.url],
      });
      assertEquals(warm.status, 201, JSON.stringify(warm.body));
      await using b = await serve(dirB, yaml);
      // The cluster CA and the join tokens are the deployment's: a token B issued joins the
      // node to A.
      const token = await on(b)("POST", "/api/cluster/join-tokens", { note: "edge-1" });
      assertEquals(token.status, 201, JSON.stringify(token.body));
      await using node = await serve(dirN, nodeYaml(a.clusterUrl!), {
        WAF_CLUSTER_JOIN_TOKEN: token.body.token as string,
      });
      await node.proc.waitFor(/connected to the cluster controller/, 20_000);
      for (const plane of [a, b, node]) {
        await eventually(
          `${WARM_HOST} served by ${plane.dataUrl}`,
          async () => (await request(plane, "/", undefined, WARM_HOST)).status === 200 || undefined,
        );
      }

      // The session A issued is valid on B, CSRF value included (the signing key is shared).
      const me = await callJson(b, "GET", "/api/auth/session", { session });
      assertEquals(me.status, 200, JSON.stringify(me.body));
      assertEquals((me.body.user as { username: string }).username, ADMIN.username);
      const onA = on(a);
      const onB = on(b);
      // A site created on B: served by A's data plane and the node's within 1 s.
      assertEquals((await request(a, "/")).status, 404, "no site yet");
      const site = await onB("POST", "/api/sites", {
        name: "shop",
        hosts: [HOST],
        upstreams: [up.url],
        trusted_proxies: ["127.0.0.1/32"],
      });
      assertEquals(site.status, 201, JSON.stringify(site.body));
      const siteSeen = await seenWithin({ A: a, node, B: b }, "/", 200, performance.now());
      ok(siteSeen.ms <= PROPAGATION_MS, `the site reached the data planes in: ${siteSeen.each}`);
      // An IP block created on B: enforced by A's data plane and the node's within 1 s.
      const block = await onB("POST", "/api/protection/ip-lists", {
        action: "block",
        cidr: "203.0.113.0/24",
      });
      assertEquals(block.status, 201, JSON.stringify(block.body));
      const blockSeen = await seenWithin(
        { A: a, node, B: b },
        "/",
        403,
        performance.now(),
        BLOCKED_IP,
      );
      ok(blockSeen.ms <= PROPAGATION_MS, `the block reached the data planes in: ${blockSeen.each}`);
      assertEquals((await request(a, "/", "198.51.100.1")).status, 200, "others pass");
      // A scheduled task due in a few seconds: set on B, run once across the deployment.
      const task = "api-token-cleanup";
      const due = Math.ceil((Date.now() + 3_000) / 1000) * 1000;
      const at = new Date(due);
      const cron = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
      const set = await onB("PUT", `/api/ops/tasks/${task}`, { schedule: { cron } });
      assertEquals(set.status, 200, JSON.stringify(set.body));
      assertEquals(
        set.body.item && (set.body.item as { next_run_at: string }).next_run_at,
        at.toISOString(),
      );
      // A block that happened on B's data plane is in A's attack log.
      const onBPlane = await request(b, "/from-b", BLOCKED_IP);
      assertEquals(onBPlane.status, 403);
      const logged = await eventually("B's block in A's attack log", async () => {
        const r = await onA("GET", `/api/logs?action=block&client_ip=${BLOCKED_IP}`);
        const items = r.body.items as { trace_id: string; path: string }[] | undefined;
        return items?.find((i) => i.trace_id === onBPlane.traceId);
      });
      assertEquals(logged.path, "/from-b");
      /** The task's scheduled runs that started at or after its due time. */
      const scheduledRuns = async (s: Served) => {
        const r = await on(s)("GET", `/api/ops/tasks/${task}/runs`);
        return (r.body.items as { trigger: string; started_at: string; result: string }[])
          .filter((run) => run.trigger === "schedule" && Date.parse(run.started_at) >= due - 1000);
      };
      const ran = await eventually("the scheduled run", async () => {
        const runs = await scheduledRuns(a);
        return runs.length > 0 && runs.every((r) => r.result !== "running") ? runs : undefined;
      });
      assertEquals(ran.length, 1, JSON.stringify(ran));
      assertEquals(ran[0]!.result, "ok");
      // Both controllers looked at the due time (each is woken by the other's schedule change):
      // the lease holder ran it, the other one did not.
      const controllers = await onB("GET", "/api/system/controllers");
      const holders = (controllers.body.controllers as { tasks: string[] }[]).filter((c) =>
        c.tasks.includes(`ops.${task}`)
      );
      assertEquals(holders.length, 1, JSON.stringify(controllers.body));
      // Controller A killed: B still serves, reads and writes, and its data plane enforces.
      assertEquals(await a.proc.stop("SIGKILL"), 137);
      assertEquals((await onB("GET", "/api/auth/session")).status, 200);
      const afterKill = await onB("POST", "/api/protection/ip-lists", {
        action: "block",
        cidr: "192.0.2.0/24",
      });
      assertEquals(afterKill.status, 201, JSON.stringify(afterKill.body));
      const killSeen = await seenWithin({ B: b }, "/", 403, performance.now(), "192.0.2.1");
      ok(killSeen.ms <= PROPAGATION_MS, `B enforced its own write in ${killSeen.each}`);
      // The database cut for 30 s: the data planes keep their last policy; writes are refused.
      await relay.set("refuse");
      const cutAt = performance.now();
      const refused = await eventually("a write refused with 503", async () => {
        const r = await onB("POST", "/api/protection/ip-lists", {
          action: "block",
          cidr: "198.51.100.0/24",
        });
        ok(r.status === 201 || r.status === 503, `${r.status} ${JSON.stringify(r.body)}`);
        return r.status === 503 ? r : undefined;
      }, 10_000);
      const error = refused.body.error as Record<string, unknown>;
      assertEquals(error.code, "STORE_UNAVAILABLE");
      assertMatch(String(error.message), /database/i);
      ok(!String(error.message).includes(dsn), "the DSN is not in the answer");
      assertMatch(String(error.trace_id), /^[0-9a-f]{32}$/);
      ok(typeof error.event_id === "string" && error.event_id.length > 0);
      const ready = await (await b.api("/health/ready")).json();
      assertEquals(ready.checks?.store, "unavailable", JSON.stringify(ready));
      let checks = 0;
      while (performance.now() - cutAt < OUTAGE_MS) {
        assertEquals((await request(b, "/", BLOCKED_IP)).status, 403, "B blocks");
        assertEquals((await request(b, "/", "192.0.2.1")).status, 403, "B blocks");
        assertEquals((await request(b, "/", "198.51.100.1")).status, 200, "B serves");
        assertEquals((await request(node, "/", BLOCKED_IP)).status, 403, "the node blocks");
        assertEquals((await request(node, "/", "198.51.100.1")).status, 200, "the node serves");
        const w = await onB("POST", "/api/protection/ip-lists", {
          action: "block",
          cidr: "198.51.100.0/24",
        });
        assertEquals(w.status, 503, `a write during the outage: ${JSON.stringify(w.body)}`);
        checks++;
        await new Promise((r) => setTimeout(r, 1_000));
      }
      ok(checks >= 10, `${checks} checks during the outage`);
      // The database back: B takes writes again, without a restart, and enforces them.
      await relay.set("up");
      const upAt = performance.now();
      const back = await eventually("a write accepted after the outage", async () => {
        const r = await onB("POST", "/api/protection/ip-lists", {
          action: "block",
          cidr: "198.51.100.0/24",
        });
        ok(r.status === 201 || r.status === 503, `${r.status} ${JSON.stringify(r.body)}`);
        return r.status === 201 ? performance.now() : undefined;
      }, 15_000);
      // Within seconds: the clients' reconnect delay is bounded (the driver's own reaches 20 s).
      ok(back - upAt < 5_000, `writes accepted ${Math.round(back - upAt)} ms after the database`);
      const backSeen = await seenWithin({ B: b }, "/", 403, back, "198.51.100.1");
      ok(backSeen.ms <= PROPAGATION_MS, `B enforced the write after the outage: ${backSeen.each}`);
      assertEquals((await (await b.api("/health/ready")).json()).status, "ready");
      assertEquals((await scheduledRuns(b)).length, 1, "the task ran once in the whole test");
      console.log(
        `site seen: ${siteSeen.each}; IP block seen: ${blockSeen.each}; writes back ${
          Math.round(back - upAt)
        } ms after the database`,
      );
      assertEquals(await node.proc.stop("SIGTERM"), 0);
      assertEquals(await b.proc.stop("SIGTERM"), 0);
    } catch (err) {
      // What each process printed, for a failure seen only in CI.
      for (const p of started) console.error(`--- waf output ---\n${p.output().slice(-6_000)}`);
      throw err;
    } finally {
      await relay.set("up");
      const sql = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    }
  },
});
