/**
 * A data-plane worker's record batches: verdicts' rows apart from passed requests' rows, with
 * the passed ones counted per site, so the main thread can sample the passed ones alone.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { record } from "../_helpers/records.ts";
import { RecordBatch } from "../../app/data_worker_records.ts";
import type { FromWorker } from "../../app/data_worker_protocol.ts";
import { SiteCounterSet } from "../../mod/data_plane/site_counters.ts";
import { recordLines } from "../../mod/access_log/record.ts";

Deno.test("a worker's batch keeps verdicts' rows apart from passed rows, counted per site", () => {
  const posted: FromWorker[] = [];
  const batch = new RecordBatch(new SiteCounterSet(), (m) => posted.push(m));
  const blocked = record({ action: "block", status: 403, site: "shop" });
  const logged = record({ action: "log", site: "blog" });
  const passed = [record({ site: "shop" }), record({ site: null }), record({ site: "shop" })];
  batch.accessLog.push(passed[0]!);
  batch.accessLog.push(blocked);
  batch.accessLog.push(passed[1]!);
  batch.accessLog.push(logged);
  batch.accessLog.push(passed[2]!);
  batch.flush();
  assertEquals(posted.length, 1);
  const m = posted[0]!;
  if (m.t !== "records") throw new Error(`posted ${m.t}`);
  assertEquals(m.count, 2);
  assertEquals(m.lines, recordLines(blocked) + recordLines(logged));
  assertEquals(m.passCount, 3);
  assertEquals(m.passLines, passed.map(recordLines).join(""));
  assertEquals(new Map(m.passSites), new Map([["shop", 2], ["", 1]]));
  assertEquals(m.events.map((r) => r.trace_id), [blocked.trace_id]);
  // The next batch counts afresh.
  batch.accessLog.push(record({ site: "blog" }));
  batch.flush();
  const next = posted[1]!;
  if (next.t !== "records") throw new Error(`posted ${next.t}`);
  assertEquals(next.passSites, [["blog", 1]]);
  assertEquals(next.count, 0);
});
