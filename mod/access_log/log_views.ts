/**
 * Which records an access-log answer reads, and says so: this controller's own (`local`, the
 * temporary profile) or, in the production profile, every controller's (`deployment`, the
 * production database), falling back to this controller's own while the database cannot
 * answer. Every answer carries `source` and `partial` (true: the deployment's records were
 * wanted and only this controller's were read). A failed read keeps the database skipped for
 * `retryMs`, so an outage costs one failed attempt, not one per request.
 */
import type { AccessLogReader } from "../../db/access_log_reader.ts";
import type { StoredAccessLogRow } from "../../db/access_log_rows.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";

export type LogSource = "deployment" | "local";

/** Where an answer was read. */
export interface SourceOf {
  readonly source: LogSource;
  readonly partial: boolean;
}

export interface Sourced<T> extends SourceOf {
  readonly value: T;
}

export interface LogViews {
  /** `query` on the deployment's records, or on this controller's when they cannot be read. */
  read<T>(query: (reader: AccessLogReader) => Promise<T>): Promise<Sourced<T>>;
  /**
   * One record: the deployment's, else this controller's own (a record not shipped yet is
   * found at once).
   */
  get(traceId: string): Promise<Sourced<StoredAccessLogRow | undefined>>;
  /** The deployment reader's health (`GET /api/logs/stats`), or null without one. */
  stats(): DeploymentReadStats | null;
  close(): Promise<void>;
}

export interface DeploymentReadStats {
  readonly up: boolean;
  readonly fallbacks: number;
  readonly last_error: string | null;
}

/** The temporary profile: this controller's records are the deployment's. */
export function localViews(local: AccessLogReader): LogViews {
  const whole = <T>(value: T): Sourced<T> => ({ value, source: "local", partial: false });
  return {
    read: async (query) => whole(await query(local)),
    get: async (traceId) => whole(await local.get(traceId)),
    stats: () => null,
    close: () => Promise.resolve(),
  };
}

export interface DeploymentViewsDeps {
  readonly deployment: AccessLogReader;
  readonly local: AccessLogReader;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A read without an answer by then falls back (ms). */
  readonly timeoutMs: number;
  /** How long the database is skipped after a failed read (ms); default 5 s. */
  readonly retryMs?: number;
  /** Drops the reader's connections (a stalled one never fails by itself). */
  readonly reset?: () => Promise<void>;
  readonly close?: () => Promise<void>;
}

class ReadTimeout extends Error {}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ReadTimeout(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The production profile: the deployment's records, this controller's while they cannot be read. */
export function deploymentViews(deps: DeploymentViewsDeps): LogViews {
  const retryMs = deps.retryMs ?? 5_000;
  let skipUntil = 0;
  let up = true;
  let fallbacks = 0;
  let lastError: string | null = null;

  async function read<T>(query: (reader: AccessLogReader) => Promise<T>): Promise<Sourced<T>> {
    if (deps.clock.now() >= skipUntil) {
      const attempt = query(deps.deployment);
      try {
        const value = await within(attempt, deps.timeoutMs);
        if (!up) deps.logger.info("access-log reads: the production database answers again");
        up = true;
        lastError = null;
        return { value, source: "deployment", partial: false };
      } catch (err) {
        // A late answer or failure of the abandoned attempt is nobody's concern.
        attempt.catch(() => {});
        lastError = err instanceof Error ? err.message : String(err);
        if (up) {
          deps.logger.warn(
            "access-log reads: the production database did not answer; reading this controller's records",
            { error: lastError, retry_ms: retryMs },
          );
        }
        up = false;
        skipUntil = deps.clock.now() + retryMs;
        if (err instanceof ReadTimeout) await deps.reset?.().catch(() => {});
      }
    }
    fallbacks++;
    return { value: await query(deps.local), source: "local", partial: true };
  }

  return {
    read,
    async get(traceId) {
      const found = await read((r) => r.get(traceId));
      if (found.value !== undefined || found.source === "local") return found;
      // Not shipped yet (or never written here): this controller's own record, if it has it.
      const own = await deps.local.get(traceId);
      return own === undefined ? found : { value: own, source: "local", partial: false };
    },
    stats: () => ({ up, fallbacks, last_error: lastError }),
    close: () => deps.close?.() ?? Promise.resolve(),
  };
}
