/**
 * The API-token cleanup worker: deletes tokens that have expired or have had 180 days without
 * activity. Creating a token slides the next cleanup to 10 minutes later, but never past the
 * first creation of that batch plus 60 minutes, so a steady trickle of creations cannot
 * postpone it forever. Without creations it still runs every 6 hours. The scheduler's
 * `api-token-cleanup` task runs it (its interval, plus `schedule.deadline` as its own deadline). After the deletion
 * commits, an audit entry and an administrator notification are attempted; their failure is
 * logged and does not undo the cleanup.
 */
import type { ApiTokensRepo } from "../../db/api_tokens_repo.ts";
import type { Audit } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { Notifications } from "../core/notifications.ts";

export const SLIDE_MS = 10 * 60_000;
export const BATCH_BOUND_MS = 60 * 60_000;
export const IDLE_LIMIT_MS = 180 * 86_400_000;
export const PERIODIC_MS = 6 * 60 * 60_000;

/** Pure deadline bookkeeping, driven by the caller's clock. */
export class CleanupSchedule {
  #batchStart: number | undefined;
  #deadline: number | undefined;
  #nextPeriodic: number;

  constructor(now: number) {
    this.#nextPeriodic = now + PERIODIC_MS;
  }

  /** A token was created at `now`: slide the deadline, bounded by the batch start + 60 min. */
  tokenCreated(now: number): void {
    this.#batchStart ??= now;
    this.#deadline = Math.min(now + SLIDE_MS, this.#batchStart + BATCH_BOUND_MS);
  }

  /** The creation-driven deadline of the open batch, if any. */
  get deadline(): number | undefined {
    return this.#deadline;
  }

  due(now: number): boolean {
    return (this.#deadline !== undefined && now >= this.#deadline) || now >= this.#nextPeriodic;
  }

  /** A cleanup ran at `now`: close the batch and restart the periodic interval. */
  ran(now: number): void {
    this.#batchStart = undefined;
    this.#deadline = undefined;
    this.#nextPeriodic = now + PERIODIC_MS;
  }
}

export interface CleanupDeps {
  readonly repo: ApiTokensRepo;
  readonly audit: Audit;
  readonly notifications: Notifications;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly transaction: <T>(fn: () => T) => T;
}

export function createTokenCleanup(deps: CleanupDeps) {
  const schedule = new CleanupSchedule(deps.clock.now());

  /** Deletes stale tokens now; returns their ids. */
  function run(): string[] {
    const now = deps.clock.now();
    const removed = deps.transaction(() => deps.repo.deleteStale(now, now - IDLE_LIMIT_MS));
    schedule.ran(now);
    if (removed.length === 0) return removed;
    try {
      deps.transaction(() =>
        deps.audit.record({
          actor: { type: "system", name: "token-cleanup" },
          action: "api_token.cleanup",
          result: "success",
          detail: { removed: removed.length, ids: removed },
        })
      );
    } catch (err) {
      deps.logger.error("token cleanup audit failed", { error: err as Error });
    }
    try {
      deps.notifications.notifyAdmins({
        level: "info",
        kind: "api_token.cleanup",
        title: `${removed.length} API token(s) removed`,
        body: `Expired or inactive for 180 days: ${removed.join(", ")}`,
        params: { count: removed.length, tokens: removed.join(", ") },
        link: "/console/tokens",
      });
    } catch (err) {
      deps.logger.error("token cleanup notification failed", { error: err as Error });
    }
    deps.logger.info("api token cleanup", { removed: removed.length });
    return removed;
  }

  return {
    schedule,
    run,
    tokenCreated(): void {
      schedule.tokenCreated(deps.clock.now());
    },
    /** Runs the cleanup when the schedule says it is due; returns the removed ids. */
    tick(): string[] | undefined {
      if (!schedule.due(deps.clock.now())) return undefined;
      try {
        return run();
      } catch (err) {
        deps.logger.error("token cleanup failed", { error: err as Error });
        return undefined;
      }
    },
  };
}

export type TokenCleanup = ReturnType<typeof createTokenCleanup>;
