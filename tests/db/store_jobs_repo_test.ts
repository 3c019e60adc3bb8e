/** The store-maintenance thread's SQL (db/store_jobs_repo.ts) on a real store. */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { record } from "../_helpers/records.ts";
import { testStore } from "../_helpers/store.ts";
import { createAccessLogRepo } from "../../db/access_log_repo.ts";
import { accessLogRowsBefore, optimizeStore, tableRows } from "../../db/store_jobs_repo.ts";
import { lineFormat } from "../../mod/access_log/lines.ts";
import { toRow } from "../../mod/access_log/record.ts";

Deno.test("tableRows() counts each watched table and dates its oldest row", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  repo.insertBatch([toRow(record({ time: 2000 })), toRow(record({ time: 1000 }))]);
  const rows = tableRows(store.db);
  assertEquals(rows.find((t) => t.table === "access_logs"), {
    table: "access_logs",
    rows: 2,
    oldest: 1000,
  });
  assertEquals(rows.find((t) => t.table === "audit_log")?.rows, 0);
  assertEquals(rows.find((t) => t.table === "audit_log")?.oldest, null);
});

Deno.test("accessLogRowsBefore() counts only the rows older than the time", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  repo.insertBatch([1000, 2000, 3000].map((time) => toRow(record({ time }))));
  assertEquals(accessLogRowsBefore(store.db, 2000), 1);
  assertEquals(accessLogRowsBefore(store.db, 3001), 3);
  assertEquals(accessLogRowsBefore(store.db, 0), 0);
});

Deno.test("optimizeStore() vacuums only when enough of the file is free", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  repo.insertBatch(Array.from({ length: 2000 }, () => toRow(record())));
  const kept = optimizeStore(store.db, 0.5);
  assertEquals(kept.vacuumed, false);
  assertEquals(kept.pages_after, kept.pages_before);
  repo.prune(Number.MAX_SAFE_INTEGER, 0);
  const vacuumed = optimizeStore(store.db, 0.1);
  assertEquals(vacuumed.vacuumed, true);
  ok(vacuumed.free_pages_before > 0, "the deleted rows left free pages");
  ok(vacuumed.pages_after < vacuumed.pages_before, "the file shrank");
  assertEquals(vacuumed.bytes_reclaimed > 0, true);
});
