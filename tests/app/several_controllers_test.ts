/**
 * Two composed controllers on one production database (the real PostgreSQL, a schema of the
 * test's own, dropped after; one key file, a data directory each): a notification raised on A is
 * delivered to a loopback webhook once and shows once on each controller's realtime feed, a
 * deployment task's due time runs once while each controller runs its own time sync, and a
 * deployment task in flight on one controller is running through the other's API.
 */
import postgres from "postgres";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { type ComposedServer, composeServer } from "../../app/compose.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { systemRandom } from "../../mod/core/random.ts";
import type { Subscriber } from "../../mod/monitor/event_bus.ts";
import { testConfig } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { errorCode } from "../_helpers/api_access.ts";
import { createOpsTasksRepo } from "../../db/ops_tasks_repo.ts";
import { testSchemaName } from "../_helpers/store.ts";
import { waitFor } from "../_helpers/wait.ts";

const available = await hasPostgres();
const PEER = { transport: "tcp" as const, hostname: "127.0.0.1", port: 40_000 };

/** One controller composed in-process (every area, no listener) on the shared schema. */
async function controller(
  o: { dir: string; schema: string; secretsFile: string; clock: FakeClock },
) {
  const composed: ComposedServer = await composeServer({
    config: testConfig({
      storage: {
        profile: "production",
        production: {
          postgresql: { dsn: postgresDsn(available), schema: o.schema },
          secrets_file: o.secretsFile,
        },
      },
    }),
    dataDir: o.dir,
  }, { clock: o.clock, random: systemRandom, logger: createMemoryLogger(), env: {} });
  await composed.start("http://127.0.0.1:9443");
  return Object.assign(composed, {
    dir: o.dir,
    clock: o.clock,
    api: async (path: string, init?: RequestInit) =>
      await composed.app.request(`http://127.0.0.1:9443${path}`, init, {
        remoteAddr: PEER,
        tls: false,
      }),
    async [Symbol.asyncDispose]() {
      await composed.close();
    },
  });
}

/** A schema and a directory of the test's own and one fake clock; drops the schema after `fn`. */
async function withDeployment(
  fn: (t: { dir: string; schema: string; secretsFile: string; clock: FakeClock }) => Promise<void>,
): Promise<void> {
  const schema = testSchemaName();
  await using dir = await tempDir();
  try {
    await fn({
      dir,
      schema,
      secretsFile: `${dir}/deployment.key`,
      clock: new FakeClock(Date.now()),
    });
  } finally {
    const sql = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}

function startReceiver() {
  const received: { event: string; title: string }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    received.push(JSON.parse(await req.text()));
    return Response.json({ ok: true });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const kindsOf = (s: Subscriber) => s.queue.map((e) => e.kind);

Deno.test({
  name:
    "two controllers: a notification is delivered once and shows once on each feed; a deployment task runs once (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await using receiver = startReceiver();
    await withDeployment(async ({ dir, schema, secretsFile, clock }) => {
      await using a = await controller({ dir: `${dir}/a`, schema, secretsFile, clock });
      await completeSetup(a);
      const admin = await login(a, ADMIN.username, ADMIN.password);
      await using b = await controller({ dir: `${dir}/b`, schema, secretsFile, clock });
      const created = await callJson(a, "POST", "/api/notification-channels", {
        session: admin,
        body: {
          name: "ops",
          type: "webhook",
          events: ["task.failed"],
          settings: { url: receiver.url },
        },
      });
      assertEquals(created.status, 201, JSON.stringify(created.body));

      const all = { kinds: new Set(["notification.created"]), sites: null };
      const feedA = a.monitor.bus.subscribe(all, "sse");
      const feedB = b.monitor.bus.subscribe(all, "sse");
      a.monitor.notify({ level: "warning", kind: "task.failed", title: "Once", body: "" });
      await Promise.all([a.monitor.dispatcher.runDue(), b.monitor.dispatcher.runDue()]);
      await Promise.all([a.monitor.dispatcher.runDue(), b.monitor.dispatcher.runDue()]);
      await waitFor(() => feedB.queue.length > 0, "the notification on B's feed");
      await new Promise((r) => setTimeout(r, 300));
      assertEquals(receiver.received.map((r) => r.title), ["Once"]);
      assertEquals(kindsOf(feedA), ["notification.created"]);
      assertEquals(kindsOf(feedB), ["notification.created"]);

      // The threat-feed sync is due every minute: one of the two runs each due time.
      const runs = () => a.ops.scheduler.runs("threat-feeds", 100).length;
      await a.ops.scheduler.idle();
      await b.ops.scheduler.idle();
      const before = runs();
      clock.advance(60_000);
      await Promise.all([a.ops.scheduler.tick(), b.ops.scheduler.tick()]);
      assertEquals(runs(), before + 1);
      const holders = (await a.coordinator.controllers()).filter((c) =>
        c.tasks.includes("ops.threat-feeds")
      );
      assertEquals(holders.length, 1);
      // Time sync is each controller's own (its host clock): no lease is taken for it.
      ok(!(await a.coordinator.controllers()).some((c) => c.tasks.includes("ops.time-sync")));
    });
  },
});

Deno.test({
  name:
    "two controllers: a deployment task in flight on A is running through B's API: GET says so, a manual run answers 409 (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withDeployment(async ({ dir, schema, secretsFile, clock }) => {
      await using a = await controller({ dir: `${dir}/a`, schema, secretsFile, clock });
      await completeSetup(a);
      const admin = await login(a, ADMIN.username, ADMIN.password);
      await using b = await controller({ dir: `${dir}/b`, schema, secretsFile, clock });
      await Promise.all([a.ops.scheduler.idle(), b.ops.scheduler.idle()]);
      // The check runs at start once: when A started the deployment, not when B joined it.
      assertEquals(b.ops.scheduler.runs("certificate-check", 10).length, 1);
      // A run in flight on A, as its row says (the check itself ends too soon to be caught).
      const repo = createOpsTasksRepo(a.db);
      const onA = JSON.stringify({ controller: a.coordinator.controllerId });
      const run = repo.started("certificate-check", "manual", "admin", clock.now(), onA);
      const path = "/api/ops/tasks/certificate-check";
      const task = await callJson(b, "GET", path, { session: admin });
      assertEquals((task.body.item as { running: boolean }).running, true);
      const refused = await callJson(b, "POST", `${path}/run`, { session: admin, body: {} });
      assertEquals([refused.status, errorCode(refused)], [409, "TASK_RUNNING"]);
      // A's run ends: B runs the task.
      repo.finished(run, "certificate-check", {
        at: clock.now(),
        result: "ok",
        durationMs: 1,
        error: null,
        detail: null,
      });
      const ran = await callJson(b, "POST", `${path}/run`, { session: admin, body: {} });
      assertEquals(ran.status, 200, JSON.stringify(ran.body));
      assertEquals((ran.body.run as { result: string }).result, "ok");
    });
  },
});

Deno.test({
  name:
    "a controller started while setup is pending keeps the first one's setup link working (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withDeployment(async ({ dir, schema, secretsFile, clock }) => {
      const a = await controller({ dir: `${dir}/a`, schema, secretsFile, clock });
      const link = await Deno.readTextFile(`${dir}/a/runtime/setup.url`);
      await using b = await controller({ dir: `${dir}/b`, schema, secretsFile, clock });
      // B found the live link in the store: it wrote none of its own and replaced nothing.
      ok(!(await Deno.stat(`${dir}/b/runtime/setup.url`).then(() => true, () => false)));
      assertEquals(await Deno.readTextFile(`${dir}/a/runtime/setup.url`), link);
      // A restart of A keeps its link too.
      await a.close();
      await using again = await controller({ dir: `${dir}/a`, schema, secretsFile, clock });
      assertEquals(await Deno.readTextFile(`${dir}/a/runtime/setup.url`), link);
      // The link made the deployment's first administrator, through B.
      const token = link.trim().split("#token=")[1]!;
      const r = await b.api("/api/setup", {
        method: "POST",
        headers: { "content-type": "application/json", "x-waf-setup-token": token },
        body: JSON.stringify(ADMIN),
      });
      assertEquals(r.status, 201, await r.text());
      // Signed in on A with the account made through B (login throws on a refusal).
      await login(again, ADMIN.username, ADMIN.password);
    });
  },
});
