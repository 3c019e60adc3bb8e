/**
 * The storage view (`GET /api/storage`) and the Redis connectivity test: the management
 * database (engine, where it is, schema version, whether it answers and its latency), this
 * controller's local SQLite file and the disk's free space, rows and the oldest record per table
 * of that file (counted on a worker thread), the access-log pipeline and its PostgreSQL sink, the
 * last Redis test, and the data directory's usage by kind (runtime logs, backups, support packs).
 *
 * The local file is `<data-dir>/waf.db` on the `temporary` profile (it holds everything) and
 * `<data-dir>/access_log.db` on `production` (this controller's access log only: the management
 * state is on PostgreSQL, reported under `management`).
 */
import { z } from "zod";
import type { Audit, AuditEvent } from "../core/audit.ts";
import { AppError, badRequest } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import type { PgSinkConfig } from "../access_log/pg_sink_config.ts";
import type { DatabaseFacts } from "../deployment/store_facts.ts";
import { LOG_FILE_NAME } from "./log_file.ts";
import { maskRedisUrl, type RedisTestResult, testRedis } from "./redis_probe.ts";
import { listBackups, runStoreJob } from "./store_jobs.ts";

const DAY_MS = 86_400_000;
const days = z.number().int().min(0).max(36_500);

/** `POST /api/storage/cleanup`: what to remove; at least one kind. */
export const cleanupInputSchema = z.strictObject({
  /** Access-log records older than this time (an ISO date or date-time, UTC when no zone). */
  access_logs_before: z.union([z.iso.date(), z.iso.datetime({ offset: true })]).optional(),
  /** Rotated runtime log files (`waf.log.N`; never the live `waf.log`) older than N days. */
  runtime_logs_older_than_days: days.optional(),
  /** The backup task's copies (`waf-YYYYMMDD-HHMMSS.db`) older than N days. */
  backups_older_than_days: days.optional(),
  /** Support packs (`*.zip` in `<data-dir>/support`) older than N days. */
  support_packs_older_than_days: days.optional(),
  /** After deleting records: a WAL checkpoint and VACUUM to give the space back (default true). */
  reclaim: z.boolean().default(true),
  /** Report what would be removed and freed, change nothing. */
  dry_run: z.boolean().default(false),
}).refine(
  (v) =>
    v.access_logs_before !== undefined || v.runtime_logs_older_than_days !== undefined ||
    v.backups_older_than_days !== undefined || v.support_packs_older_than_days !== undefined,
  {
    message:
      "name at least one of access_logs_before, runtime_logs_older_than_days, backups_older_than_days, support_packs_older_than_days",
  },
);
export type CleanupInput = z.infer<typeof cleanupInputSchema>;

interface FileItem {
  readonly name: string;
  readonly bytes: number;
  readonly modified: string;
}

/** Regular files of `dir` whose name matches and whose mtime is before `cutoff`, oldest first. */
async function oldFiles(dir: string, name: RegExp, cutoff: number) {
  const out: (FileItem & { path: string })[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      // readDir does not follow links: a link is neither a file here nor ever removed.
      if (!e.isFile || !name.test(e.name)) continue;
      const info = await Deno.lstat(`${dir}/${e.name}`);
      const mtime = info.mtime?.getTime() ?? 0;
      if (mtime >= cutoff) continue;
      out.push({
        name: e.name,
        path: `${dir}/${e.name}`,
        bytes: info.size,
        modified: new Date(mtime).toISOString(),
      });
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort((a, b) => a.modified.localeCompare(b.modified));
}

export interface StorageDeps {
  readonly dataDir: string;
  /** The local SQLite file: the whole store on `temporary`, the access log on `production`. */
  readonly localPath: string;
  /** The management database's facts (pinged when asked). */
  readonly management: () => DatabaseFacts;
  readonly clock: Clock;
  /** The access-log pipeline's counters and its sinks' state. */
  readonly accessLog: () => {
    queued: number;
    written: number;
    dropped: number;
    pruned: number;
    sinks: Record<string, unknown>[];
  };
  /** `storage.redis.url`, when configured. */
  readonly redisUrl?: string;
  /** Where the backup task writes (its current setting). */
  readonly backupFolder: () => string;
  /** Deletes access-log records older than `before` (on the writer thread, in slices). */
  readonly pruneAccessLogs: (before: number) => Promise<number>;
  /** The PostgreSQL sink's run-time configuration. */
  readonly pgSink: PgSinkConfig;
  readonly audit: Audit;
  readonly transaction: <T>(fn: () => T) => T;
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch {
    return 0;
  }
}

/** Bytes and files under `dir` (recursively); a missing folder is empty. */
export async function folderUsage(dir: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) {
        const sub = await folderUsage(path);
        bytes += sub.bytes;
        files += sub.files;
      } else if (e.isFile) {
        bytes += await fileSize(path);
        files++;
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return { bytes, files };
}

/** Free and total bytes of the file system holding `dir` (`df -Pk`), or null without `df`. */
async function disk(dir: string): Promise<{ free_bytes: number; total_bytes: number } | null> {
  try {
    const out = await new Deno.Command("df", {
      args: ["-Pk", dir],
      stdout: "piped",
      stderr: "null",
    })
      .output();
    const line = new TextDecoder().decode(out.stdout).trim().split("\n")[1] ?? "";
    const cols = line.split(/\s+/);
    const total = Number(cols[1]) * 1024;
    const free = Number(cols[3]) * 1024;
    return Number.isFinite(total) && Number.isFinite(free)
      ? { free_bytes: free, total_bytes: total }
      : null;
  } catch {
    return null;
  }
}

export function createStorage(deps: StorageDeps) {
  const dbPath = deps.localPath;
  let lastRedis: RedisTestResult | null = null;

  return {
    async status() {
      const iso = (t: number | null) => t === null ? null : new Date(t).toISOString();
      const [tables, free, logs, backups, packs] = await Promise.all([
        runStoreJob({ kind: "status", path: dbPath }),
        disk(deps.dataDir),
        folderUsage(`${deps.dataDir}/logs`),
        folderUsage(deps.backupFolder()),
        folderUsage(`${deps.dataDir}/support`),
      ]);
      const log = deps.accessLog();
      const management = deps.management();
      return {
        data_dir: deps.dataDir,
        management,
        store: {
          contents: management.engine === "sqlite" ? "management" : "access_log",
          path: dbPath,
          bytes: await fileSize(dbPath),
          wal_bytes: await fileSize(`${dbPath}-wal`),
          shm_bytes: await fileSize(`${dbPath}-shm`),
        },
        disk: free,
        // On production the local file has the whole schema but only the access log is used.
        tables: tables.filter((t) => management.engine === "sqlite" || t.table === "access_logs")
          .map((t) => ({ table: t.table, rows: t.rows, oldest: iso(t.oldest) })),
        access_log: {
          queued: log.queued,
          written: log.written,
          dropped: log.dropped,
          pruned: log.pruned,
        },
        postgresql: log.sinks.find((s) => s["postgresql"] === true) ?? null,
        sink: deps.pgSink.view(),
        redis: deps.redisUrl === undefined
          ? { configured: false, last_test: null }
          : { configured: true, endpoint: maskRedisUrl(deps.redisUrl), last_test: lastRedis },
        usage: {
          logs: { folder: `${deps.dataDir}/logs`, ...logs },
          backups: { folder: deps.backupFolder(), ...backups },
          support_packs: { folder: `${deps.dataDir}/support`, ...packs },
        },
      };
    },
    /** Connects to `storage.redis`, PINGs and reads the version; 409 when none is configured. */
    async testRedis(): Promise<RedisTestResult> {
      if (deps.redisUrl === undefined) {
        throw new AppError(
          409,
          "REDIS_NOT_CONFIGURED",
          'No Redis endpoint is configured: set "storage.redis.url" in waf.yaml',
        );
      }
      lastRedis = await testRedis(deps.redisUrl, { now: () => deps.clock.now() });
      return lastRedis;
    },
    sink: deps.pgSink,
    cleanup: (input: CleanupInput, ctx: Pick<AuditEvent, "actor" | "clientIp" | "traceId">) =>
      cleanup(deps, input, ctx),
  };
}

export type Storage = ReturnType<typeof createStorage>;

/**
 * Removes what `input` names (or with `dry_run` only reports it): access-log records before a
 * time, rotated runtime logs, the backup task's copies and support packs older than N days, then
 * gives the store's space back (a WAL checkpoint and VACUUM when pages are free). Audited as
 * `storage.cleanup`, dry runs too.
 */
async function cleanup(
  deps: StorageDeps,
  input: CleanupInput,
  ctx: Pick<AuditEvent, "actor" | "clientIp" | "traceId">,
) {
  const now = deps.clock.now();
  const dbPath = deps.localPath;
  let before: number | undefined;
  if (input.access_logs_before !== undefined) {
    const text = input.access_logs_before;
    before = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
    if (before > now) {
      throw badRequest(
        'Invalid field "access_logs_before": a time in the future would delete the whole access log',
        "access_logs_before",
      );
    }
  }
  const cutoff = (d: number | undefined) => d === undefined ? undefined : now - d * DAY_MS;
  const files = async (dir: string, name: RegExp, d: number | undefined) => {
    const c = cutoff(d);
    return c === undefined ? undefined : { folder: dir, items: await oldFiles(dir, name, c) };
  };
  const [runtime, packs] = await Promise.all([
    files(
      `${deps.dataDir}/logs`,
      new RegExp(`^${LOG_FILE_NAME.replace(".", "\\.")}\\.\\d+$`),
      input.runtime_logs_older_than_days,
    ),
    files(`${deps.dataDir}/support`, /\.zip$/, input.support_packs_older_than_days),
  ]);
  const backupCutoff = cutoff(input.backups_older_than_days);
  const backups = backupCutoff === undefined ? undefined : {
    folder: deps.backupFolder(),
    items: (await listBackups(deps.backupFolder())).filter((b) => b.mtime < backupCutoff).map((
      b,
    ) => ({
      name: b.name,
      path: b.path,
      bytes: b.bytes,
      modified: new Date(b.mtime).toISOString(),
    })),
  };
  const removeAll = async (set: typeof runtime) => {
    if (set === undefined || input.dry_run) return;
    for (const f of set.items) {
      await Deno.remove(f.path).catch((err) => {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      });
    }
  };
  let rows = 0;
  if (before !== undefined) {
    rows = input.dry_run
      ? (await runStoreJob({ kind: "access_logs_before", path: dbPath, before })).rows
      : await deps.pruneAccessLogs(before);
  }
  await removeAll(runtime);
  await removeAll(backups);
  await removeAll(packs);
  let reclaimed = null;
  if (!input.dry_run && input.reclaim && rows > 0) {
    // Any free page is worth a VACUUM here: the operator asked for the space back.
    reclaimed = await runStoreJob({
      kind: "optimize",
      path: dbPath,
      vacuumFreeRatio: Number.MIN_VALUE,
    });
  }
  const report = (set: typeof runtime) =>
    set === undefined ? null : {
      folder: set.folder,
      files: set.items.map(({ path: _, ...f }) => f),
      bytes: set.items.reduce((n, f) => n + f.bytes, 0),
    };
  const result = {
    dry_run: input.dry_run,
    access_logs: before === undefined ? null : { before: new Date(before).toISOString(), rows },
    runtime_logs: report(runtime),
    backups: report(backups),
    support_packs: report(packs),
    reclaim: reclaimed === null ? null : {
      vacuumed: reclaimed.vacuumed,
      bytes_reclaimed: reclaimed.bytes_reclaimed,
    },
    freed_bytes: [runtime, backups, packs].reduce(
      (n, set) => n + (report(set)?.bytes ?? 0),
      0,
    ) + (reclaimed?.bytes_reclaimed ?? 0),
  };
  deps.transaction(() =>
    deps.audit.record({
      ...ctx,
      action: "storage.cleanup",
      target: "storage",
      result: "success",
      detail: {
        dry_run: input.dry_run,
        access_logs_before: result.access_logs?.before ?? null,
        access_log_rows: rows,
        runtime_log_files: runtime?.items.length ?? null,
        backup_files: backups?.items.length ?? null,
        support_pack_files: packs?.items.length ?? null,
        freed_bytes: result.freed_bytes,
      },
    })
  );
  return result;
}
