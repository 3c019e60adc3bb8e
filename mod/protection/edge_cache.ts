/**
 * The edge's in-memory response cache: bounded by total bytes (least recently used entries go
 * first), keyed by site, host, path and query plus the request headers the response's `Vary`
 * names. What may be stored is decided by {@link cacheableTtl}; a request with credentials is
 * never answered from or stored in the cache.
 */

export interface CachedResponse {
  readonly status: number;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
  readonly expiresAt: number;
  /** Lower-case request header names the response varies on. */
  readonly vary: readonly string[];
  readonly siteId: string;
  readonly path: string;
}

const NO_STORE = /(?:^|,)\s*(?:no-store|private|no-cache)\b/i;
const MAX_AGE = /(?:^|,)\s*s-maxage\s*=\s*(\d+)|(?:^|,)\s*max-age\s*=\s*(\d+)/gi;

/**
 * Seconds a response may be cached for, or 0: only 200 responses with an explicit positive
 * `s-maxage`/`max-age`, without `no-store`, `private`, `no-cache`, `Set-Cookie` or `Vary: *`.
 */
export function cacheableTtl(status: number, headers: Headers): number {
  if (status !== 200 || headers.has("set-cookie")) return 0;
  const cc = headers.get("cache-control");
  if (cc === null || NO_STORE.test(cc)) return 0;
  if ((headers.get("vary") ?? "").includes("*")) return 0;
  let sMaxAge: number | undefined;
  let maxAge: number | undefined;
  for (const m of cc.matchAll(MAX_AGE)) {
    if (m[1] !== undefined) sMaxAge = Number(m[1]);
    if (m[2] !== undefined) maxAge = Number(m[2]);
  }
  return sMaxAge ?? maxAge ?? 0;
}

/** True when the request may use the cache at all (GET/HEAD without credentials). */
export function requestMayUseCache(req: Request): boolean {
  return (req.method === "GET" || req.method === "HEAD") && !req.headers.has("authorization") &&
    !req.headers.has("cookie");
}

export function varyNames(headers: Headers): string[] {
  const v = headers.get("vary");
  if (!v) return [];
  return v.split(",").map((s) => s.trim().toLowerCase()).filter((s) =>
    s !== "" && s !== "accept-encoding"
  );
}

/** What a cached answer is found by, before the headers its `Vary` names: site, host, target. */
export function cacheKey(siteId: string, host: string, pathAndQuery: string): string {
  return `${siteId}\n${host}\n${pathAndQuery}`;
}

export function createEdgeCache() {
  /** Base key → Vary names seen for it. */
  const varies = new Map<string, readonly string[]>();
  const entries = new Map<string, CachedResponse>();
  let bytes = 0;
  let maxBytes = 64 * 1024 * 1024;
  let hits = 0;
  let misses = 0;

  const fullKey = (base: string, vary: readonly string[], req: Request) =>
    vary.length === 0
      ? base
      : `${base}\n${vary.map((n) => `${n}=${req.headers.get(n) ?? ""}`).join("\n")}`;

  function drop(key: string): void {
    const e = entries.get(key);
    if (!e) return;
    entries.delete(key);
    bytes -= e.body.length;
  }

  function shrink(): void {
    for (const key of entries.keys()) {
      if (bytes <= maxBytes) break;
      drop(key);
    }
  }

  return {
    setMaxBytes(n: number): void {
      maxBytes = n;
      shrink();
    },
    /** The live entry for `base` (a {@link cacheKey}) and the request's varying headers. */
    get(base: string, req: Request, now: number): CachedResponse | undefined {
      const vary = varies.get(base);
      const key = vary === undefined ? undefined : fullKey(base, vary, req);
      const e = key === undefined ? undefined : entries.get(key);
      if (!e || !key) {
        misses++;
        return undefined;
      }
      if (e.expiresAt <= now) {
        drop(key);
        misses++;
        return undefined;
      }
      entries.delete(key);
      entries.set(key, e);
      hits++;
      return e;
    },
    put(host: string, pathAndQuery: string, req: Request, entry: CachedResponse): void {
      if (entry.body.length > maxBytes) return;
      const base = cacheKey(entry.siteId, host, pathAndQuery);
      varies.set(base, entry.vary);
      const key = fullKey(base, entry.vary, req);
      drop(key);
      entries.set(key, entry);
      bytes += entry.body.length;
      shrink();
    },
    /** Removes entries of a site (or all) under a path prefix; returns how many. */
    purge(siteId: string | null, pathPrefix: string | null): number {
      let n = 0;
      for (const [key, e] of [...entries]) {
        if (siteId !== null && e.siteId !== siteId) continue;
        if (pathPrefix !== null && !e.path.startsWith(pathPrefix)) continue;
        drop(key);
        n++;
      }
      if (siteId === null && pathPrefix === null) varies.clear();
      return n;
    },
    /**
     * `purge` for the management API, which answers the count: where entries also live in other
     * threads (data workers), the total every cache removed, and how many of those threads did
     * not answer in time (their counts missing from the total).
     */
    purgeAll(siteId: string | null, pathPrefix: string | null): Promise<PurgeCount> {
      return Promise.resolve({ purged: this.purge(siteId, pathPrefix), unanswered: 0 });
    },
    stats: () => ({ entries: entries.size, bytes, max_bytes: maxBytes, hits, misses }),
  };
}

export type EdgeCache = ReturnType<typeof createEdgeCache>;

/** What a purge across every cache removed; `unanswered`: caches whose count is not in it. */
export interface PurgeCount {
  readonly purged: number;
  readonly unanswered: number;
}
