/**
 * The first-install state machine: incomplete (a setup token exists; probe, draft and create
 * the first admin) → complete (token revoked, `setup.url` deleted, every setup mutation 409).
 * Tokens are compared by their SHA-256 in constant time and failed attempts are limited per
 * client. The setup session (cookie from the probe) is held in memory and bound to the token
 * that opened it, so rotating the token also ends older setup sessions (`setup_sessions.ts`).
 */
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { RefusalAudit } from "./refusal_audit.ts";
import type { Clock } from "../core/clock.ts";
import { safeEqual, sha256Hex } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import { type HostProbe, probeHost, type ProtectionLevel } from "./host_probe.ts";
import { createLockout, type Lockout, type LockoutStore } from "./lockout.ts";
import type { Logger } from "../core/logger.ts";
import type { Random } from "../core/random.ts";
import { SETUP_SESSION_TTL_MS, SetupSessions } from "./setup_sessions.ts";
import {
  isSetupComplete,
  issueSetupToken,
  readSetupToken,
  removeSetupUrl,
  SETUP_KEYS,
  setupReceipt,
  setupUrlPath,
  type StoredSetupToken,
  writeSetupUrl,
} from "./setup_token.ts";
import { OPERATOR } from "./account_authority.ts";
import type { PublicUser, Users } from "./users.ts";
import { assertUsername } from "./users.ts";

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
  /** Where the failure counts live (the store: shared by the deployment's controllers). */
  readonly lockouts?: LockoutStore;
}

const SETUP_ACTOR = { type: "anonymous", name: "setup" } as const;

const setupComplete = () =>
  new AppError(409, "SETUP_COMPLETE", "Setup is already complete: sign in at /login");

/** The first-install state machine (what `createSetup` returns). */
export interface Setup {
  /** Whether setup is complete (an administrator exists and setup was finished). */
  isComplete(): boolean;
  /** Throws 409 `SETUP_COMPLETE` once setup is done. */
  assertIncomplete(): void;
  /**
   * At start-up: while setup is incomplete, issue the token (from `WAF_SETUP_TOKEN` or
   * fresh) and write `setup.url`; log only the base URL, the file path and the receipt.
   */
  start(baseUrl: string, envToken?: string): Promise<void>;
  /** Throws 401 (missing, wrong or expired) or 429 (too many failures) unless `token` is live. */
  checkToken(token: string | undefined, ctx: SetupAuditContext): StoredSetupToken;
  /** Throws 401 unless `cookie` is a live setup session opened with the current token. */
  checkSession(cookie: string | undefined): void;
  /** Opens a setup session and describes the host. */
  probe(
    token: StoredSetupToken,
    ctx: SetupAuditContext,
  ): Promise<{ cookie: string; maxAgeSeconds: number; probe: HostProbe }>;
  /** The draft the setup pages saved so far. */
  getDraft(): SetupDraft;
  /** Merges `patch` into the draft; a username must already follow the rule. */
  patchDraft(patch: SetupDraft, ctx: SetupAuditContext): SetupDraft;
  /**
   * Creates the first admin, completes setup and revokes the token, in one transaction. The
   * protection level (`profile`, else the draft's) becomes the level of new sites.
   */
  complete(
    input: { username: string; password: string; profile?: ProtectionLevel },
    ctx: SetupAuditContext,
  ): Promise<PublicUser>;
  /** Deletes an expired `setup.url` and forgets expired setup sessions and attempts. */
  cleanup(): Promise<void>;
}

class SetupService implements Setup {
  readonly #deps: SetupDeps;
  readonly #attempts: Lockout;
  readonly #sessions: SetupSessions;

  constructor(deps: SetupDeps) {
    this.#deps = deps;
    this.#attempts = createLockout(deps.clock, {
      threshold: 10,
      baseLockMs: 30_000,
      maxLockMs: 15 * 60_000,
      windowMs: 15 * 60_000,
    }, deps.lockouts && { store: deps.lockouts, scope: "setup" });
    this.#sessions = new SetupSessions(deps.random);
  }

  isComplete(): boolean {
    return isSetupComplete(this.#deps.settings, this.#deps.usersRepo);
  }

  assertIncomplete(): void {
    if (this.isComplete()) throw setupComplete();
  }

  async start(baseUrl: string, envToken?: string): Promise<void> {
    const deps = this.#deps;
    if (this.isComplete()) {
      deps.transaction(() => deps.settings.delete(SETUP_KEYS.token));
      await removeSetupUrl(deps.dataDir);
      return;
    }
    const now = deps.clock.now();
    deps.settings.set(SETUP_KEYS.baseUrl, baseUrl, now);
    // A live link is never replaced by a start: with several controllers the first one's link
    // must keep working while the others start (they share the store, not the link's file).
    const live = this.#live();
    if (live && (envToken === undefined || sha256Hex(envToken) === live.hash)) {
      const token = envToken ?? await readSetupToken(deps.dataDir, live.hash);
      if (token !== undefined) {
        const path = await writeSetupUrl(
          deps.dataDir,
          `${baseUrl.replace(/\/+$/, "")}/setup#token=${token}`,
        );
        deps.logger.info("setup required: open the link stored in the setup file", {
          setup_url: `${baseUrl.replace(/\/+$/, "")}/setup`,
          setup_file: path,
          receipt: setupReceipt(token),
          valid_until: new Date(live.expires_at).toISOString(),
        });
      } else {
        deps.logger.info(
          'setup required: a setup link issued by another controller (or by "waf setup url") is live; open it, or run "waf setup url" here for a fresh one',
          { valid_until: new Date(live.expires_at).toISOString() },
        );
      }
      return;
    }
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
  }

  checkToken(token: string | undefined, ctx: SetupAuditContext): StoredSetupToken {
    const key = `ip:${ctx.clientIp ?? "unknown"}`;
    const wait = this.#attempts.retryAfter([key]);
    if (wait > 0) {
      this.#refused(ctx, "locked_out");
      throw new AppError(
        429,
        "TOO_MANY_ATTEMPTS",
        `Too many wrong setup tokens: retry in ${wait} s`,
        {
          details: { retry_after: wait },
        },
      );
    }
    const current = this.#live();
    // Hash first so the comparison is of equal-length values and constant-time.
    if (token && current && safeEqual(sha256Hex(token), current.hash)) return current;
    this.#attempts.fail([key]);
    this.#refused(ctx, !token ? "missing" : !current ? "expired" : "wrong");
    throw new AppError(
      401,
      "UNAUTHORIZED",
      'Setup token is missing, wrong or expired: run "waf setup url" on the host for a fresh link',
    );
  }

  checkSession(cookie: string | undefined): void {
    const current = this.#live();
    if (!this.#sessions.valid(cookie, current?.hash, () => this.#deps.clock.now())) {
      throw new AppError(
        401,
        "UNAUTHORIZED",
        "Setup session is missing or expired: open the setup link again",
      );
    }
  }

  async probe(
    token: StoredSetupToken,
    ctx: SetupAuditContext,
  ): Promise<{ cookie: string; maxAgeSeconds: number; probe: HostProbe }> {
    const deps = this.#deps;
    const cookie = this.#sessions.open(token.hash, deps.clock.now());
    const probe = await probeHost(deps.dataDir, deps.random);
    deps.transaction(() =>
      deps.audit.record({
        ...ctx,
        actor: SETUP_ACTOR,
        action: "setup.probe",
        target: "setup",
        result: "success",
      })
    );
    return { cookie, maxAgeSeconds: SETUP_SESSION_TTL_MS / 1000, probe };
  }

  getDraft(): SetupDraft {
    return (this.#deps.settings.get(SETUP_KEYS.draft) as SetupDraft | undefined) ?? {};
  }

  patchDraft(patch: SetupDraft, ctx: SetupAuditContext): SetupDraft {
    const deps = this.#deps;
    if (patch.username !== undefined) assertUsername(patch.username);
    return deps.transaction(() => {
      if (this.isComplete()) throw setupComplete();
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
  }

  async complete(
    input: { username: string; password: string; profile?: ProtectionLevel },
    ctx: SetupAuditContext,
  ): Promise<PublicUser> {
    const deps = this.#deps;
    const level = input.profile ?? this.getDraft().profile;
    const user = await deps.users.create(
      { username: input.username, password: input.password, role: "admin" },
      { ...ctx, actor: SETUP_ACTOR, action: "setup.complete", caller: OPERATOR },
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
    this.#sessions.clear();
    await removeSetupUrl(deps.dataDir);
    deps.logger.info("setup complete: the setup token is revoked", { admin: user.username });
    return user;
  }

  async cleanup(): Promise<void> {
    const deps = this.#deps;
    const now = deps.clock.now();
    this.#sessions.sweep(now);
    this.#attempts.sweep();
    const t = this.#stored();
    if (!t || t.expires_at <= now) {
      if (await removeSetupUrl(deps.dataDir)) {
        deps.logger.info("deleted the expired setup file", {
          setup_file: setupUrlPath(deps.dataDir),
        });
      }
    }
  }

  #stored(): StoredSetupToken | undefined {
    return this.#deps.settings.get(SETUP_KEYS.token) as StoredSetupToken | undefined;
  }

  /** The stored setup token while it has not expired. */
  #live(): StoredSetupToken | undefined {
    const t = this.#stored();
    return t && t.expires_at > this.#deps.clock.now() ? t : undefined;
  }

  /** A refused setup token, audited aggregated (the client is nobody known). */
  #refused(ctx: SetupAuditContext, reason: string): void {
    this.#deps.refusals.record({
      actor: SETUP_ACTOR,
      action: "setup.auth",
      target: "setup",
      clientIp: ctx.clientIp ?? "unknown",
      traceId: ctx.traceId,
      reason,
    });
  }
}

/** The first-install state machine over the settings and users. */
export function createSetup(deps: SetupDeps): Setup {
  return new SetupService(deps);
}
