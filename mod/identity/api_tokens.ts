/**
 * Management API tokens. A token is `waf_` + 43 URL-safe random characters, shown once at
 * creation; the store keeps only its SHA-256. A token acts with exactly the permissions it was
 * given, which can never exceed its creator's, and only while `apisec.management_api.enabled`.
 */
import type { ApiTokenRow, ApiTokensRepo } from "../../db/api_tokens_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { safeEqual, sha256Hex } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import { grants, isKnownExpression } from "./permissions.ts";
import { type Random, randomHex, randomToken } from "../core/random.ts";

const DAY = 86_400_000;
export const DEFAULT_LIFETIME_DAYS = 90;
export const MAX_LIFETIME_DAYS = 365;
/** `last_used_at` is written at most this often per token. */
const TOUCH_EVERY_MS = 60_000;
const TOKEN_PATTERN = /^waf_[A-Za-z0-9_-]{43}$/;
/** Tokens minted by tokens form a chain; beyond this depth the chain is not trusted. */
const MAX_CHAIN = 8;

export interface TokenPrincipal {
  readonly kind: "token";
  readonly id: string;
  readonly name: string;
  readonly permissions: readonly string[];
}

export interface TokenView {
  readonly id: string;
  readonly note: string;
  readonly permissions: readonly string[];
  readonly created_by: string;
  readonly created_at: string;
  readonly expires_at: string | null;
  readonly revoked: boolean;
  readonly revoked_at: string | null;
  readonly last_used_at: string | null;
  readonly last_used_ip: string | null;
}

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

export function toTokenView(row: ApiTokenRow): TokenView {
  return {
    id: row.id,
    note: row.note,
    permissions: JSON.parse(row.permissions),
    created_by: row.created_by,
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at),
    revoked: row.revoked_at !== null,
    revoked_at: iso(row.revoked_at),
    last_used_at: iso(row.last_used_at),
    last_used_ip: row.last_used_ip,
  };
}

export { isKnownExpression };

/**
 * Whether `held` covers `requested` entirely. A wildcard is only covered by an equal or wider
 * wildcard, because it also grants identifiers added in later versions.
 */
export function covers(held: readonly string[], requested: string): boolean {
  if (held.includes("*")) return true;
  if (requested === "*") return false;
  if (requested.endsWith(":*")) return held.includes(requested);
  return grants(held, requested);
}

export interface CreateTokenInput {
  readonly note: string;
  readonly permissions: readonly string[];
  /** The lifetime as a time to live (the request's `ttl`, already in milliseconds). */
  readonly ttl_ms?: number;
  readonly expires_in_days?: number;
  readonly expires_at?: string;
  readonly non_expiring?: boolean;
}

/** The ways to give a token's lifetime (input key, request field); at most one per request. */
const LIFETIME_FIELDS = [
  ["ttl_ms", "ttl"],
  ["expires_in_days", "expires_in_days"],
  ["expires_at", "expires_at"],
] as const;

export interface Creator {
  /** The caller, recorded as `created_by` (the routes pass `user:<id>` or `token:<id>`). */
  readonly id: string;
  readonly permissions: readonly string[];
  /**
   * When the caller is itself a token: its expiry. A token cannot mint one that outlives it,
   * or a short-lived token could extend itself for ever.
   */
  readonly expiresAt?: number | null;
}

export function createApiTokens(deps: {
  repo: ApiTokensRepo;
  clock: Clock;
  random: Random;
  audit: Audit;
  transaction: <T>(fn: () => T) => T;
  /** Reads `apisec.management_api.enabled` (a security root of waf.yaml). */
  enabled: () => boolean;
  /**
   * The current permissions of the user with this id, or undefined when the account no
   * longer exists or is disabled. A token never acts beyond what its creator holds now.
   */
  userPermissions: (userId: string) => readonly string[] | undefined;
}) {
  /**
   * What a live token may do now: its own grant, narrowed to what its creator (a user, or a
   * parent token, recursively) still holds. Undefined when the token or any creator in its
   * chain is revoked, expired, disabled or gone.
   */
  function effective(row: ApiTokenRow, now: number, depth: number): string[] | undefined {
    if (row.revoked_at !== null) return undefined;
    if (row.expires_at !== null && now >= row.expires_at) return undefined;
    const sep = row.created_by.indexOf(":");
    const kind = row.created_by.slice(0, sep);
    const id = row.created_by.slice(sep + 1);
    let held: readonly string[] | undefined;
    if (kind === "user") held = deps.userPermissions(id);
    else if (kind === "token" && depth < MAX_CHAIN) {
      const parent = deps.repo.get(id);
      held = parent ? effective(parent, now, depth + 1) : undefined;
    }
    if (held === undefined) return undefined;
    return (JSON.parse(row.permissions) as string[]).filter((p) => covers(held, p));
  }

  function lifetime(input: CreateTokenInput, now: number): number {
    const given = LIFETIME_FIELDS.filter(([key]) => input[key] !== undefined).map(([, f]) => f);
    if (given.length > 1) {
      throw new AppError(
        400,
        "BAD_REQUEST",
        `Invalid field "${given[1]}": give one of ${
          LIFETIME_FIELDS.map(([, f]) => f).join(", ")
        }, not several`,
        { details: { field: given[1] } },
      );
    }
    if (input.ttl_ms !== undefined) {
      if (input.ttl_ms > MAX_LIFETIME_DAYS * DAY) {
        throw new AppError(
          400,
          "API_TOKEN_LIFETIME_TOO_LONG",
          `Invalid field "ttl": a token lives at most ${MAX_LIFETIME_DAYS} days`,
          { details: { field: "ttl" } },
        );
      }
      return now + input.ttl_ms;
    }
    if (input.expires_at !== undefined) {
      const at = Date.parse(input.expires_at);
      if (at <= now) {
        throw new AppError(
          400,
          "BAD_REQUEST",
          'Invalid field "expires_at": must be in the future',
          {
            details: { field: "expires_at" },
          },
        );
      }
      if (at - now > MAX_LIFETIME_DAYS * DAY) {
        throw new AppError(
          400,
          "API_TOKEN_LIFETIME_TOO_LONG",
          `Invalid field "expires_at": a token lives at most ${MAX_LIFETIME_DAYS} days`,
          { details: { field: "expires_at" } },
        );
      }
      return at;
    }
    const days = input.expires_in_days ?? DEFAULT_LIFETIME_DAYS;
    if (days > MAX_LIFETIME_DAYS) {
      throw new AppError(
        400,
        "API_TOKEN_LIFETIME_TOO_LONG",
        `Invalid field "expires_in_days": a token lives at most ${MAX_LIFETIME_DAYS} days`,
        { details: { field: "expires_in_days" } },
      );
    }
    return now + days * DAY;
  }

  function requireEnabled(): void {
    if (!deps.enabled()) {
      throw new AppError(
        403,
        "MANAGEMENT_API_DISABLED",
        "Management API tokens are disabled: set apisec.management_api.enabled to true in waf.yaml",
      );
    }
  }

  return {
    /** Creates a token; the secret is in the result and nowhere else, ever. */
    create(
      input: CreateTokenInput,
      creator: Creator,
      ctx: Pick<AuditEvent, "actor" | "clientIp" | "traceId">,
    ): { token: string; item: TokenView } {
      requireEnabled();
      if (input.non_expiring === true) {
        throw new AppError(
          501,
          "API_TOKEN_CONFIRMATION_UNAVAILABLE",
          "A non-expiring token needs strong verification (password, TOTP and a risk confirmation), and no verifier is available in this runtime",
        );
      }
      input.permissions.forEach((p, i) => {
        if (!isKnownExpression(p)) {
          throw new AppError(
            400,
            "BAD_REQUEST",
            `Invalid field "permissions[${i}]": "${p}" is not a known permission or expression`,
            { details: { field: `permissions[${i}]` } },
          );
        }
      });
      const wider = input.permissions.filter((p) => !covers(creator.permissions, p));
      if (wider.length > 0) {
        deps.transaction(() =>
          deps.audit.record({
            ...ctx,
            action: "api_token.create",
            result: "denied",
            detail: { reason: "escalation", permissions: wider },
          })
        );
        throw new AppError(
          403,
          "FORBIDDEN",
          `A token cannot be granted permissions its creator does not hold: ${wider.join(", ")}`,
          { details: { permissions: wider } },
        );
      }
      const now = deps.clock.now();
      const expiresAt = lifetime(input, now);
      if (typeof creator.expiresAt === "number" && expiresAt > creator.expiresAt) {
        deps.transaction(() =>
          deps.audit.record({
            ...ctx,
            action: "api_token.create",
            result: "denied",
            detail: { reason: "outlives_creator" },
          })
        );
        throw new AppError(
          403,
          "FORBIDDEN",
          `A token cannot create a token that outlives it: the calling token expires at ${
            iso(creator.expiresAt)
          }, so pass expires_at or expires_in_days within that`,
          { details: { field: "expires_at", creator_expires_at: iso(creator.expiresAt) } },
        );
      }
      const token = `waf_${randomToken(deps.random, 43)}`;
      const id = randomHex(deps.random, 8);
      const row = {
        id,
        secret_hash: sha256Hex(token),
        note: input.note,
        permissions: JSON.stringify([...new Set(input.permissions)]),
        created_by: creator.id,
        created_at: now,
        expires_at: expiresAt,
      };
      deps.transaction(() => {
        deps.repo.insert(row);
        deps.audit.record({
          ...ctx,
          action: "api_token.create",
          target: `api_token:${id}`,
          result: "success",
          detail: { permissions: JSON.parse(row.permissions), expires_at: iso(expiresAt) },
        });
      });
      return { token, item: toTokenView(deps.repo.get(id)!) };
    },

    list(): TokenView[] {
      return deps.repo.list().map(toTokenView);
    },

    get(id: string): TokenView {
      const row = deps.repo.get(id);
      if (!row) throw new AppError(404, "NOT_FOUND", `No API token with id "${id}"`);
      return toTokenView(row);
    },

    revoke(id: string, ctx: Pick<AuditEvent, "actor" | "clientIp" | "traceId">): TokenView {
      return deps.transaction(() => {
        const row = deps.repo.get(id);
        if (!row) throw new AppError(404, "NOT_FOUND", `No API token with id "${id}"`);
        deps.repo.revoke(id, deps.clock.now());
        deps.audit.record({
          ...ctx,
          action: "api_token.revoke",
          target: `api_token:${id}`,
          result: "success",
        });
        return toTokenView(deps.repo.get(id)!);
      });
    },

    /**
     * The principal behind a bearer secret, or undefined when it is malformed, unknown,
     * revoked, expired, its creator chain is no longer valid, or the management API is
     * disabled.
     */
    authenticate(secret: string, clientIp: string): TokenPrincipal | undefined {
      if (!deps.enabled() || !TOKEN_PATTERN.test(secret)) return undefined;
      const hash = sha256Hex(secret);
      const row = deps.repo.getByHash(hash);
      if (!row || !safeEqual(row.secret_hash, hash)) return undefined;
      const now = deps.clock.now();
      const permissions = effective(row, now, 0);
      if (permissions === undefined) return undefined;
      if (row.last_used_at === null || now - row.last_used_at >= TOUCH_EVERY_MS) {
        deps.repo.touch(row.id, now, clientIp);
      }
      return {
        kind: "token",
        id: row.id,
        name: `token:${row.id}`,
        permissions,
      };
    },
  };
}

export type ApiTokens = ReturnType<typeof createApiTokens>;
