/**
 * The runtime log's events: what an operator watching `waf.log` wants to see besides start and
 * stop (blocked requests, refused logins, upstream failures, policy swaps, ALAP proposals), at
 * `info`. Each kind has its own token bucket, so an attack that makes thousands of events a
 * second writes a few lines a second: the bucket refills at `perSecond` up to `burst`, a line
 * without a token is counted instead of written, and the next written line of that kind says
 * how many were left out (`suppressed`). Blocks are sampled this way on the data plane's path:
 * a token check is a few arithmetic operations.
 */
import type { Clock } from "./clock.ts";
import type { LogFields, Logger } from "./logger.ts";

export type EventKind = "block" | "login_refused" | "upstream_failure" | "policy_swap" | "alap";

export interface Bucket {
  /** Lines written at once before the rate applies. */
  readonly burst: number;
  /** Lines per second after the burst. */
  readonly perSecond: number;
}

export const EVENT_BUCKETS: Readonly<Record<EventKind, Bucket>> = {
  block: { burst: 20, perSecond: 1 },
  login_refused: { burst: 10, perSecond: 0.5 },
  upstream_failure: { burst: 10, perSecond: 0.5 },
  policy_swap: { burst: 10, perSecond: 1 },
  alap: { burst: 10, perSecond: 0.2 },
};

interface State {
  tokens: number;
  at: number;
  suppressed: number;
}

export function createEventLog(
  deps: { logger: Logger; clock: Clock; buckets?: Partial<Record<EventKind, Bucket>> },
) {
  const buckets = { ...EVENT_BUCKETS, ...deps.buckets };
  const states = new Map<EventKind, State>();

  return {
    /** Writes `message` at info unless `kind` is over its rate; returns whether it was written. */
    event(kind: EventKind, message: string, fields: LogFields = {}): boolean {
      const bucket = buckets[kind];
      const now = deps.clock.now();
      let s = states.get(kind);
      if (!s) {
        s = { tokens: bucket.burst, at: now, suppressed: 0 };
        states.set(kind, s);
      }
      s.tokens = Math.min(bucket.burst, s.tokens + ((now - s.at) / 1000) * bucket.perSecond);
      s.at = now;
      if (s.tokens < 1) {
        s.suppressed++;
        return false;
      }
      s.tokens--;
      const suppressed = s.suppressed;
      s.suppressed = 0;
      deps.logger.info(message, { event: kind, ...fields, ...(suppressed ? { suppressed } : {}) });
      return true;
    },
  };
}

export type EventLog = ReturnType<typeof createEventLog>;
