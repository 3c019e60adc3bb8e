/**
 * JWT authentication at the proxy: for a request on a route that needs a token, the bearer token
 * is verified against the compiled `auth` settings. The key follows the token's algorithm
 * family: an HS token only ever meets the shared secret, and an RSA, EC or EdDSA token only public
 * keys (the local JWKS file, the remote JWKS, the PEM), so a token signed with HMAC over a public
 * key (algorithm confusion) can never verify. Successful results are cached by token until it
 * expires (bounded), so a client re-sending one token pays the signature check once.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { CompiledAuth } from "./apisec_compile.ts";
import { isHmac } from "./apisec_schema.ts";
import { RemoteJwks } from "./jwks_remote.ts";
import {
  importPem,
  type JwtFailure,
  type KeyLookup,
  localJwks,
  NoKeyError,
  verifyJwt,
  type VerifyKey,
} from "./jwt.ts";

export type AuthVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: JwtFailure | "missing" };

const OK: AuthVerdict = { ok: true };
const MISSING: AuthVerdict = { ok: false, reason: "missing" };
const CACHE_LIMIT = 10_000;
/** How long a token without `exp` (accepted with `require_exp: false`) stays cached. */
const NO_EXP_CACHE_MS = 60_000;
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*) *$/i;

export interface TokenAuthDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  /** Opens the sealed shared secret. */
  readonly openSecret: (sealed: string) => Promise<Uint8Array>;
}

interface Verifier {
  readonly lookup: KeyLookup;
  /**
   * `Authorization` header value -> time (ms) until which its token counts as verified (keyed by
   * the whole header, so a repeated one is found before any parsing).
   */
  readonly cache: Map<string, number>;
}

/**
 * Where the keys of `a` come from, by the token's algorithm family: an HS token meets only the
 * shared secret (opened once), any other only the public keys, tried in turn (the local JWKS,
 * the remote one, the PEM).
 */
function keyLookup(
  a: CompiledAuth,
  { local, remote }: { local?: KeyLookup; remote?: RemoteJwks },
  deps: TokenAuthDeps,
): KeyLookup {
  let secret: Promise<Uint8Array> | undefined;
  const sealed = a.secretSealed;
  const pemKeys = new Map<string, Promise<CryptoKey>>();
  const pem = a.pem;
  const fromPem: KeyLookup | undefined = pem === null ? undefined : (h) => {
    const alg = h.alg ?? "";
    let k = pemKeys.get(alg);
    if (!k) {
      k = importPem(pem, alg).catch(() => Promise.reject(new NoKeyError("no_key")));
      pemKeys.set(alg, k);
    }
    return k;
  };
  const publicSources = [
    local,
    remote && ((h: { alg?: string; kid?: string }) => remote.lookup(h)),
    fromPem,
  ].filter(
    (s): s is KeyLookup => s !== undefined,
  );
  return async (h): Promise<VerifyKey> => {
    if (isHmac(h.alg ?? "")) {
      if (sealed === null) throw new NoKeyError("no_key");
      // A secret this process cannot open (sealed under another data directory's key, or
      // damaged) is no key at all, not a malformed token: the token may well be fine.
      return await (secret ??= deps.openSecret(sealed).catch((err) => {
        deps.logger.error("cannot open the API-security shared secret; HS tokens are refused", {
          reason: "no_key",
          error: String((err as Error)?.message ?? err),
        });
        throw new NoKeyError("no_key");
      }));
    }
    let last: unknown = new NoKeyError("no_key");
    for (const source of publicSources) {
      try {
        return await source(h);
      } catch (err) {
        if (!(err instanceof NoKeyError)) throw err;
        last = err;
      }
    }
    throw last;
  };
}

export function createTokenAuth(deps: TokenAuthDeps) {
  /** Remote key sets by URL, cache file and interval: kept across policy rebuilds. */
  const remotes = new Map<string, RemoteJwks>();
  const verifiers = new WeakMap<CompiledAuth, Verifier>();

  function remoteOf(r: NonNullable<CompiledAuth["remote"]>): RemoteJwks {
    const key = `${r.url} ${r.cacheFile} ${r.refreshMs}`;
    let remote = remotes.get(key);
    if (!remote) {
      if (remotes.size > 100) remotes.clear();
      remote = new RemoteJwks(r, deps);
      remotes.set(key, remote);
    }
    return remote;
  }

  function verifierOf(a: CompiledAuth): Verifier {
    let v = verifiers.get(a);
    if (v) return v;
    const local = a.jwks === null ? undefined : localJwks(a.jwks);
    const remote = a.remote === null ? undefined : remoteOf(a.remote);
    v = { lookup: keyLookup(a, { local, remote }, deps), cache: new Map() };
    verifiers.set(a, v);
    return v;
  }

  return {
    /**
     * Verifies the request's bearer token (`authorization` header value).
     *
     * @param now the request's time (ms)
     */
    async authenticate(a: CompiledAuth, authorization: string | undefined, now: number) {
      if (authorization === undefined) return MISSING;
      const seen = verifiers.get(a)?.cache.get(authorization);
      if (seen !== undefined && seen > now) return OK;
      const m = BEARER.exec(authorization);
      if (!m) {
        return {
          ok: false,
          reason: authorization.trim() === "" ? "missing" : "malformed",
        } as AuthVerdict;
      }
      const token = m[1]!;
      const v = verifierOf(a);
      if (seen !== undefined) v.cache.delete(authorization);
      const r = await verifyJwt(token, v.lookup, {
        algorithms: a.algorithms,
        issuer: a.issuer,
        audience: a.audience,
        clockSkewSeconds: a.clockSkewSeconds,
        requireExp: a.requireExp,
        now,
      });
      if (!r.ok) return r as AuthVerdict;
      if (v.cache.size >= CACHE_LIMIT) v.cache.clear();
      v.cache.set(
        authorization,
        r.exp === null ? now + NO_EXP_CACHE_MS : r.exp + a.clockSkewSeconds * 1000,
      );
      return OK;
    },
  };
}

export type TokenAuth = ReturnType<typeof createTokenAuth>;
