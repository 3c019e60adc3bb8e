/**
 * The compiled policy the data plane runs on: sites compiled once into immutable lookup
 * structures (exact host map, wildcard suffix map, upstream pools, trusted-proxy sets).
 * Every management change rebuilds it from the store and swaps one reference; a request reads
 * the reference once when it starts, so requests in flight finish on the policy they began
 * with.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { UpstreamKind } from "../../engine/path_normalize.ts";
import type { CompiledApiSec } from "../apisec/apisec_compile.ts";
import type { Clock } from "../core/clock.ts";
import type { CompiledProtection } from "../protection/protection_compile.ts";
import type { Site, StoredSiteRow } from "./site_schema.ts";
import { MAX_JUDGED_BODY } from "../../engine/body_tail.ts";
import { siteFromRow } from "./site_schema.ts";
import { type SiteCounters, SiteCounterSet } from "./site_counters.ts";
import { compileTrustedProxies, type TrustedProxies } from "./trusted_proxies.ts";
import {
  createUpstreamPool,
  type Upstream,
  type UpstreamHealthHook,
  type UpstreamPool,
} from "./upstream_pool.ts";

export type Mode = Site["mode"];
export type Level = Site["level"];
export type OversizeAction = NonNullable<Site["oversize_action"]>;

export interface CompiledSite {
  readonly id: string;
  readonly name: string;
  readonly hosts: readonly string[];
  readonly mode: Mode;
  readonly level: Level;
  /** How the site's upstream reads paths (what the path controls judge). */
  readonly upstreamKind: UpstreamKind;
  readonly maxBodyBytes: number;
  readonly inspectBodyBytes: number;
  /** The most of a body (or of its decoded text) judged as it streams. */
  readonly judgeBodyBytes: number;
  /** What happens past `judgeBodyBytes`, for a body as sent and for a decoded one. */
  readonly oversize: { readonly plain: OversizeAction; readonly decoded: OversizeAction };
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  readonly pool: UpstreamPool;
  readonly trustedProxies: TrustedProxies;
  readonly tls: { readonly cert: string; readonly key: string } | null;
  /** The site's request counters (kept by site id across policy swaps). */
  readonly counters: SiteCounters;
}

/** Told about a site's upstream health changes (see {@link UpstreamHealthHook}). */
export type SiteUpstreamHealth = (
  site: { readonly id: string; readonly name: string },
  upstream: Upstream,
  event: "down" | "failure" | "up",
) => void;

/** What compiling a policy binds into each site besides the site's own settings. */
export interface CompileOptions {
  /** Where each site's counters come from (default: a set of its own). */
  readonly counters?: SiteCounterSet;
  readonly upstreamHealth?: SiteUpstreamHealth;
}

export interface CompiledPolicy {
  /** Increases with every rebuild; logged and exposed for diagnostics. */
  readonly version: number;
  readonly sites: readonly CompiledSite[];
  /** The site for a Host header (port ignored, case-insensitive), or undefined. */
  match(host: string | null): CompiledSite | undefined;
  /** The protection controls (IP lists, ACL, rules, bot, rate limit, ALAP, edge, block page). */
  readonly protection?: CompiledProtection;
  /** API security (schemas, route limits); absent when the data plane runs without it. */
  readonly apisec?: CompiledApiSec;
  /** Counters of requests whose host matched no site. */
  readonly unmatched: SiteCounters;
}

/** Lower-case host without port or trailing dot; IPv6 literals keep their brackets. */
export function hostOf(header: string): string {
  let h = header;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    h = end > 0 ? h.slice(0, end + 1) : h;
  } else {
    const colon = h.indexOf(":");
    if (colon >= 0) h = h.slice(0, colon);
  }
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h.toLowerCase();
}

const HOST_CACHE_LIMIT = 1024;

/** The stored site each compiled site was built from: an unchanged one is reused as it is. */
const builtFrom = new WeakMap<CompiledSite, Site>();

function compileSite(
  site: Site,
  clock: Clock,
  previous: CompiledSite | undefined,
  options: CompileOptions,
): CompiledSite {
  if (previous !== undefined && builtFrom.get(previous) === site) return previous;
  const compiled = compileChangedSite(site, clock, previous, options);
  builtFrom.set(compiled, site);
  return compiled;
}

function compileChangedSite(
  site: Site,
  clock: Clock,
  previous: CompiledSite | undefined,
  options: CompileOptions,
): CompiledSite {
  // Keep the upstream pool (and its health state) when the upstream list did not change.
  const samePool = previous !== undefined &&
    previous.pool.upstreams.map((u) => u.origin).join(" ") === site.upstreams.join(" ");
  return {
    id: site.id,
    name: site.name,
    hosts: site.hosts,
    mode: site.mode,
    level: site.level,
    upstreamKind: site.upstream_kind,
    maxBodyBytes: site.max_body_bytes,
    inspectBodyBytes: Math.min(site.inspect_body_bytes, site.max_body_bytes),
    judgeBodyBytes: Math.min(site.max_body_bytes, MAX_JUDGED_BODY),
    oversize: oversizeOf(site),
    connectTimeoutMs: site.timeouts.connect_ms,
    responseTimeoutMs: site.timeouts.response_ms,
    pool: samePool
      ? previous.pool
      : createUpstreamPool(site.upstreams, clock, healthHook(site, options)),
    trustedProxies: compileTrustedProxies(site.trusted_proxies),
    tls: site.tls,
    counters: options.counters!.forSite(site.id, site.name),
  };
}

/**
 * A site's oversize action, or its level's default: a decoded body past the limit is blocked from
 * `balanced` on (a few bytes on the wire can decode to any size), a plain one is logged there.
 */
function oversizeOf(site: Site): CompiledSite["oversize"] {
  const chosen = site.oversize_action;
  if (chosen !== null) return { plain: chosen, decoded: chosen };
  if (site.level === "strict") return { plain: "block", decoded: "block" };
  return { plain: "log", decoded: site.level === "balanced" ? "block" : "log" };
}

function healthHook(site: Site, options: CompileOptions): UpstreamHealthHook | undefined {
  const report = options.upstreamHealth;
  if (report === undefined) return undefined;
  const who = { id: site.id, name: site.name };
  return (upstream, event) => report(who, upstream, event);
}

/** Each policy's upstreams by site id and origin, built at the first {@link upstreamOf}. */
const upstreamIndexes = new WeakMap<object, Map<string, Upstream>>();

/**
 * The upstream `origin` of site `siteId` in `policy`, or undefined. A data worker's report names
 * every upstream that answered in the last second: found through an index built once a policy,
 * not a search of the site list each, which would cost the squared number of sites a report.
 */
export function upstreamOf(
  policy: Pick<CompiledPolicy, "sites">,
  siteId: string,
  origin: string,
): Upstream | undefined {
  let index = upstreamIndexes.get(policy);
  if (index === undefined) {
    index = new Map();
    for (const site of policy.sites) {
      for (const u of site.pool.upstreams) index.set(`${site.id} ${u.origin}`, u);
    }
    upstreamIndexes.set(policy, index);
  }
  return index.get(`${siteId} ${origin}`);
}

/** Compiles sites into a policy; `options.previous` lends unchanged upstream pools. */
export function compilePolicy(
  sites: readonly Site[],
  clock: Clock,
  version: number,
  options: CompileOptions & { readonly previous?: CompiledPolicy } = {},
): CompiledPolicy {
  const { previous, ...compile } = options;
  const before = new Map(previous?.sites.map((s) => [s.id, s]));
  const counters = compile.counters ?? new SiteCounterSet();
  const bound = { ...compile, counters };
  const compiled = sites.map((s) => compileSite(s, clock, before.get(s.id), bound));
  const exact = new Map<string, CompiledSite>();
  /** `*.example.com` is stored under `example.com`. */
  const wildcard = new Map<string, CompiledSite>();
  for (const site of compiled) {
    for (const h of site.hosts) {
      if (h.startsWith("*.")) wildcard.set(h.slice(2), site);
      else exact.set(h, site);
    }
  }
  const cache = new Map<string, CompiledSite | null>();
  function lookup(host: string): CompiledSite | undefined {
    const found = exact.get(host);
    if (found) return found;
    if (wildcard.size === 0) return undefined;
    // The longest matching suffix wins: a.b.example.com tries b.example.com, then example.com.
    for (let dot = host.indexOf("."); dot >= 0; dot = host.indexOf(".", dot + 1)) {
      const site = wildcard.get(host.slice(dot + 1));
      if (site) return site;
    }
    return undefined;
  }
  return {
    version,
    sites: compiled,
    unmatched: counters.none,
    match(header: string | null): CompiledSite | undefined {
      if (header === null || compiled.length === 0) return undefined;
      const cached = cache.get(header);
      if (cached !== undefined) return cached ?? undefined;
      const site = lookup(hostOf(header));
      if (cache.size >= HOST_CACHE_LIMIT) cache.clear();
      cache.set(header, site ?? null);
      return site;
    },
  };
}

/** Holds the current policy and rebuilds it from the store. */
export interface Policy {
  readonly current: CompiledPolicy;
  /**
   * Recompiles from the store and swaps; returns the policy in force. Inside {@link coalesce}, a
   * rebuild soon after the previous one is deferred and shared with the writes that follow.
   */
  rebuild(): CompiledPolicy;
  /**
   * Runs a management write whose rebuilds may be coalesced with those of other writes, and
   * resolves once the policy in force contains its changes (the caller reads its own write).
   */
  coalesce<T>(write: () => Promise<T>): Promise<T>;
}

/**
 * How long after a build the next one waits when writes come in a burst, as a multiple of the
 * last build's time: the event loop spends at most 1/(1+N) of a burst compiling.
 */
const COALESCE_FACTOR = 8;
const COALESCE_MIN_MS = 2;
const COALESCE_MAX_MS = 200;

export function createPolicy(
  deps: {
    readonly listSites: () => readonly StoredSiteRow[];
    readonly clock: Clock;
    /** Compiles the protection controls into the same policy, so both swap together. */
    readonly compileProtection?: () => CompiledProtection;
    /** Compiles the API-security settings into the same policy. */
    readonly compileApiSec?: () => CompiledApiSec;
    /** Told after each swap (the runtime log's `policy_swap` event, the swap metric). */
    readonly swapped?: (policy: CompiledPolicy, compileMs: number) => void;
  } & CompileOptions,
): Policy {
  let version = 0;
  const options: CompileOptions = {
    counters: deps.counters ?? new SiteCounterSet(),
    upstreamHealth: deps.upstreamHealth,
  };
  // Stored sites parsed once per stored row (zod is the larger part of compiling a site): a row
  // unchanged since the last build gives the same `Site` object, and its compiled site is reused.
  let parsed = new Map<string, Site>();
  const sitesOf = (rows: readonly StoredSiteRow[]): Site[] => {
    const next = new Map<string, Site>();
    const out = rows.map((row) => {
      const key = `${row.id}\n${row.name}\n${row.updated_at}\n${row.config}`;
      const site = parsed.get(key) ?? siteFromRow(row);
      next.set(key, site);
      return site;
    });
    parsed = next;
    return out;
  };
  const build = (previous?: CompiledPolicy): CompiledPolicy => {
    const sites = compilePolicy(sitesOf(deps.listSites()), deps.clock, ++version, {
      ...options,
      previous,
    });
    if (deps.compileProtection === undefined && deps.compileApiSec === undefined) return sites;
    return {
      ...sites,
      protection: deps.compileProtection?.(),
      apisec: deps.compileApiSec?.(),
    };
  };
  let current = build();
  const swap = (): CompiledPolicy => {
    const started = performance.now();
    const previous = current;
    current = build(previous);
    // Requests in flight on the previous policy keep working: a released expression they
    // still use compiles a private copy for the call.
    previous.protection?.release();
    const ms = performance.now() - started;
    lastMs = ms;
    lastEnd = performance.now();
    deps.swapped?.(current, ms);
    return current;
  };
  let lastMs = 0;
  let lastEnd = -Infinity;
  /** A deferred build (a burst is under way) and who waits for it. */
  let pending:
    | { timer: ReturnType<typeof setTimeout>; done: PromiseWithResolvers<void> }
    | undefined;
  const runPending = () => {
    const p = pending;
    if (p === undefined) return;
    pending = undefined;
    clearTimeout(p.timer);
    try {
      swap();
    } finally {
      p.done.resolve();
    }
  };
  const writes = new AsyncLocalStorage<true>();
  return {
    get current() {
      return current;
    },
    rebuild() {
      if (pending !== undefined) {
        // Outside a coalesced write the caller expects its change in force now.
        if (writes.getStore() === undefined) runPending();
        return current;
      }
      const gap = Math.min(COALESCE_MAX_MS, Math.max(COALESCE_MIN_MS, lastMs * COALESCE_FACTOR));
      const wait = lastEnd + gap - performance.now();
      if (writes.getStore() === undefined || wait <= 0) return swap();
      pending = { timer: setTimeout(runPending, wait), done: Promise.withResolvers() };
      return current;
    },
    async coalesce(write) {
      const result = await writes.run(true, write);
      if (pending !== undefined) await pending.done.promise;
      return result;
    },
  };
}
