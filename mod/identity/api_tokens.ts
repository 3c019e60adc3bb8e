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
import { type Random, randomHex, randomToken } from "../core/random.ts";
import { tokenExpiry, type TokenLifetime } from "./api_token_lifetime.ts";
import { covers, isKnownExpression, uncovered } from "./permissions.ts";

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

export { covers, isKnownExpression };

/** A token request: its note, permissions and lifetime (see `api_token_lifetime.ts`). */
export interface CreateTokenInput extends TokenLifetime {
  readonly note: string;
  readonly permissions: readonly string[];
  readonly non_expiring?: boolean;
}

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

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface ApiTokensDeps {
  readonly repo: ApiTokensRepo;
  readonly clock: Clock;
  readonly random: Random;
  readonly audit: Audit;
  readonly transaction: <T>(fn: () => T) => T;
  /** Reads `apisec.management_api.enabled` (a security root of waf.yaml). */
  readonly enabled: () => boolean;
  /**
   * The current permissions of the user with this id, or undefined when the account no
   * longer exists or is disabled. A token never acts beyond what its creator holds now.
   */
  readonly userPermissions: (userId: string) => readonly string[] | undefined;
}

/** The `waf.yaml` key that switches tokens on; read at start, so a change needs a restart. */
export const TOKENS_SETTING = "apisec.management_api.enabled";

/** Management API tokens (what `createApiTokens` returns). */
export interface ApiTokens {
  /** Whether tokens can be created and used (`apisec.management_api.enabled`). */
  enabled(): boolean;
  /** Creates a token; the secret is in the result and nowhere else, ever. */
  create(
    input: CreateTokenInput,
    creator: Creator,
    ctx: AuditContext,
  ): { token: string; item: TokenView };
  /** Every token, revoked and expired ones included. */
  list(): TokenView[];
  /** One token; 404 `NOT_FOUND` when there is none with this id. */
  get(id: string): TokenView;
  /** Revokes a token at once; 404 `NOT_FOUND` when there is none with this id. */
  revoke(id: string, ctx: AuditContext): TokenView;
  /**
   * The principal behind a bearer secret, or undefined when it is malformed, unknown,
   * revoked, expired, its creator chain is no longer valid, or the management API is
   * disabled.
   */
  authenticate(secret: string, clientIp: string): TokenPrincipal | undefined;
}

class ApiTokenService implements ApiTokens {
  readonly #deps: ApiTokensDeps;

  constructor(deps: ApiTokensDeps) {
    this.#deps = deps;
  }

  enabled(): boolean {
    return this.#deps.enabled();
  }

  create(
    input: CreateTokenInput,
    creator: Creator,
    ctx: AuditContext,
  ): { token: string; item: TokenView } {
    const deps = this.#deps;
    this.#requireEnabled();
    if (input.non_expiring === true) {
      throw new AppError(
        501,
        "API_TOKEN_CONFIRMATION_UNAVAILABLE",
        "A non-expiring token needs strong verification (password, TOTP and a risk confirmation), and no verifier is available in this runtime",
      );
    }
    this.#checkGrant(input.permissions, creator, ctx);
    const now = deps.clock.now();
    const expiresAt = tokenExpiry(input, now);
    this.#checkOutlives(expiresAt, creator, ctx);
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
  }

  list(): TokenView[] {
    return this.#deps.repo.list().map(toTokenView);
  }

  get(id: string): TokenView {
    const row = this.#deps.repo.get(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No API token with id "${id}"`);
    return toTokenView(row);
  }

  revoke(id: string, ctx: AuditContext): TokenView {
    const deps = this.#deps;
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
  }

  authenticate(secret: string, clientIp: string): TokenPrincipal | undefined {
    const deps = this.#deps;
    if (!deps.enabled() || !TOKEN_PATTERN.test(secret)) return undefined;
    const hash = sha256Hex(secret);
    const row = deps.repo.getByHash(hash);
    if (!row || !safeEqual(row.secret_hash, hash)) return undefined;
    const now = deps.clock.now();
    const permissions = this.#effective(row, now, 0);
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
  }

  /**
   * What a live token may do now: its own grant, narrowed to what its creator (a user, or a
   * parent token, recursively) still holds. Undefined when the token or any creator in its
   * chain is revoked, expired, disabled or gone.
   */
  #effective(row: ApiTokenRow, now: number, depth: number): string[] | undefined {
    if (row.revoked_at !== null) return undefined;
    if (row.expires_at !== null && now >= row.expires_at) return undefined;
    const sep = row.created_by.indexOf(":");
    const kind = row.created_by.slice(0, sep);
    const id = row.created_by.slice(sep + 1);
    let held: readonly string[] | undefined;
    if (kind === "user") held = this.#deps.userPermissions(id);
    else if (kind === "token" && depth < MAX_CHAIN) {
      const parent = this.#deps.repo.get(id);
      held = parent ? this.#effective(parent, now, depth + 1) : undefined;
    }
    if (held === undefined) return undefined;
    return (JSON.parse(row.permissions) as string[]).filter((p) => covers(held, p));
  }

  #requireEnabled(): void {
    if (!this.#deps.enabled()) {
      throw new AppError(
        403,
        "MANAGEMENT_API_DISABLED",
        `Management API tokens are disabled: set ${TOKENS_SETTING} to true in waf.yaml and restart waf serve`,
        { details: { setting: TOKENS_SETTING, restart_required: true } },
      );
    }
  }

  /** Every permission must be known and held by the creator; an escalation is audited. */
  #checkGrant(permissions: readonly string[], creator: Creator, ctx: AuditContext): void {
    permissions.forEach((p, i) => {
      if (!isKnownExpression(p)) {
        throw new AppError(
          400,
          "BAD_REQUEST",
          `Invalid field "permissions[${i}]": "${p}" is not a known permission or expression`,
          { details: { field: `permissions[${i}]` } },
        );
      }
    });
    const wider = uncovered(creator.permissions, permissions);
    if (wider.length > 0) {
      this.#denied(ctx, { reason: "escalation", permissions: wider });
      throw new AppError(
        403,
        "FORBIDDEN",
        `A token cannot be granted permissions its creator does not hold: ${wider.join(", ")}`,
        { details: { permissions: wider } },
      );
    }
  }

  /** A token created by a token must expire no later than it (audited when it would not). */
  #checkOutlives(expiresAt: number, creator: Creator, ctx: AuditContext): void {
    if (typeof creator.expiresAt === "number" && expiresAt > creator.expiresAt) {
      this.#denied(ctx, { reason: "outlives_creator" });
      throw new AppError(
        403,
        "FORBIDDEN",
        `A token cannot create a token that outlives it: the calling token expires at ${
          iso(creator.expiresAt)
        }, so pass expires_at or expires_in_days within that`,
        { details: { field: "expires_at", creator_expires_at: iso(creator.expiresAt) } },
      );
    }
  }

  #denied(ctx: AuditContext, detail: Record<string, unknown>): void {
    this.#deps.transaction(() =>
      this.#deps.audit.record({ ...ctx, action: "api_token.create", result: "denied", detail })
    );
  }
}

/** The management API token service over `deps.repo`. */
export function createApiTokens(deps: ApiTokensDeps): ApiTokens {
  return new ApiTokenService(deps);
}
