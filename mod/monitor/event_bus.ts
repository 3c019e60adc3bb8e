/**
 * The realtime event bus: producers publish named events, the SSE and WebSocket feeds subscribe.
 * Publishing is cheap enough for the data plane: an object into a bounded ring buffer and, when
 * someone listens, one timer per tick that fans the new events out. Each subscriber has its own
 * bounded queue: a slow or stalled one loses events (counted) and is disconnected after too many
 * losses, and never slows the publisher or the other subscribers. The ring buffer also serves
 * resumption (`Last-Event-ID`): ids grow across restarts (they start from the start time), so an
 * id the ring no longer holds is reported as a gap, never silently skipped.
 */
import type { Clock } from "../core/clock.ts";
import type { AccessRecord } from "../access_log/record.ts";

/** Every kind the feeds carry; docs/monitoring.md describes each payload. */
export const REALTIME_KINDS = [
  "access.blocked",
  "access.challenged",
  "config.changed",
  "notification.created",
  "upstream.health",
  "task.finished",
  "node.status",
  "time.sync",
  "ai.approval",
  "acme.certificate",
] as const;
export type RealtimeKind = typeof REALTIME_KINDS[number];

export interface BusEvent {
  readonly id: number;
  readonly kind: RealtimeKind;
  /** Milliseconds since the epoch. */
  readonly time: number;
  /** The site the event concerns (id and name), when there is one. */
  readonly siteId: string | null;
  readonly siteName: string | null;
  /** The payload as JSON, made once and shared by every subscriber. */
  json(): string;
  /** `{"id","kind","time","site_id","site","data"}` as JSON, made once (what the feeds send). */
  envelope(): string;
  /** True for an event another controller of the deployment published (relayed to this bus). */
  readonly relayed?: boolean;
}

function envelopeOf(e: BusEvent): string {
  return `{"id":"${e.id}","kind":"${e.kind}","time":"${new Date(e.time).toISOString()}","site_id":${
    JSON.stringify(e.siteId)
  },"site":${JSON.stringify(e.siteName)},"data":${e.json()}}`;
}

/** What a published event is made of (publishing is off the data plane's path). */
interface Published {
  readonly id: number;
  readonly kind: RealtimeKind;
  readonly time: number;
  readonly site: { readonly id: string; readonly name: string } | null | undefined;
  readonly payload: Readonly<Record<string, unknown>>;
}

class PlainEvent implements BusEvent {
  #json: string | undefined;
  #envelope: string | undefined;
  readonly id: number;
  readonly kind: RealtimeKind;
  readonly time: number;
  readonly siteId: string | null;
  readonly siteName: string | null;
  readonly payload: Readonly<Record<string, unknown>>;
  constructor(e: Published) {
    this.id = e.id;
    this.kind = e.kind;
    this.time = e.time;
    this.siteId = e.site?.id ?? null;
    this.siteName = e.site?.name ?? null;
    this.payload = e.payload;
  }
  json(): string {
    return this.#json ??= JSON.stringify(this.payload);
  }
  envelope(): string {
    return this.#envelope ??= envelopeOf(this);
  }
}

/** Another controller's event: its payload arrives as JSON. */
class RelayedEvent implements BusEvent {
  #envelope: string | undefined;
  readonly relayed = true;
  constructor(
    readonly id: number,
    readonly kind: RealtimeKind,
    readonly time: number,
    readonly siteId: string | null,
    readonly siteName: string | null,
    readonly data: string,
  ) {}
  json(): string {
    return this.data;
  }
  envelope(): string {
    return this.#envelope ??= envelopeOf(this);
  }
}

/** A data-plane event keeps the record and serialises the summary only when someone reads it. */
class AccessEvent implements BusEvent {
  #json: string | undefined;
  #envelope: string | undefined;
  readonly siteId: string | null;
  readonly siteName: string | null;
  readonly time: number;
  constructor(readonly id: number, readonly kind: RealtimeKind, readonly record: AccessRecord) {
    this.siteId = record.site_id;
    this.siteName = record.site;
    this.time = record.time;
  }
  json(): string {
    return this.#json ??= JSON.stringify(accessPayload(this.record));
  }
  envelope(): string {
    return this.#envelope ??= envelopeOf(this);
  }
}

/** What `access.blocked` and `access.challenged` carry (never the query, headers or body). */
export function accessPayload(r: AccessRecord) {
  const last = r.chain[r.chain.length - 1];
  return {
    trace_id: r.trace_id,
    time: new Date(r.time).toISOString(),
    site_id: r.site_id,
    site: r.site,
    client_ip: r.client_ip,
    method: r.method,
    host: r.host,
    path: r.path,
    status: r.status,
    action: r.action,
    check: last?.check ?? null,
    rule: last?.rule ?? r.finding?.rule ?? null,
    class: r.finding?.class ?? null,
  };
}

export interface SubscriberFilter {
  /** Kinds wanted; null = all. */
  readonly kinds: ReadonlySet<string> | null;
  /** Site ids or names wanted; null = all (events without a site always pass). */
  readonly sites: ReadonlySet<string> | null;
}

export interface BusOptions {
  /** Events kept for resumption. */
  readonly ringSize?: number;
  /** Events a subscriber may have waiting before new ones are dropped. */
  readonly queueSize?: number;
  /** Drops after which a subscriber is disconnected. */
  readonly dropLimit?: number;
}

export class Subscriber {
  readonly queue: BusEvent[] = [];
  dropped = 0;
  closed: string | null = null;
  /** Told once when the bus closes the subscriber (too slow, shutdown). */
  onClose: ((reason: string) => void) | undefined;
  #wake: (() => void) | undefined;
  constructor(readonly filter: SubscriberFilter, readonly transport: string) {}

  wants(e: BusEvent): boolean {
    const f = this.filter;
    if (f.kinds !== null && !f.kinds.has(e.kind)) return false;
    if (f.sites === null || e.siteId === null) return true;
    return f.sites.has(e.siteId) || (e.siteName !== null && f.sites.has(e.siteName));
  }

  /** Resolves when an event is queued, the subscriber closes, or `ms` pass. */
  wait(ms: number): Promise<void> {
    if (this.queue.length > 0 || this.closed !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  wake(): void {
    this.#wake?.();
  }
}

export interface BusStats {
  readonly published: Readonly<Record<string, number>>;
  readonly subscribers: Readonly<Record<string, number>>;
  readonly dropped: number;
  readonly disconnected: number;
}

export function createEventBus(deps: { clock: Clock }, options: BusOptions = {}) {
  const ringSize = options.ringSize ?? 4096;
  const queueSize = options.queueSize ?? 256;
  const dropLimit = options.dropLimit ?? 1024;
  const ring: (BusEvent | undefined)[] = new Array(ringSize);
  // Ids start from the start time (in ms, times 1000), so they keep growing across restarts.
  const firstId = deps.clock.now() * 1000;
  let nextId = firstId;
  /** Highest id already fanned out. */
  let fanned = nextId - 1;
  let scheduled = false;
  const subscribers = new Set<Subscriber>();
  const listeners: Array<(e: BusEvent) => void> = [];
  const published = new Map<string, number>();
  let dropped = 0;
  let disconnected = 0;

  function fanOut(): void {
    scheduled = false;
    const last = nextId - 1;
    // Events overwritten before this tick ran are gone for the listeners too.
    const from = Math.max(fanned + 1, nextId - ringSize);
    for (let id = from; id <= last; id++) {
      const e = ring[id % ringSize]!;
      published.set(e.kind, (published.get(e.kind) ?? 0) + 1);
      for (const l of listeners) l(e);
      for (const s of subscribers) {
        if (s.closed !== null || !s.wants(e)) continue;
        if (s.queue.length >= queueSize) {
          s.dropped++;
          dropped++;
          if (s.dropped >= dropLimit) close(s, "too_slow");
          continue;
        }
        s.queue.push(e);
      }
    }
    fanned = last;
    for (const s of subscribers) if (s.queue.length > 0) s.wake();
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    // Right after this turn: a zero `setTimeout` is a Node-style `Timeout` in Deno 2 (~5 µs to
    // make, a millisecond's wait), once per turn with a blocked or challenged request.
    setImmediate(fanOut);
  }

  function add(e: BusEvent): void {
    ring[e.id % ringSize] = e;
    nextId = e.id + 1;
    schedule();
  }

  function close(s: Subscriber, reason: string): void {
    if (s.closed !== null) return;
    s.closed = reason;
    if (reason === "too_slow") disconnected++;
    subscribers.delete(s);
    s.wake();
    s.onClose?.(reason);
  }

  return {
    /** Publishes one event; `site` names the site it concerns. */
    publish(
      kind: RealtimeKind,
      payload: Readonly<Record<string, unknown>>,
      site?: { readonly id: string; readonly name: string } | null,
    ): number {
      const id = nextId;
      add(new PlainEvent({ id, kind, time: deps.clock.now(), site, payload }));
      return id;
    },
    /**
     * Publishes an event another controller published (`data`: its payload as JSON); listeners
     * see it `relayed`, so it is not handed on again.
     */
    publishRelayed(e: {
      readonly kind: RealtimeKind;
      readonly time: number;
      readonly site: { readonly id: string; readonly name: string } | null;
      readonly data: string;
    }): number {
      const id = nextId;
      add(new RelayedEvent(id, e.kind, e.time, e.site?.id ?? null, e.site?.name ?? null, e.data));
      return id;
    },
    /** The data plane's blocked and challenged requests (other actions are ignored). */
    access(record: AccessRecord): void {
      const kind = record.action === "block"
        ? "access.blocked"
        : record.action === "challenge"
        ? "access.challenged"
        : undefined;
      if (kind !== undefined) add(new AccessEvent(nextId, kind, record));
    },
    /** Fans out what was published and not yet fanned out, now (before a query reads sketches). */
    flush(): void {
      if (scheduled) fanOut();
    },
    /** Sees every event in order, off the publisher's path (sketches, notifications). */
    listen(fn: (e: BusEvent) => void): void {
      listeners.push(fn);
    },
    subscribe(filter: SubscriberFilter, transport: string): Subscriber {
      const s = new Subscriber(filter, transport);
      subscribers.add(s);
      return s;
    },
    unsubscribe(s: Subscriber): void {
      close(s, "closed");
    },
    /**
     * Events after `lastId` that the filter wants, for resumption: `gap` is true when the ring
     * no longer holds some of them (or the id is not one of ours).
     */
    since(lastId: number, s: Subscriber): { events: BusEvent[]; gap: boolean } {
      const oldest = Math.max(firstId, nextId - ringSize);
      const gap = lastId < oldest - 1 || lastId >= nextId;
      const events: BusEvent[] = [];
      if (lastId >= nextId) return { events, gap };
      // Only what is already fanned out: the rest reaches the queue through the fan-out.
      for (let id = Math.max(lastId + 1, oldest); id <= fanned; id++) {
        const e = ring[id % ringSize]!;
        if (s.wants(e)) events.push(e);
      }
      return { events, gap };
    },
    stats(): BusStats {
      const byTransport: Record<string, number> = {};
      for (const s of subscribers) byTransport[s.transport] = (byTransport[s.transport] ?? 0) + 1;
      return {
        published: Object.fromEntries(published),
        subscribers: byTransport,
        dropped,
        disconnected,
      };
    },
    /** Disconnects every subscriber (shutdown). */
    close(): void {
      for (const s of [...subscribers]) close(s, "shutdown");
    },
  };
}

export type EventBus = ReturnType<typeof createEventBus>;
