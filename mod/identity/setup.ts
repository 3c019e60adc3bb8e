/**
 * The first-install state machine: incomplete (a setup token exists; probe, draft and create
 * the first admin) → complete (token revoked, `setup.url` deleted, every setup mutation 409).
 * Tokens are compared by their SHA-256 in constant time and failed attempts are limited per
 * client. The setup session (cookie from the probe) is held in memory and bound to the token
 * that opened it, so rotating the token also ends older setup sessions.
 */
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { RefusalAudit } from "./refusal_audit.ts";
import type { Clock } from "../core/clock.ts";
import { b64url, safeEqual, sha256Hex } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import { type HostProbe, probeHost, type ProtectionLevel } from "./host_probe.ts";
import { createLockout } from "./lockout.ts";
import type { Logger } from "../core/logger.ts";
import type { Random } from "../core/random.ts";
import {
  isSetupComplete,
  issueSetupToken,
  removeSetupUrl,
  SETUP_KEYS,
  setupUrlPath,
  type StoredSetupToken,
} from "./setup_token.ts";
import type { PublicUser, Users } from "./users.ts";
import { assertUsername } from "./users.ts";

export const SETUP_SESSION_TTL_MS = 15 * 60_000;
const MAX_SETUP_SESSIONS = 32;

export interface SetupDraft {
  readonly username?: string;
  readonly profile?: ProtectionLevel;
}

export type SetupAuditContext = Pick<AuditEvent, "clientIp" | "traceId">;

export interface SetupDeps {
  readonly settings: SettingsRepo;
  readonly usersRepo: UsersRepo;
  readonly users: Users;
  readonly audit: Audit;
  /** Wrong setup tokens come from clients nobody knows: audited aggregated. */
  readonly refusals: RefusalAudit;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly dataDir: string;
  readonly transaction: <T>(fn: () => T) => T;
}

const SETUP_ACTOR = { type: "anonymous", name: "setup" } as const;

export function createSetup(deps: SetupDeps) {
  const attempts = createLockout(deps.clock, {
    threshold: 10,
    baseLockMs: 30_000,
    maxLockMs: 15 * 60_000,
    windowMs: 15 * 60_000,
  });
  /** Setup session hash → expiry and the token hash it was opened with. */
  const sessions = new Map<string, { expires: number; tokenHash: string }>();

  const complete = () => isSetupComplete(deps.settings, deps.usersRepo);
  const stored = () => deps.settings.get(SETUP_KEYS.token) as StoredSetupToken | undefined;
  const live = (): StoredSetupToken | undefined => {
    const t = stored();
    return t && t.expires_at > deps.clock.now() ? t : undefined;
  };

  const audit = (
    ctx: SetupAuditContext,
    action: string,
    result: "success" | "failure",
    detail?: Record<string, unknown>,
  ) =>
    deps.transaction(() =>
      deps.audit.record({ ...ctx, actor: SETUP_ACTOR, action, target: "setup", result, detail })
    );

  const setupComplete = () =>
    new AppError(409, "SETUP_COMPLETE", "Setup is already complete: sign in at /login");

  return {
    isComplete: complete,

    /** Throws 409 `SETUP_COMPLETE` once setup is done. */
    assertIncomplete(): void {
      if (complete()) throw setupComplete();
    },

    /**
     * At start-up: while setup is incomplete, issue the token (from `WAF_SETUP_TOKEN` or
     * fresh) and write `setup.url`; log only the base URL, the file path and the receipt.
     */
    async start(baseUrl: string, envToken?: string): Promise<void> {
      if (complete()) {
        deps.transaction(() => deps.settings.delete(SETUP_KEYS.token));
        await removeSetupUrl(deps.dataDir);
        return;
      }
      const now = deps.clock.now();
      deps.settings.set(SETUP_KEYS.baseUrl, baseUrl, now);
      const issued = await issueSetupToken({
        settings: deps.settings,
        dataDir: deps.dataDir,
        baseUrl,
        now,
        random: deps.random,
        token: envToken,
      });
      deps.logger.info("setup required: open the link stored in the setup file", {
        setup_url: `${baseUrl.replace(/\/+$/, "")}/setup`,
        setup_file: issued.path,
        receipt: issued.receipt,
        valid_until: new Date(issued.expiresAt).toISOString(),
      });
    },

    /** Throws 401 (missing, wrong or expired) or 429 (too many failures) unless `token` is live. */
    checkToken(token: string | undefined, ctx: SetupAuditContext): StoredSetupToken {
      const key = `ip:${ctx.clientIp ?? "unknown"}`;
      const wait = attempts.retryAfter([key]);
      const refuse = (reason: string) =>
        deps.refusals.record({
          actor: SETUP_ACTOR,
          action: "setup.auth",
          target: "setup",
          clientIp: ctx.clientIp ?? "unknown",
          traceId: ctx.traceId,
          reason,
        });
      if (wait > 0) {
        refuse("locked_out");
        throw new AppError(
          429,
          "TOO_MANY_ATTEMPTS",
          `Too many wrong setup tokens: retry in ${wait} s`,
          {
            details: { retry_after: wait },
          },
        );
      }
      const current = live();
      // Hash first so the comparison is of equal-length values and constant-time.
      if (token && current && safeEqual(sha256Hex(token), current.hash)) return current;
      attempts.fail([key]);
      refuse(!token ? "missing" : !current ? "expired" : "wrong");
      throw new AppError(
        401,
        "UNAUTHORIZED",
        'Setup token is missing, wrong or expired: run "waf setup url" on the host for a fresh link',
      );
    },

    /** Throws 401 unless `cookie` is a live setup session opened with the current token. */
    checkSession(cookie: string | undefined): void {
      const current = live();
      const s = cookie ? sessions.get(sha256Hex(cookie)) : undefined;
      if (
        !s || !current || s.expires <= deps.clock.now() || !safeEqual(s.tokenHash, current.hash)
      ) {
        throw new AppError(
          401,
          "UNAUTHORIZED",
          "Setup session is missing or expired: open the setup link again",
        );
      }
    },

    /** Opens a setup session and describes the host. */
    async probe(
      token: StoredSetupToken,
      ctx: SetupAuditContext,
    ): Promise<{ cookie: string; maxAgeSeconds: number; probe: HostProbe }> {
      const now = deps.clock.now();
      for (const [h, s] of sessions) if (s.expires <= now) sessions.delete(h);
      while (sessions.size >= MAX_SETUP_SESSIONS) sessions.delete(sessions.keys().next().value!);
      const cookie = b64url(deps.random.bytes(32));
      sessions.set(sha256Hex(cookie), {
        expires: now + SETUP_SESSION_TTL_MS,
        tokenHash: token.hash,
      });
      const probe = await probeHost(deps.dataDir, deps.random);
      audit(ctx, "setup.probe", "success");
      return { cookie, maxAgeSeconds: SETUP_SESSION_TTL_MS / 1000, probe };
    },

    getDraft(): SetupDraft {
      return (deps.settings.get(SETUP_KEYS.draft) as SetupDraft | undefined) ?? {};
    },

    /** Merges `patch` into the draft; a username must already follow the rule. */
    patchDraft(patch: SetupDraft, ctx: SetupAuditContext): SetupDraft {
      if (patch.username !== undefined) assertUsername(patch.username);
      return deps.transaction(() => {
        if (complete()) throw setupComplete();
        const next = { ...this.getDraft(), ...patch };
        deps.settings.set(SETUP_KEYS.draft, next, deps.clock.now());
        deps.audit.record({
          ...ctx,
          actor: SETUP_ACTOR,
          action: "setup.draft",
          target: "setup",
          result: "success",
          detail: { fields: Object.keys(patch) },
        });
        return next;
      });
    },

    /**
     * Creates the first admin, completes setup and revokes the token, in one transaction. The
     * protection level (`profile`, else the draft's) becomes the level of new sites.
     */
    async complete(
      input: { username: string; password: string; profile?: ProtectionLevel },
      ctx: SetupAuditContext,
    ): Promise<PublicUser> {
      const level = input.profile ?? this.getDraft().profile;
      const user = await deps.users.create(
        { username: input.username, password: input.password, role: "admin" },
        { ...ctx, actor: SETUP_ACTOR, action: "setup.complete" },
        () => {
          // Re-checked inside the transaction: of two racing requests only one creates.
          if (deps.usersRepo.count() > 1 || deps.settings.get(SETUP_KEYS.completedAt)) {
            throw setupComplete();
          }
          const now = deps.clock.now();
          deps.settings.set(SETUP_KEYS.completedAt, now, now);
          deps.settings.delete(SETUP_KEYS.token);
          deps.settings.delete(SETUP_KEYS.draft);
          if (level !== undefined) deps.settings.set(SETUP_KEYS.siteLevel, level, now);
        },
      );
      sessions.clear();
      await removeSetupUrl(deps.dataDir);
      deps.logger.info("setup complete: the setup token is revoked", { admin: user.username });
      return user;
    },

    /** Deletes an expired `setup.url` and forgets expired setup sessions and attempts. */
    async cleanup(): Promise<void> {
      const now = deps.clock.now();
      for (const [h, s] of sessions) if (s.expires <= now) sessions.delete(h);
      attempts.sweep();
      const t = stored();
      if (!t || t.expires_at <= now) {
        if (await removeSetupUrl(deps.dataDir)) {
          deps.logger.info("deleted the expired setup file", {
            setup_file: setupUrlPath(deps.dataDir),
          });
        }
      }
    },
  };
}

export type Setup = ReturnType<typeof createSetup>;
