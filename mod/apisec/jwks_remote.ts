/**
 * A remote JWKS (`jwks_url`): fetched off the request path when it is due
 * (`jwks_refresh_interval`), kept in `jwks_cache_file` so a restart works while the issuer is
 * down, and refreshed at once (awaited) only for a token whose `kid` is unknown, at most once per
 * {@link UNKNOWN_KID_REFRESH_MS}. A failed refresh keeps the last good key set and is logged.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { type KeyLookup, localJwks, NoKeyError, parseJwks } from "./jwt.ts";

/** The shortest gap between two refreshes caused by unknown key ids. */
export const UNKNOWN_KID_REFRESH_MS = 30_000;
const FETCH_TIMEOUT_MS = 5_000;
const MAX_JWKS_BYTES = 1 << 20;

export interface RemoteJwksOptions {
  readonly url: string;
  readonly cacheFile: string | null;
  readonly refreshMs: number;
}

export interface RemoteJwksDeps {
  readonly clock: Clock;
  readonly logger: Logger;
}

export class RemoteJwks {
  readonly #o: RemoteJwksOptions;
  readonly #deps: RemoteJwksDeps;
  #lookup: KeyLookup | undefined;
  #fetchedAt = Number.NEGATIVE_INFINITY;
  #unknownKidAt = Number.NEGATIVE_INFINITY;
  #inflight: Promise<boolean> | undefined;
  #cacheTried = false;
  /** Successful and failed fetches, for diagnostics and tests. */
  fetches = 0;

  constructor(o: RemoteJwksOptions, deps: RemoteJwksDeps) {
    this.#o = o;
    this.#deps = deps;
  }

  /** The key for a token header; refreshes as described above. */
  async lookup(header: { alg?: string; kid?: string }): Promise<CryptoKey | Uint8Array> {
    const now = this.#deps.clock.now();
    if (this.#lookup === undefined) {
      if (!this.#cacheTried) await this.#loadCache();
      // Without any key set, a failing issuer is still asked at most once per gap.
      if (this.#lookup === undefined && now - this.#fetchedAt >= UNKNOWN_KID_REFRESH_MS) {
        await this.refresh();
      }
    } else if (now - this.#fetchedAt >= this.#o.refreshMs) {
      // Due: refresh in the background; this request uses the keys in hand.
      void this.refresh();
    }
    const lookup = this.#lookup;
    if (lookup === undefined) throw new NoKeyError("no_key");
    try {
      return await lookup(header);
    } catch (err) {
      if (!(err instanceof NoKeyError) || now - this.#unknownKidAt < UNKNOWN_KID_REFRESH_MS) {
        throw err;
      }
      this.#unknownKidAt = now;
      if (!(await this.refresh())) throw err;
      return await this.#lookup!(header);
    }
  }

  /** Fetches the key set once (concurrent callers share the fetch); true when it succeeded. */
  refresh(): Promise<boolean> {
    return this.#inflight ??= this.#fetch().finally(() => this.#inflight = undefined);
  }

  async #fetch(): Promise<boolean> {
    const { url, cacheFile } = this.#o;
    this.fetches++;
    // Counted from the attempt: a failing issuer is asked again after one interval, not per request.
    this.#fetchedAt = this.#deps.clock.now();
    try {
      const res = await fetch(url, {
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        headers: { accept: "application/json" },
        redirect: "error",
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      if (text.length > MAX_JWKS_BYTES) throw new Error("key set over 1 MiB");
      const jwks = parseJwks(text);
      if (jwks === undefined) throw new Error("not a JWKS document");
      this.#lookup = localJwks(jwks);
      if (cacheFile !== null) {
        await Deno.writeTextFile(cacheFile, JSON.stringify(jwks), { mode: 0o600 }).catch((err) =>
          this.#deps.logger.warn("JWKS cache file not written", {
            file: cacheFile,
            error: err instanceof Error ? err.message : String(err),
          })
        );
      }
      return true;
    } catch (err) {
      this.#deps.logger.warn("JWKS refresh failed; the last good key set stays in use", {
        url,
        error: err instanceof Error ? err.message : String(err),
      });
      return false;
    }
  }

  async #loadCache(): Promise<void> {
    this.#cacheTried = true;
    const file = this.#o.cacheFile;
    if (file === null) return;
    const text = await Deno.readTextFile(file).catch(() => undefined);
    const jwks = text === undefined ? undefined : parseJwks(text);
    if (jwks === undefined) return;
    this.#lookup = localJwks(jwks);
    // Cached keys serve at once; the issuer is asked in the background.
    void this.refresh();
  }
}
