/**
 * Threat-intelligence feeds: fetch (or read the uploaded list), parse within bounds, store the
 * indicators and recompile. A sync that fails - unreachable URL, HTTP error, oversize or
 * unparsable body - records its error and keeps the feed's previous indicators. Feeds sync
 * when created or changed, on demand, and on their refresh interval.
 */
import { formatCidr, parseIp } from "../../engine/ip_address.ts";
import { parseFeed } from "../../engine/threat_intel.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { AuditContext, PolicyObjects, StoredObject } from "./policy_objects.ts";
import { type CompiledProtection, KIND } from "./protection_compile.ts";
import { parseStored, type ThreatFeedDoc, threatFeedSchema } from "./protection_schema.ts";

export const FEED_STATUS = "threat_feed_status";

/** Row ids of a feed's indicators and status (ids are unique across every kind). */
export const indicatorsId = (feedId: string): string => `${feedId}:indicators`;
const statusId = (feedId: string): string => `${feedId}:status`;

export interface FeedStatus {
  readonly last_sync_at: string | null;
  readonly last_result: "never" | "ok" | "error";
  readonly count: number;
  readonly invalid: number;
  readonly error: string | null;
}

const NEVER: FeedStatus = {
  last_sync_at: null,
  last_result: "never",
  count: 0,
  invalid: 0,
  error: null,
};

/** True when `text` is an IPv4 or IPv6 address (what a lookup accepts). */
export function isIpAddress(text: string): boolean {
  return parseIp(text) !== undefined;
}

/** A lookup's answer: whether the address is listed, and by which feeds with which action. */
export interface FeedLookup {
  readonly ip: string;
  readonly listed: boolean;
  readonly feeds: ReadonlyArray<{ id: string; name: string; action: string }>;
}

export interface ThreatFeedsDeps {
  readonly objects: PolicyObjects;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Recompiles the policy after new indicators are stored. */
  readonly rebuild: () => void;
  /** The protection the data plane enforces now (lookups answer against it). */
  readonly enforced: () => CompiledProtection | undefined;
  readonly fetch?: typeof fetch;
  readonly maxEntries?: number;
  readonly maxBytes?: number;
  readonly timeoutMs?: number;
}

async function readBounded(res: Response, maxBytes: number): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw new Error(`Feed is larger than the limit of ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}

export function createThreatFeeds(deps: ThreatFeedsDeps) {
  const { objects, clock } = deps;
  const maxEntries = deps.maxEntries ?? 500_000;
  const maxBytes = deps.maxBytes ?? 32 * 1024 * 1024;
  const doFetch = deps.fetch ?? fetch;
  const running = new Map<string, Promise<FeedStatus>>();

  function status(id: string): FeedStatus {
    const json = objects.singletonOf(FEED_STATUS, statusId(id));
    return json === undefined ? NEVER : JSON.parse(json) as FeedStatus;
  }

  async function body(feed: ThreatFeedDoc): Promise<string> {
    if (feed.content !== null) return feed.content;
    const res = await doFetch(feed.url!, {
      signal: AbortSignal.timeout(deps.timeoutMs ?? 30_000),
      redirect: "follow",
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`Feed answered HTTP ${res.status}`);
    }
    return await readBounded(res, maxBytes);
  }

  async function run(id: string, feed: ThreatFeedDoc): Promise<FeedStatus> {
    const previous = status(id);
    const now = new Date(clock.now()).toISOString();
    let next: FeedStatus;
    try {
      const parsed = parseFeed(await body(feed), feed.format, { maxEntries, maxBytes });
      if (!parsed.ok) throw new Error(parsed.error);
      objects.putInternal(KIND.indicators, indicatorsId(id), {
        networks: parsed.networks.map(formatCidr),
      });
      next = {
        last_sync_at: now,
        last_result: "ok",
        count: parsed.networks.length,
        invalid: parsed.invalid,
        error: null,
      };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      deps.logger.warn("threat feed sync failed; keeping its previous indicators", {
        feed: id,
        error: message,
      });
      next = { ...previous, last_sync_at: now, last_result: "error", error: message };
    }
    objects.putInternal(FEED_STATUS, statusId(id), next);
    deps.rebuild();
    return next;
  }

  function feedDoc(id: string): ThreatFeedDoc | undefined {
    const row = objects.rows(KIND.feed).find((r) => r.id === id);
    return row ? parseStored(threatFeedSchema, row.config) : undefined;
  }

  return {
    status,
    /** The feed with its last sync result. */
    decorate(item: StoredObject): StoredObject {
      const { content, ...rest } = item;
      return {
        ...rest,
        uploaded: content !== null && content !== undefined,
        status: status(item.id),
      };
    },
    /** Syncs one feed now (concurrent calls for one feed share the run). */
    sync(id: string): Promise<FeedStatus> | undefined {
      const feed = feedDoc(id);
      if (!feed) return undefined;
      let p = running.get(id);
      if (!p) {
        p = run(id, feed).catch((err) => {
          deps.logger.error("threat feed sync failed", { feed: id, error: err });
          return status(id);
        }).finally(() => running.delete(id));
        running.set(id, p);
      }
      return p;
    },
    /**
     * An operator's on-demand sync: runs it and audits the outcome (`threat_intel.feed.sync`);
     * undefined when there is no such feed.
     */
    async syncAudited(id: string, ctx: AuditContext): Promise<FeedStatus | undefined> {
      const run = this.sync(id);
      if (!run) return undefined;
      const s = await run;
      objects.auditOnly("threat_intel.feed.sync", ctx, { count: s.count, error: s.error }, {
        target: id,
        result: s.last_result === "ok" ? "success" : "failure",
      });
      return s;
    },
    /** Which feeds list `ip`, against the indicators the data plane enforces now. */
    lookup(ip: string): FeedLookup {
      const hits = deps.enforced()?.threat.lookupText(ip) ?? [];
      const feeds = [...new Map(hits.map((h) => [h.feedId, h])).values()]
        .map((h) => ({ id: h.feedId, name: h.feedName, action: h.action }));
      return { ip, listed: feeds.length > 0, feeds };
    },
    /** Drops a deleted feed's indicators and status. */
    forget(id: string): void {
      objects.removeInternal(KIND.indicators, indicatorsId(id));
      objects.removeInternal(FEED_STATUS, statusId(id));
      deps.rebuild();
    },
    /** Syncs every enabled feed whose refresh interval has passed (the `threat-feeds` task). */
    async tick(): Promise<void> {
      const now = clock.now();
      for (const row of objects.rows(KIND.feed)) {
        const feed = parseStored(threatFeedSchema, row.config);
        const last = status(row.id).last_sync_at;
        if (!feed.enabled) continue;
        if (last !== null && Date.parse(last) + feed.refresh_minutes * 60_000 > now) continue;
        await this.sync(row.id);
      }
    },
    async stop(): Promise<void> {
      await Promise.allSettled([...running.values()]);
    },
  };
}

export type ThreatFeeds = ReturnType<typeof createThreatFeeds>;
