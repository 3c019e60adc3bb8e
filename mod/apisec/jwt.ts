/**
 * The one wrapper of `jose`: JWT verification (signature, `iss`, `aud`, `exp`/`nbf` with a clock
 * skew, `exp` present unless allowed otherwise, the allowed algorithms), PEM and JWKS key import. Failures come back as a reason (data),
 * never as jose's exception types, so a replacement touches this file only.
 */
import {
  createLocalJWKSet,
  errors,
  importSPKI,
  importX509,
  type JSONWebKeySet,
  jwtVerify,
} from "jose";

/** Why a token was refused (the access log's chain and the 401's description). */
export type JwtFailure =
  | "malformed"
  | "algorithm_not_allowed"
  | "unknown_key"
  | "bad_signature"
  | "expired"
  | "missing_exp"
  | "not_yet_valid"
  | "bad_issuer"
  | "bad_audience"
  | "bad_claims"
  | "no_key";

export type JwtResult =
  | {
    readonly ok: true;
    readonly payload: Readonly<Record<string, unknown>>;
    readonly exp: number | null;
  }
  | { readonly ok: false; readonly reason: JwtFailure };

/** The verification key: bytes for HMAC, a public key otherwise. */
export type VerifyKey = CryptoKey | Uint8Array;

/** Chooses the key for a token's protected header (`alg`, `kid`); throws {@link NoKeyError}. */
export type KeyLookup = (header: { alg?: string; kid?: string }) => Promise<VerifyKey>;

/** No key fits the token (unknown `kid`, or no key source for its algorithm family). */
export class NoKeyError extends Error {
  constructor(readonly reason: "unknown_key" | "no_key") {
    super(reason);
  }
}

export interface VerifyOptions {
  readonly algorithms: readonly string[];
  readonly issuer: string | null;
  readonly audience: readonly string[];
  readonly clockSkewSeconds: number;
  /** Refuse a token without a numeric `exp` (`missing_exp`). */
  readonly requireExp: boolean;
  /** The clock's now (ms), so time checks follow the injected clock. */
  readonly now: number;
}

function failure(err: unknown): JwtFailure {
  if (err instanceof NoKeyError) return err.reason;
  if (err instanceof errors.JWTExpired) return "expired";
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "nbf") return "not_yet_valid";
    if (err.claim === "iss") return "bad_issuer";
    if (err.claim === "aud") return "bad_audience";
    return "bad_claims";
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return "algorithm_not_allowed";
  if (err instanceof errors.JWSSignatureVerificationFailed) return "bad_signature";
  if (err instanceof errors.JWKSNoMatchingKey) return "unknown_key";
  // A key of the wrong type for the algorithm (an HMAC token against an RSA key) lands here too.
  if (err instanceof TypeError) return "bad_signature";
  return "malformed";
}

/** Verifies a compact JWT; never throws. */
export async function verifyJwt(
  token: string,
  key: KeyLookup,
  o: VerifyOptions,
): Promise<JwtResult> {
  try {
    const { payload } = await jwtVerify(token, (header) => key(header), {
      algorithms: [...o.algorithms],
      issuer: o.issuer ?? undefined,
      audience: o.audience.length > 0 ? [...o.audience] : undefined,
      clockTolerance: o.clockSkewSeconds,
      currentDate: new Date(o.now),
    });
    const exp = typeof payload.exp === "number" ? payload.exp * 1000 : null;
    // Judged after the signature, so an unsigned or forged token is refused as such first.
    if (exp === null && o.requireExp) return { ok: false, reason: "missing_exp" };
    return { ok: true, payload: payload as Record<string, unknown>, exp };
  } catch (err) {
    return { ok: false, reason: failure(err) };
  }
}

/** Imports a PEM public key or certificate for one algorithm. */
export function importPem(pem: string, alg: string): Promise<CryptoKey> {
  return pem.includes("BEGIN CERTIFICATE") ? importX509(pem, alg) : importSPKI(pem, alg);
}

/** Key types a JWKS may contribute: public keys only (an `oct` key would allow HMAC confusion). */
const PUBLIC_KTY: ReadonlySet<string> = new Set(["RSA", "EC", "OKP"]);

/** Parses a JWKS document, keeping its public keys; undefined when it is not one. */
export function parseJwks(text: string): JSONWebKeySet | undefined {
  try {
    const doc = JSON.parse(text) as { keys?: unknown };
    if (!Array.isArray(doc.keys)) return undefined;
    const keys = doc.keys.filter((k): k is JSONWebKeySet["keys"][number] =>
      k !== null && typeof k === "object" && PUBLIC_KTY.has(String((k as { kty?: unknown }).kty)) &&
      (k as { d?: unknown }).d === undefined
    );
    return { keys };
  } catch {
    return undefined;
  }
}

/** A resolver over a fixed key set: the key for a header's `kid` and `alg`. */
export function localJwks(jwks: JSONWebKeySet): KeyLookup {
  const resolve = createLocalJWKSet(jwks);
  return async (header) => {
    try {
      return await resolve(header as Parameters<typeof resolve>[0]);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) throw new NoKeyError("unknown_key");
      throw err;
    }
  };
}
