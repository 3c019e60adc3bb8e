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

export interface RefusalAuditDeps {
  readonly audit: Audit;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
  readonly limits?: RefusalLimits;
  /** The runtime log (rate-limited `info` lines). */
  readonly events?: EventLog;
}

/** Aggregated audit records of refusals (what `createRefusalAudit` returns). */
export interface RefusalAudit {
  /** Counts one refusal; inserts a record only for the first of its aggregate in a window. */
  record(r: Refusal): void;
  /** Refusals counted for `client` in the current window (for slowing a flooding client). */
  refusals(client: string): number;
  /** How late to answer this client's refusal: 0 until it passes `slowAfter` in the window. */
  slowdownMs(client: string): number;
  /** Writes the counts that grew since the last flush. */
  flush(): void;
  /** Maintenance: flush, start a new window when due, and apply retention. */
  sweep(): number;
}

type ClientCount = { records: number; refusals: number };
type Overflow = Aggregate["overflow"];

class RefusalAggregator implements RefusalAudit {
  readonly #deps: RefusalAuditDeps;
  readonly #limits: RefusalLimits;
  #windowStart = -1;
  #inserted = 0;
  readonly #aggregates = new Map<string, Aggregate>();
  /** Records inserted per client in this window, and every refusal counted per client. */
  readonly #perClient = new Map<string, ClientCount>();

  constructor(deps: RefusalAuditDeps) {
    this.#deps = deps;
    this.#limits = deps.limits ?? REFUSAL_LIMITS;
  }

  record(r: Refusal): void {
    this.#deps.events?.event("login_refused", `${r.action} refused`, {
      client_ip: r.clientIp,
      username: r.username,
      reason: r.reason,
      trace_id: r.traceId,
    });
    const now = this.#deps.clock.now();
    this.#roll(now);
    const client = this.#client(r.clientIp);
    client.refusals++;
    const { key, overflow } = this.#keyFor(r, client);
    const found = this.#aggregates.get(key);
    if (found) {
      found.count++;
      found.reasons[r.reason] = (found.reasons[r.reason] ?? 0) + 1;
      found.traceId = r.traceId;
      return;
    }
    this.#aggregates.set(key, this.#insert(r, overflow, now));
    this.#inserted++;
    if (overflow !== "all_clients") client.records++;
  }

  refusals(client: string): number {
    this.#roll(this.#deps.clock.now());
    return (this.#perClient.get(client) ?? this.#perClient.get(ANY))?.refusals ?? 0;
  }

  slowdownMs(client: string): number {
    return this.refusals(client) > this.#limits.slowAfter ? this.#limits.slowMs : 0;
  }

  flush(): void {
    const dirty = [...this.#aggregates.values()].filter((a) => a.count !== a.written);
    if (dirty.length === 0) return;
    this.#deps.transaction(() => {
      for (const a of dirty) {
        this.#deps.audit.updateAggregate(a.id, a.count, this.#detailOf(a), a.traceId);
        a.written = a.count;
      }
    });
  }

  sweep(): number {
    const deps = this.#deps;
    this.#roll(deps.clock.now());
    this.flush();
    return deps.audit.purgeAuthFailures(deps.clock.now() - this.#limits.retentionMs);
  }

  #detailOf(a: Aggregate) {
    return {
      username: a.username,
      reason: Object.keys(a.reasons)[0],
      reasons: a.reasons,
      window_start: new Date(this.#windowStart).toISOString(),
      window_end: new Date(this.#windowStart + this.#limits.windowMs).toISOString(),
      ...(a.overflow ? { overflow: a.overflow } : {}),
    };
  }

  /** Starts a new window when `now` is past the current one (flushing the old one first). */
  #roll(now: number): void {
    const start = now - (now % this.#limits.windowMs);
    if (start === this.#windowStart) return;
    this.flush();
    this.#aggregates.clear();
    this.#perClient.clear();
    this.#inserted = 0;
    this.#windowStart = start;
  }

  /** The counts of this client, or of every client past `maxClients` together. */
  #client(clientIp: string): ClientCount {
    const perClient = this.#perClient;
    const key = perClient.has(clientIp) || perClient.size < this.#limits.maxClients
      ? clientIp
      : ANY;
    let client = perClient.get(key);
    if (!client) {
      client = { records: 0, refusals: 0 };
      perClient.set(key, client);
    }
    return client;
  }

  /** The aggregate this refusal joins: its own, its client's overflow, or everyone's. */
  #keyFor(r: Refusal, client: { records: number }): { key: string; overflow: Overflow } {
    const own = `${r.action}\n${r.clientIp}\n${r.username ?? ""}`;
    if (this.#aggregates.has(own)) return { key: own, overflow: undefined };
    if (this.#inserted >= this.#limits.total) {
      return { key: `${r.action}\n${ANY}\n${ANY}`, overflow: "all_clients" };
    }
    if (client.records >= this.#limits.perClient) {
      return { key: `${r.action}\n${r.clientIp}\n${ANY}`, overflow: "client" };
    }
    return { key: own, overflow: undefined };
  }

  /** A new aggregate for `r`, its record inserted in the audit trail. */
  #insert(r: Refusal, overflow: Overflow, now: number): Aggregate {
    const deps = this.#deps;
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
          detail: this.#detailOf(a),
        },
        now,
        1,
      )
    );
    return a;
  }
}

/** The refusal audit over `deps.audit`, with `REFUSAL_LIMITS` unless told otherwise. */
export function createRefusalAudit(deps: RefusalAuditDeps): RefusalAudit {
  return new RefusalAggregator(deps);
}
