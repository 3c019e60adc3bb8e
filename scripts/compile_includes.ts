/**
 * What `deno compile` must embed beside the module graph of `main.ts`: modules loaded by URL at
 * run time (worker entry points, `new Worker(new URL("./x.ts", import.meta.url))`) and the
 * console's static files. A worker module missing here builds a binary that fails only when that
 * worker starts (a backup, the access-log writer), so `tests/scripts/compile_includes_test.ts`
 * finds every such URL in the source and requires it to be listed.
 */
export const COMPILE_INCLUDES: readonly string[] = [
  "console",
  "mod/access_log/writer_thread.ts",
  "app/data_worker.ts",
  "db/pg/pg_worker.ts",
  "mod/protection/ip_list_fold_worker.ts",
  "mod/protection/pattern_tester_worker.ts",
  "mod/ops/store_jobs_worker.ts",
];
