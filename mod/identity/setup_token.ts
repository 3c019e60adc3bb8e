/**
 * The first-install setup token, shared by `waf serve` and `waf setup url` (separate
 * processes): the store keeps only the token's SHA-256 and expiry in `settings`, so the running
 * server accepts a token the CLI rotated at its next request. The token itself exists only in
 * `<data-dir>/runtime/setup.url` (mode 0600) and in the operator's hands.
 */
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { UsersRepo } from "../../db/users_repo.ts";
import { safeEqual, sha256Hex } from "../core/digest.ts";
import { type Random, randomToken } from "../core/random.ts";

/** How long a token and its `setup.url` file are valid. */
export const SETUP_TTL_MS = 10 * 60_000;
export const SETUP_TOKEN_MIN = 32;
export const SETUP_TOKEN_MAX = 256;
const URL_SAFE = /^[A-Za-z0-9_-]+$/;
/** Estimated entropy (bits) a supplied token must carry. */
const MIN_ENTROPY_BITS = 96;

export const SETUP_KEYS = {
  token: "setup.token",
  completedAt: "setup.completed_at",
  baseUrl: "setup.base_url",
  draft: "setup.draft",
  /** The protection level chosen at setup: the level of new sites created without one. */
  siteLevel: "sites.default_level",
} as const;

export interface StoredSetupToken {
  readonly hash: string;
  readonly issued_at: number;
  readonly expires_at: number;
}

/** Shannon entropy of the token's own character distribution, times its length. */
function entropyBits(token: string): number {
  const counts = new Map<string, number>();
  for (const ch of token) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / token.length;
    bits -= p * Math.log2(p);
  }
  return bits * token.length;
}

/** Why a supplied token is refused (never quoting it), or undefined when it is acceptable. */
export function setupTokenProblem(token: string): string | undefined {
  if (token.length < SETUP_TOKEN_MIN || token.length > SETUP_TOKEN_MAX) {
    return `expected ${SETUP_TOKEN_MIN} to ${SETUP_TOKEN_MAX} characters, got ${token.length}`;
  }
  if (!URL_SAFE.test(token)) {
    return "expected only the URL-safe characters A-Z, a-z, 0-9, '-' and '_'";
  }
  if (entropyBits(token) < MIN_ENTROPY_BITS || /^(.{1,8})\1+$/.test(token)) {
    return "the value is too predictable (repeated or too few distinct characters): use a random value, e.g. `openssl rand -base64 32 | tr '+/' '-_' | tr -d '='`";
  }
  return undefined;
}

export class SetupTokenError extends Error {
  constructor(problem: string) {
    super(`WAF_SETUP_TOKEN is not a usable setup token: ${problem} (the value is not shown)`);
    this.name = "SetupTokenError";
  }
}

/** A short, irreversible fingerprint of the token to compare by eye ("3fa9-21bc"). */
export function setupReceipt(token: string): string {
  const h = sha256Hex(`waf-setup-receipt:${token}`);
  return `${h.slice(0, 4)}-${h.slice(4, 8)}`;
}

export function setupUrlPath(dataDir: string): string {
  return `${dataDir}/runtime/setup.url`;
}

export function isSetupComplete(settings: SettingsRepo, users: UsersRepo): boolean {
  return settings.get(SETUP_KEYS.completedAt) !== undefined || users.count() > 0;
}

/** Writes `setup.url` (mode 0600, runtime folder 0700) atomically; returns its path. */
export async function writeSetupUrl(dataDir: string, url: string): Promise<string> {
  const dir = `${dataDir}/runtime`;
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  await Deno.chmod(dir, 0o700);
  const path = setupUrlPath(dataDir);
  const tmp = `${path}.tmp`;
  await Deno.remove(tmp).catch(() => {});
  await Deno.writeTextFile(tmp, url + "\n", { mode: 0o600, createNew: true });
  await Deno.chmod(tmp, 0o600);
  await Deno.rename(tmp, path);
  return path;
}

/** The token of this data directory's `setup.url` when its SHA-256 is `hash`, else undefined. */
export async function readSetupToken(dataDir: string, hash: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(setupUrlPath(dataDir));
  } catch {
    return undefined;
  }
  const token = /#token=([^\s]+)/.exec(text)?.[1];
  return token !== undefined && safeEqual(sha256Hex(token), hash) ? token : undefined;
}

/** Deletes `setup.url`; true when there was one. */
export async function removeSetupUrl(dataDir: string): Promise<boolean> {
  try {
    await Deno.remove(setupUrlPath(dataDir));
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

export interface IssuedToken {
  readonly token: string;
  readonly receipt: string;
  readonly path: string;
  readonly expiresAt: number;
}

/**
 * Makes `token` (or a fresh random one) the only valid setup token, stores its hash and
 * writes `setup.url` holding `{baseUrl}/setup#token=...`.
 */
export async function issueSetupToken(deps: {
  settings: SettingsRepo;
  dataDir: string;
  baseUrl: string;
  now: number;
  random: Random;
  token?: string;
}): Promise<IssuedToken> {
  const token = deps.token ?? randomToken(deps.random, 43);
  const problem = setupTokenProblem(token);
  if (problem) throw new SetupTokenError(problem);
  const stored: StoredSetupToken = {
    hash: sha256Hex(token),
    issued_at: deps.now,
    expires_at: deps.now + SETUP_TTL_MS,
  };
  deps.settings.set(SETUP_KEYS.token, stored, deps.now);
  const path = await writeSetupUrl(
    deps.dataDir,
    `${deps.baseUrl.replace(/\/+$/, "")}/setup#token=${token}`,
  );
  return { token, receipt: setupReceipt(token), path, expiresAt: stored.expires_at };
}
