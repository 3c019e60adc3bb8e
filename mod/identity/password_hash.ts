/**
 * Password hashing with WebCrypto PBKDF2-SHA256: 600,000 iterations (the OWASP 2023 figure
 * for PBKDF2-SHA256), a 16-byte random salt and a 32-byte key, encoded as
 * `pbkdf2-sha256$<iterations>$<salt base64url>$<hash base64url>`. The iteration count lives
 * in the encoding, so a later increase still verifies old hashes.
 *
 * One derivation runs at a time in the process: WebCrypto runs each on its own worker thread,
 * and a burst of concurrent logins (a flood of wrong passwords from many connections) would
 * otherwise take every core from the event loop the data plane runs on. Queued derivations wait
 * their turn; the login's limits (`login_throttle.ts`) bound how many a client can cause.
 */
import { b64url, fromB64url } from "../core/digest.ts";
import { type Random, systemRandom } from "../core/random.ts";

export const PBKDF2_ITERATIONS = 600_000;

/**
 * The iterations new hashes get: {@link PBKDF2_ITERATIONS}, always, in the product (no setting,
 * variable or flag changes it). Only tests lower it, through {@link setHashIterationsForTests},
 * the way they inject a fake clock: an in-process test's logins then cost microseconds instead
 * of a quarter of a second of a core each.
 */
let iterations = PBKDF2_ITERATIONS;

/**
 * Tests only: the iterations of the hashes made from now on in this process (`undefined` puts
 * back {@link PBKDF2_ITERATIONS}). Product code never calls it; tests/mod/identity checks that.
 */
export function setHashIterationsForTests(n: number | undefined): void {
  iterations = n ?? PBKDF2_ITERATIONS;
}
const SALT_BYTES = 16;
const KEY_BITS = 256;
const PREFIX = "pbkdf2-sha256";

const encoder = new TextEncoder();

/** The tail of the queue of derivations: each starts when the previous one has finished. */
let previous: Promise<unknown> = Promise.resolve();

function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const next = previous.then(() => deriveNow(password, salt, iterations));
  previous = next.catch(() => {});
  return next;
}

async function deriveNow(password: string, salt: Uint8Array, iterations: number) {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, [
    "deriveBits",
  ]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: salt as Uint8Array<ArrayBuffer>, iterations },
    key,
    KEY_BITS,
  );
  return new Uint8Array(bits);
}

/** Compares two byte strings in time that depends only on their lengths. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i % a.length] ?? 0) ^ (b[i % b.length] ?? 0);
  return diff === 0;
}

/** Hashes `password` with a fresh salt. */
export async function hashPassword(
  password: string,
  random: Random = systemRandom,
): Promise<string> {
  const salt = random.bytes(SALT_BYTES);
  const hash = await derive(password, salt, iterations);
  return `${PREFIX}$${iterations}$${b64url(salt)}$${b64url(hash)}`;
}

function parse(encoded: string) {
  const parts = encoded.split("$");
  if (parts.length !== 4 || parts[0] !== PREFIX) return undefined;
  const iterations = Number(parts[1]);
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > 10_000_000) return undefined;
  const salt = fromB64url(parts[2]!);
  const hash = fromB64url(parts[3]!);
  if (!salt || !hash || salt.length === 0 || hash.length === 0) return undefined;
  return { iterations, salt, hash };
}

/** True when `password` matches `encoded`; a malformed hash never matches. */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const parsed = parse(encoded);
  if (!parsed) return false;
  const actual = await derive(password, parsed.salt, parsed.iterations);
  return constantTimeEqual(actual, parsed.hash);
}

/** True when `encoded` was made with fewer iterations than today's (rehash at next login). */
export function needsRehash(encoded: string): boolean {
  const parsed = parse(encoded);
  return !parsed || parsed.iterations < iterations;
}

/**
 * A hash of a password nobody knows, so a login for an unknown user costs the same time as
 * one for a known user (no username enumeration by timing).
 */
export function dummyHash(): string {
  return `${PREFIX}$${iterations}$AAAAAAAAAAAAAAAAAAAAAA$${"A".repeat(43)}`;
}
