/**
 * The storage view (`GET /api/storage`) and the Redis connectivity test: the store's files and
 * the disk's free space, rows and the oldest record per table (counted on a worker thread), the
 * access-log pipeline and its PostgreSQL sink, the last Redis test, and the data directory's
 * usage by kind (runtime logs, backups, support packs).
 */
import { AppError } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import { maskRedisUrl, type RedisTestResult, testRedis } from "./redis_probe.ts";
import { runStoreJob } from "./store_jobs.ts";

export interface StorageDeps {
  readonly dataDir: string;
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
  const dbPath = `${deps.dataDir}/waf.db`;
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
      return {
        data_dir: deps.dataDir,
        store: {
          path: dbPath,
          bytes: await fileSize(dbPath),
          wal_bytes: await fileSize(`${dbPath}-wal`),
          shm_bytes: await fileSize(`${dbPath}-shm`),
        },
        disk: free,
        tables: tables.map((t) => ({ table: t.table, rows: t.rows, oldest: iso(t.oldest) })),
        access_log: {
          queued: log.queued,
          written: log.written,
          dropped: log.dropped,
          pruned: log.pruned,
        },
        postgresql: log.sinks.find((s) => s["postgresql"] === true) ?? null,
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
  };
}

export type Storage = ReturnType<typeof createStorage>;
