/**
 * The audit of refused authentications by clients nobody has authenticated yet (wrong
 * passwords, lockouts, missing CAPTCHAs, wrong setup tokens, failed CAPTCHA answers). Writing
 * one record per refusal let one address append thousands of rows a second and slow the data
 * plane, so refusals are aggregated:
 *
 * - one record per action, client address and username per window (aligned, 5 minutes): the
 *   first refusal inserts it at once (so it is visible immediately), later ones only count in
 *   memory, and the count, the reasons and the latest trace id are written at each flush (the
 *   maintenance pass, a window's end, shutdown);
 * - at most `perClient` records per client and window: further usernames of that client fold
 *   into one record with username `*`; at most `total` records per window across clients:
 *   further clients fold into one record with client `*`;
 * - these records are kept `retentionMs` (90 days); every other audit record stays forever.
 *
 * So a flood costs memory bounded by the caps and a handful of writes per window. A client past
 * `slowAfter` refusals in the window is also answered `slowMs` late ({@link slowdownMs}): each
 * of its connections then costs one request a second, however fast it sends, while answers that
 * let someone in are never delayed.
 */
import type { Actor, Audit } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import type { EventLog } from "../core/event_log.ts";

export interface RefusalLimits {
  readonly windowMs: number;
  /** Records per client and window before that client's usernames fold into one. */
  readonly perClient: number;
  /** Records per window before further clients fold into one. */
  readonly total: number;
  /** How long aggregated authentication failures are kept. */
  readonly retentionMs: number;
  /** Clients tracked per window; beyond it they share one counter (memory stays bounded). */
  readonly maxClients: number;
  /** Refusals of one client in the window before its refusals are answered late. */
  readonly slowAfter: number;
  readonly slowMs: number;
}

export const REFUSAL_LIMITS: RefusalLimits = {
  windowMs: 5 * 60_000,
  perClient: 10,
  total: 500,
  retentionMs: 90 * 24 * 3_600_000,
  maxClients: 100_000,
  slowAfter: 30,
  slowMs: 1000,
};

export interface Refusal {
  /** `auth.login`, `auth.captcha`, `setup.auth`. */
  readonly action: string;
  /** Anonymous, or the account the typed username belongs to. */
  readonly actor: Actor;
  readonly target?: string;
  readonly clientIp: string;
  /** As typed (cut to 64 characters); absent where there is none (setup token). */
  readonly username?: string;
  readonly reason: string;
  readonly traceId?: string;
}

interface Aggregate {
  id: number;
  count: number;
  written: number;
  reasons: Record<string, number>;
  traceId?: string;
  readonly username: string | null;
  readonly overflow?: "client" | "all_clients";
}

const ANY = "*";

export function createRefusalAudit(deps: {
  audit: Audit;
  clock: Clock;
  transaction: <T>(fn: () => T) => T;
  limits?: RefusalLimits;
  /** The runtime log (rate-limited `info` lines). */
  events?: EventLog;
}) {
  const limits = deps.limits ?? REFUSAL_LIMITS;
  let windowStart = -1;
  let inserted = 0;
  const aggregates = new Map<string, Aggregate>();
  /** Records inserted per client in this window, and every refusal counted per client. */
  const perClient = new Map<string, { records: number; refusals: number }>();

  const detailOf = (a: Aggregate) => ({
    username: a.username,
    reason: Object.keys(a.reasons)[0],
    reasons: a.reasons,
    window_start: new Date(windowStart).toISOString(),
    window_end: new Date(windowStart + limits.windowMs).toISOString(),
    ...(a.overflow ? { overflow: a.overflow } : {}),
  });

  const flush = () => {
    const dirty = [...aggregates.values()].filter((a) => a.count !== a.written);
    if (dirty.length === 0) return;
    deps.transaction(() => {
      for (const a of dirty) {
        deps.audit.updateAggregate(a.id, a.count, detailOf(a), a.traceId);
        a.written = a.count;
      }
    });
  };

  const roll = (now: number) => {
    const start = now - (now % limits.windowMs);
    if (start === windowStart) return;
    flush();
    aggregates.clear();
    perClient.clear();
    inserted = 0;
    windowStart = start;
  };

  /** The aggregate this refusal joins: its own, its client's overflow, or everyone's. */
  const keyFor = (r: Refusal, client: { records: number }) => {
    const own = `${r.action}\n${r.clientIp}\n${r.username ?? ""}`;
    if (aggregates.has(own)) return { key: own, overflow: undefined };
    if (inserted >= limits.total) {
      return { key: `${r.action}\n${ANY}\n${ANY}`, overflow: "all_clients" as const };
    }
    if (client.records >= limits.perClient) {
      return { key: `${r.action}\n${r.clientIp}\n${ANY}`, overflow: "client" as const };
    }
    return { key: own, overflow: undefined };
  };

  return {
    /** Counts one refusal; inserts a record only for the first of its aggregate in a window. */
    record(r: Refusal): void {
      deps.events?.event("login_refused", `${r.action} refused`, {
        client_ip: r.clientIp,
        username: r.username,
        reason: r.reason,
        trace_id: r.traceId,
      });
      const now = deps.clock.now();
      roll(now);
      const clientKey = perClient.has(r.clientIp) || perClient.size < limits.maxClients
        ? r.clientIp
        : ANY;
      let client = perClient.get(clientKey);
      if (!client) {
        client = { records: 0, refusals: 0 };
        perClient.set(clientKey, client);
      }
      client.refusals++;
      const { key, overflow } = keyFor(r, client);
      const found = aggregates.get(key);
      if (found) {
        found.count++;
        found.reasons[r.reason] = (found.reasons[r.reason] ?? 0) + 1;
        found.traceId = r.traceId;
        return;
      }
      const a: Aggregate = {
        id: 0,
        count: 1,
        written: 1,
        reasons: { [r.reason]: 1 },
        traceId: r.traceId,
        username: overflow ? ANY : r.username ?? null,
        overflow,
      };
      a.id = deps.transaction(() =>
        deps.audit.recordAggregate(
          {
            actor: overflow ? { type: "anonymous" } : r.actor,
            action: r.action,
            target: overflow ? undefined : r.target,
            result: "failure",
            clientIp: overflow === "all_clients" ? ANY : r.clientIp,
            traceId: r.traceId,
            detail: detailOf(a),
          },
          now,
          1,
        )
      );
      aggregates.set(key, a);
      inserted++;
      if (overflow !== "all_clients") client.records++;
    },
    /** Refusals counted for `client` in the current window (for slowing a flooding client). */
    refusals(client: string): number {
      roll(deps.clock.now());
      return (perClient.get(client) ?? perClient.get(ANY))?.refusals ?? 0;
    },
    /** How late to answer this client's refusal: 0 until it passes `slowAfter` in the window. */
    slowdownMs(client: string): number {
      return this.refusals(client) > limits.slowAfter ? limits.slowMs : 0;
    },
    /** Writes the counts that grew since the last flush. */
    flush,
    /** Maintenance: flush, start a new window when due, and apply retention. */
    sweep(): number {
      roll(deps.clock.now());
      flush();
      return deps.audit.purgeAuthFailures(deps.clock.now() - limits.retentionMs);
    },
  };
}

export type RefusalAudit = ReturnType<typeof createRefusalAudit>;
