/**
 * Heavy store maintenance off the event loop: each job runs on a thread of its own with its own
 * connection (`store_jobs_worker.ts`), and the backup folder keeps a bounded number of copies.
 */
import type { BackupResult, CheckResult } from "./backup.ts";

export type StoreJob =
  | { kind: "integrity"; path: string }
  | { kind: "backup"; path: string; out: string }
  | { kind: "optimize"; path: string; vacuumFreeRatio: number }
  | { kind: "status"; path: string }
  | { kind: "access_logs_before"; path: string; before: number };

/** Rows and the oldest record of one table (`oldest` in ms since the epoch). */
export interface TableStatus {
  readonly table: string;
  readonly rows: number;
  readonly oldest: number | null;
}

export interface OptimizeResult {
  readonly vacuumed: boolean;
  readonly free_pages_before: number;
  readonly pages_before: number;
  readonly pages_after: number;
  readonly bytes_reclaimed: number;
}

type Result<J extends StoreJob> = J extends { kind: "integrity" } ? CheckResult
  : J extends { kind: "backup" } ? BackupResult
  : J extends { kind: "status" } ? TableStatus[]
  : J extends { kind: "access_logs_before" } ? { rows: number }
  : OptimizeResult;

/** Runs one job on a fresh worker thread; rejects with the worker's error. */
export function runStoreJob<J extends StoreJob>(job: J): Promise<Result<J>> {
  const worker = new Worker(new URL("./store_jobs_worker.ts", import.meta.url), {
    type: "module",
  });
  return new Promise<Result<J>>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<{ ok: boolean; result?: unknown; error?: string }>) => {
      if (e.data.ok) resolve(e.data.result as Result<J>);
      else reject(new Error(e.data.error));
    };
    worker.onerror = (e) => {
      e.preventDefault();
      reject(new Error(e.message));
    };
    worker.postMessage(job);
  }).finally(() => worker.terminate());
}

/**
 * Backup file names the task writes and rotates: `waf-20260101-030000.db` (a SQLite store) or
 * `.dump` (`pg_dump`'s custom format, on production).
 */
const BACKUP_NAME = /^waf-\d{8}-\d{6}(-\d+)?\.(db|dump)$/;

export function backupName(time: number, ext: "db" | "dump" = "db"): string {
  const d = new Date(time).toISOString();
  return `waf-${d.slice(0, 10).replaceAll("-", "")}-${d.slice(11, 19).replaceAll(":", "")}.${ext}`;
}

/** The task's backups in `folder`, newest first. */
export async function listBackups(
  folder: string,
): Promise<{ name: string; path: string; bytes: number; mtime: number }[]> {
  const out = [];
  try {
    for await (const e of Deno.readDir(folder)) {
      if (!e.isFile || !BACKUP_NAME.test(e.name)) continue;
      const path = `${folder}/${e.name}`;
      const info = await Deno.stat(path);
      out.push({ name: e.name, path, bytes: info.size, mtime: info.mtime?.getTime() ?? 0 });
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
  // Newest first: by the name's time, then its `-N` (a later copy of the same second).
  const key = (name: string) => {
    const m = /^waf-(\d{8}-\d{6})(?:-(\d+))?/.exec(name)!;
    return `${m[1]}.${(m[2] ?? "0").padStart(6, "0")}`;
  };
  return out.sort((a, b) => key(b.name).localeCompare(key(a.name)));
}

/** Removes all but the newest `keep` backups; returns the removed names. */
export async function rotateBackups(folder: string, keep: number): Promise<string[]> {
  const removed = [];
  for (const b of (await listBackups(folder)).slice(keep)) {
    await Deno.remove(b.path);
    removed.push(b.name);
  }
  return removed;
}

/** Takes a backup into `folder` (created 0700 if absent) and rotates it to `keep` copies. */
export async function backupToFolder(
  dbPath: string,
  folder: string,
  keep: number,
  now: number,
): Promise<{ path: string; bytes: number; removed: string[] }> {
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const base = backupName(now);
  for (let i = 0; i < 100; i++) {
    const out = `${folder}/${i === 0 ? base : base.replace(/\.db$/, `-${i}.db`)}`;
    const r = await runStoreJob({ kind: "backup", path: dbPath, out });
    if (r.kind === "exists") continue;
    if (r.kind === "ok") {
      return { path: r.path, bytes: r.bytes, removed: await rotateBackups(folder, keep) };
    }
    if (r.kind === "corrupt") {
      throw new Error(`The backup copy failed its integrity check: ${r.problems.join("; ")}`);
    }
    throw new Error(
      `The backup folder "${r.folder}" is ${r.kind === "no_folder" ? "missing" : "not a folder"}`,
    );
  }
  throw new Error(`No free backup name in "${folder}"`);
}
