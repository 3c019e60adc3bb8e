/**
 * `/api/ops/tasks` on the composed app: every maintenance routine is a task, schedules change
 * and persist, a manual run answers with its result (409 while one runs), the backup task
 * writes checked copies and keeps `keep` of them, a failed run notifies and publishes
 * `task.finished`, and every change and run is audited.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import {
  adminAndViewer,
  auditItems,
  errorCode,
  mintToken,
  TOKENS_ON,
} from "../../_helpers/api_access.ts";
import { type ApiTarget, callJson, type Session } from "../../_helpers/identity.ts";
import type { BusEvent } from "../../../mod/monitor/event_bus.ts";
import { checkFile } from "../../../mod/ops/backup.ts";
import postgres from "postgres";
import { hasPostgres, ignoreWithout, postgresDsn, runs } from "../../_helpers/services.ts";
import { testSchemaName } from "../../_helpers/store.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { SCHEMA_VERSION } from "../../../db/migrations.ts";
import { DEPLOYMENT_LOG_TABLE, ensureDeploymentLog } from "../../../db/access_log_pg.ts";

type Task = {
  id: string;
  enabled: boolean;
  schedule: Record<string, unknown>;
  next_run_at: string | null;
  running: boolean;
  settings: Record<string, unknown>;
  last_run: Record<string, unknown> | null;
};

type Run = { id: number; result: string; error: string | null; detail: Record<string, unknown> };

/** Runs a task now; a run still going after the route's wait (202) is polled until it ends. */
async function runTask(server: ApiTarget, session: Session, id: string): Promise<Run> {
  const r = await callJson(server, "POST", `/api/ops/tasks/${id}/run`, { session, body: {} });
  if (r.status !== 200 && r.status !== 202) {
    throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  }
  let run = r.body.run as Run;
  while (run.result === "running") {
    await new Promise((res) => setTimeout(res, 100));
    const page = await callJson(server, "GET", `/api/ops/tasks/${id}/runs`, { session });
    run = (page.body.items as Run[]).find((x) => x.id === run.id)!;
  }
  return run;
}

const ROUTINES = [
  "access-log-retention",
  "api-token-cleanup",
  "identity-maintenance",
  "threat-feeds",
  "store-integrity",
  "store-backup",
  "store-optimize",
  "certificate-check",
  "certificate-renewal",
  "time-sync",
];

Deno.test("GET /api/ops/tasks lists every routine with its schedule; read:ops is enough to read", async () => {
  const { server, viewer } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const r = await callJson(server, "GET", "/api/ops/tasks", { session: viewer });
  assertEquals(r.status, 200);
  const items = r.body.items as Task[];
  assertEquals(items.map((t) => t.id).sort(), [...ROUTINES].sort());
  const byId = new Map(items.map((t) => [t.id, t]));
  assertEquals(byId.get("store-backup")!.schedule, { cron: "0 2 * * *" });
  assertEquals(byId.get("store-backup")!.settings, { folder: "", keep: 7 });
  assertEquals(byId.get("time-sync")!.enabled, false, "no time servers configured");
  // Retention runs at start, as it did before the scheduler.
  ok(byId.get("access-log-retention")!.next_run_at !== null);
  const w = await callJson(server, "PUT", "/api/ops/tasks/store-backup", {
    session: viewer,
    body: { enabled: false },
  });
  assertEquals([w.status, errorCode(w)], [403, "FORBIDDEN"]);
  const missing = await callJson(server, "GET", "/api/ops/tasks/nope", { session: viewer });
  assertEquals([missing.status, errorCode(missing)], [404, "NOT_FOUND"]);
});

Deno.test("PUT /api/ops/tasks/{id} changes schedule, jitter, enabled and settings, audited; bad input is a 400 naming the field", async () => {
  const { server, admin } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const r = await callJson(server, "PUT", "/api/ops/tasks/store-integrity", {
    session: admin,
    body: { schedule: { cron: "0 5 * * 1" }, jitter_ms: 0 },
  });
  assertEquals(r.status, 200);
  const item = r.body.item as Task;
  assertEquals(item.schedule, { cron: "0 5 * * 1" });
  const next = new Date(item.next_run_at!);
  assertEquals([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes()], [1, 5, 0]);
  const bad = await callJson(server, "PUT", "/api/ops/tasks/store-integrity", {
    session: admin,
    body: { schedule: { cron: "every tuesday" } },
  });
  assertEquals([bad.status, (bad.body.error as { field: string }).field], [
    400,
    "schedule.cron",
  ]);
  const badKeep = await callJson(server, "PUT", "/api/ops/tasks/store-backup", {
    session: admin,
    body: { settings: { keep: 0 } },
  });
  assertEquals([badKeep.status, (badKeep.body.error as { field: string }).field], [
    400,
    "settings.keep",
  ]);
  const off = await callJson(server, "PUT", "/api/ops/tasks/threat-feeds", {
    session: admin,
    body: { enabled: false, schedule: { every: "5m" } },
  });
  assertEquals([(off.body.item as Task).enabled, (off.body.item as Task).next_run_at], [
    false,
    null,
  ]);
  const audit = await auditItems(server, admin, "action=ops.task.update");
  assertEquals(audit.map((a) => [a.target, a.result]), [
    ["task:threat-feeds", "success"],
    ["task:store-backup", "failure"],
    ["task:store-integrity", "failure"],
    ["task:store-integrity", "success"],
  ]);
});

Deno.test("the backup task writes checked copies into its folder and keeps `keep` of them; runs are listed and audited", async () => {
  const { server, admin } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const folder = `${server.dir}/copies`;
  const set = await callJson(server, "PUT", "/api/ops/tasks/store-backup", {
    session: admin,
    body: { settings: { folder, keep: 2 } },
  });
  assertEquals(set.status, 200);
  const written: string[] = [];
  for (let i = 0; i < 3; i++) {
    const run = await runTask(server, admin, "store-backup");
    assertEquals(run.result, "ok");
    written.push(run.detail.path as string);
    server.clock.advance(1000);
  }
  const left = [...Deno.readDirSync(folder)].map((e) => e.name).sort();
  assertEquals(left, written.slice(1).map((p) => p.slice(folder.length + 1)).sort());
  for (const name of left) assertEquals(checkFile(`${folder}/${name}`).kind, "ok");
  assertEquals(Deno.statSync(written[2]!).mode! & 0o777, 0o600);
  const runs = await callJson(server, "GET", "/api/ops/tasks/store-backup/runs?limit=2", {
    session: admin,
  });
  assertEquals((runs.body.items as { trigger: string; actor: string }[]).map((r) => r.trigger), [
    "manual",
    "manual",
  ]);
  assertEquals((runs.body.items as { actor: string }[])[0]!.actor, "admin");
  const audit = await auditItems(server, admin, "action=ops.task.run");
  assertEquals(audit.length, 3);
  ok(audit.every((a) => a.result === "success" && a.target === "task:store-backup"));
});

Deno.test("a second run while one is in flight answers 409 TASK_RUNNING (audited)", async () => {
  const { server, admin } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const [a, b] = await Promise.all([
    callJson(server, "POST", "/api/ops/tasks/store-integrity/run", { session: admin, body: {} }),
    callJson(server, "POST", "/api/ops/tasks/store-integrity/run", { session: admin, body: {} }),
  ]);
  const refused = a.status === 409 ? a : b;
  assertEquals([refused.status, errorCode(refused)], [409, "TASK_RUNNING"]);
  const started = a.status === 409 ? b : a;
  ok(started.status === 200 || started.status === 202, String(started.status));
  while (server.ops.scheduler.isRunning("store-integrity")) {
    await new Promise((res) => setTimeout(res, 50));
  }
  const item = await callJson(server, "GET", "/api/ops/tasks/store-integrity", { session: admin });
  assertEquals((item.body.item as Task).last_run?.detail, { result: "ok", schema_version: 5 });
  const audit = await auditItems(server, admin, "action=ops.task.run");
  assertEquals(audit.map((x) => x.result).sort(), ["failure", "success"]);
});

Deno.test("a failed run raises a notification and a task.finished event, and is audited as a failure", async () => {
  const { server, admin } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const events: BusEvent[] = [];
  server.monitor.bus.listen((e) => {
    if (e.kind === "task.finished") events.push(e);
  });
  // A folder below a regular file can never be created.
  await Deno.writeTextFile(`${server.dir}/plain`, "");
  await callJson(server, "PUT", "/api/ops/tasks/store-backup", {
    session: admin,
    body: { settings: { folder: `${server.dir}/plain/backups` } },
  });
  const run = await runTask(server, admin, "store-backup");
  assertEquals(run.result, "error");
  ok(run.error!.length > 0);
  server.monitor.bus.flush();
  // Only the backup's own events: tasks run at start (the certificate check) may finish meanwhile.
  const backups = events.map((e) => JSON.parse(e.json()) as Record<string, unknown>)
    .filter((p) => p.task === "store-backup");
  assertEquals(backups.length, 1);
  const payload = backups[0]!;
  assertEquals([payload.task, payload.result, payload.trigger], [
    "store-backup",
    "error",
    "manual",
  ]);
  const notes = await callJson(server, "GET", "/api/notifications", { session: admin });
  const note = (notes.body.items as { kind: string; title: string }[]).find((n) =>
    n.kind === "task.failed"
  );
  ok(note, "a task.failed notification");
  ok(note.title.includes("Store backup"));
  const audit = await auditItems(server, admin, "action=ops.task.run");
  assertEquals(audit[0]!.result, "failure");
  const list = await callJson(server, "GET", "/api/ops/tasks/store-backup", { session: admin });
  assertEquals((list.body.item as Task).last_run?.result, "error");
});

Deno.test("creating an API token brings the token cleanup's next run to within 10 minutes", async () => {
  const { server, admin } = await adminAndViewer(TOKENS_ON, ["ops"]);
  await using _ = server;
  const before = await callJson(server, "GET", "/api/ops/tasks/api-token-cleanup", {
    session: admin,
  });
  const periodic = Date.parse((before.body.item as Task).next_run_at!);
  ok(periodic - server.clock.now() > 5 * 3_600_000, "6 hours out");
  await mintToken(server, admin, { note: "ci", permissions: ["read:ops"], expires_in_days: 1 });
  const after = await callJson(server, "GET", "/api/ops/tasks/api-token-cleanup", {
    session: admin,
  });
  assertEquals(Date.parse((after.body.item as Task).next_run_at!), server.clock.now() + 600_000);
  server.clock.advance(600_000);
  await server.ops.scheduler.tick();
  const ran = await callJson(server, "GET", "/api/ops/tasks/api-token-cleanup", {
    session: admin,
  });
  assertEquals((ran.body.item as Task).last_run?.result, "ok");
  ok(Date.parse((ran.body.item as Task).next_run_at!) - server.clock.now() > 5 * 3_600_000);
});

const pgAvailable = await hasPostgres();

Deno.test({
  name:
    "production: the store tasks check, dump and analyse the PostgreSQL store (needs postgresql)",
  ignore: ignoreWithout(pgAvailable),
  async fn() {
    const schema = testSchemaName();
    await using keys = await tempDir();
    try {
      const { server, admin } = await adminAndViewer({
        storage: {
          profile: "production",
          production: {
            postgresql: { dsn: postgresDsn(pgAvailable), schema },
            secrets_file: `${keys}/deployment.key`,
          },
        },
      }, ["ops"]);
      await using _ = server;
      const check = await runTask(server, admin, "store-integrity");
      assertEquals(check.result, "ok", check.error ?? "");
      assertEquals(check.detail.schema_version, SCHEMA_VERSION);
      ok((check.detail.tables as number) > 20);
      const optimize = await runTask(server, admin, "store-optimize");
      assertEquals(optimize.result, "ok", optimize.error ?? "");
      assertEquals(optimize.detail.analyzed, check.detail.tables);
      const folder = `${server.dir}/dumps`;
      const set = await callJson(server, "PUT", "/api/ops/tasks/store-backup", {
        session: admin,
        body: { settings: { folder, keep: 1 } },
      });
      assertEquals(set.status, 200);
      const backup = await runTask(server, admin, "store-backup");
      if (await runs("pg_dump").catch(() => false)) {
        assertEquals(backup.result, "ok", backup.error ?? "");
        ok((backup.detail.path as string).endsWith(".dump"));
        assertEquals([...Deno.readDirSync(folder)].length, 1);
      } else {
        assertEquals(backup.result, "error");
        ok(backup.error!.includes("pg_dump"), backup.error!);
      }
      // Retention reaches the deployment's access-log table (every controller's records).
      const sql = postgres(postgresDsn(pgAvailable), {
        max: 1,
        onnotice: () => {},
        connection: { search_path: schema },
      });
      try {
        await ensureDeploymentLog(sql, schema);
        const old = ["x1", "x2", "x3"].map((trace_id) => ({
          controller_id: "another",
          trace_id,
          time: 1_000,
          action: "block",
          search_text: "",
          record: "{}",
        }));
        await sql`INSERT INTO ${sql(DEPLOYMENT_LOG_TABLE)} ${sql(old)}`;
        const retention = await runTask(server, admin, "access-log-retention");
        assertEquals(retention.result, "ok", retention.error ?? "");
        assertEquals(retention.detail.deleted, 3);
        const left = await sql`SELECT COUNT(*)::int AS n FROM ${sql(DEPLOYMENT_LOG_TABLE)}`;
        assertEquals(left[0]!["n"], 0);
      } finally {
        await sql.end();
      }
      // No SQLite store was made for the management state.
      ok(![...Deno.readDirSync(server.dir)].some((e) => e.name === "waf.db"));
    } finally {
      const sql = postgres(postgresDsn(pgAvailable), { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    }
  },
});
