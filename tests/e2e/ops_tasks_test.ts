/**
 * Maintenance never blocks the data plane: with a large access log in the store, the retention
 * task (deleting it in slices on the writer thread) and the backup task (VACUUM INTO on a thread
 * of its own) run while the data plane keeps answering requests, one after another, all 200.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { addSite } from "../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const ROWS = 100_000;

function fillAccessLog(s: TestServer, ageDays: number): void {
  const time = s.clock.now() - ageDays * 86_400_000;
  const padding = "x".repeat(300);
  s.db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO access_logs
       (trace_id, time, site_id, client_ip, method, host, path, status, action, attack_class, record)
     SELECT lower(hex(randomblob(16))), ? + i, 's', '203.0.113.1', 'GET', 'shop.test', '/old', 200,
       'allow', NULL, json_object('pad', ?) FROM n`,
  ).run(ROWS, time, padding);
}

/** Runs `task` and sends data-plane requests until it ends; returns their statuses. */
async function answeredDuring(s: TestServer, task: string) {
  const { done } = await s.ops.scheduler.runNow(task, "test");
  let finished = false;
  const run = done.finally(() => finished = true);
  const statuses: number[] = [];
  while (!finished) {
    const res = await hostFetch(`${s.dataUrl}/during`, "shop.test");
    await res.body?.cancel();
    statuses.push(res.status);
  }
  return { run: await run, statuses };
}

Deno.test("the data plane answers during a large retention and a backup", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { storage: { access_logs: { retention_days: 30 } } },
  });
  addSite(s, up.url);
  // The retention run at start goes first, so the one below is the one that meets the rows.
  while (s.ops.scheduler.get("access-log-retention").last_run === null) {
    await new Promise((r) => setTimeout(r, 20));
  }
  fillAccessLog(s, 400);
  const count = () =>
    (s.db.prepare("SELECT COUNT(*) AS n FROM access_logs WHERE path = '/old'").get() as {
      n: number;
    }).n;
  assertEquals(count(), ROWS);

  const backup = await answeredDuring(s, "store-backup");
  assertEquals(backup.run.result, "ok", backup.run.error ?? "");
  ok(backup.statuses.length > 0, "requests were answered while the backup ran");
  ok(backup.statuses.every((x) => x === 200), JSON.stringify(backup.statuses));
  ok((backup.run.detail as { bytes: number }).bytes > ROWS * 300);

  const retention = await answeredDuring(s, "access-log-retention");
  assertEquals(retention.run.result, "ok", retention.run.error ?? "");
  assertEquals((retention.run.detail as { deleted: number }).deleted, ROWS);
  ok(retention.statuses.length > 0, "requests were answered while retention ran");
  ok(retention.statuses.every((x) => x === 200), JSON.stringify(retention.statuses));
  assertEquals(count(), 0);
  console.log(
    `answered during the backup: ${backup.statuses.length} (${backup.run.duration_ms} ms), during retention: ${retention.statuses.length} (${retention.run.duration_ms} ms)`,
  );
});
