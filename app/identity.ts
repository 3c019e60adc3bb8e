/**
 * Composes identity and access: setup, accounts, sessions, login with lockout and CAPTCHA,
 * the guard, their routes, and the maintenance task (expired `setup.url`, sessions, CAPTCHA
 * memory and lockout counts, the aggregated audit of refused logins and its retention). The
 * lockout counts are in the store, shared by the deployment's controllers. `app/server.ts`
 * mounts the routes behind the guard.
 */
import { createSettingsRepo } from "../db/settings_repo.ts";
import { createLockoutRepo } from "../db/lockout_repo.ts";
import { createSpentIdsRepo } from "../db/spent_ids_repo.ts";
import { type Db, transaction } from "../db/store.ts";
import { createUsersRepo } from "../db/users_repo.ts";
import type { Audit } from "../mod/core/audit.ts";
import { type DeploymentKeys, keyBytesAsync } from "../mod/core/deployment_keys.ts";
import { type Captcha, createCaptcha } from "../mod/identity/captcha.ts";
import { createCaptchaPolicy } from "../mod/identity/captcha_policy.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Config } from "../mod/config/config.ts";
import type { EventLog } from "../mod/core/event_log.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Notify } from "../mod/core/notifications.ts";
import { createLogin, type Login, type TotpVerifier } from "../mod/identity/login.ts";
import { createRefusalAudit, type RefusalAudit } from "../mod/identity/refusal_audit.ts";
import type { Random } from "../mod/core/random.ts";
import { createSessions, type Sessions } from "../mod/identity/sessions.ts";
import { createSetup, type Setup } from "../mod/identity/setup.ts";
import { SetupTokenError, setupTokenProblem } from "../mod/identity/setup_token.ts";
import { createUsers, type Users } from "../mod/identity/users.ts";
import { createPreferences } from "../mod/identity/preferences.ts";
import { auditRoutes } from "../routes/api/audit.ts";
import { createAuditTargetNames } from "../db/audit_target_names.ts";
import { authRoutes } from "../routes/api/auth.ts";
import { createConsoleCookies, isHttpsBaseUrl } from "../routes/api/cookies.ts";
import { consoleRoutes } from "../routes/api/console.ts";
import type { Ctx, Principal } from "../routes/api/env.ts";
import { createGuard } from "../routes/api/guard.ts";
import type { Guard, RouteDef } from "../routes/api/route.ts";
import { setupRoutes } from "../routes/api/setup.ts";
import { userRoutes } from "../routes/api/users.ts";

/** How often the scheduler's `identity-maintenance` task runs by default. */
export const MAINTENANCE_EVERY_MS = 30_000;

export interface IdentityDeps {
  readonly db: Db;
  /** The process's one audit trail. */
  readonly audit: Audit;
  readonly config: Config;
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly env: { readonly setupToken?: string };
  /** The runtime log's rate-limited events (refused logins). */
  readonly events?: EventLog;
  /** Waits before answering a flooding client's refusal. */
  readonly sleep: (ms: number) => Promise<void>;
  /** API-token authentication, when installed (next issue). */
  readonly bearer?: (
    c: Ctx,
    token: string,
  ) => Principal | undefined | Promise<Principal | undefined>;
  readonly verifyTotp?: TotpVerifier;
  readonly verifyRecoveryCode?: TotpVerifier;
  /** Cluster node authentication (the node's client certificate), on a controller. */
  readonly node?: (c: Ctx) => boolean | Promise<boolean>;
  /** Raises administrator notifications (login lockouts, administrators' password resets). */
  readonly notify?: Notify;
}

export interface Identity {
  readonly guard: Guard;
  readonly routes: readonly RouteDef[];
  readonly audit: Audit;
  readonly setup: Setup;
  readonly users: Users;
  readonly sessions: Sessions;
  readonly login: Login;
  /** Aggregated audit of refused authentications (flushed by maintenance). */
  readonly refusals: RefusalAudit;
  readonly captcha: Captcha;
  /** Issues the setup token (while setup is incomplete). */
  start(baseUrl: string): Promise<void>;
  /** One maintenance pass (the scheduler's `identity-maintenance` task, every 30 s). */
  maintenance(): Promise<void>;
  stop(): void;
}

export async function createIdentity(deps: IdentityDeps): Promise<Identity> {
  const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
  const settings = createSettingsRepo(deps.db);
  const usersRepo = createUsersRepo(deps.db);
  // Failure counts in the store: the deployment's controllers count the same failures.
  const lockouts = createLockoutRepo(deps.db);
  const { audit } = deps;
  const roles = deps.config.apisec.permissions;
  const key = await keyBytesAsync(deps.keys.signing, deps.random);

  const users = createUsers({
    repo: usersRepo,
    audit,
    clock: deps.clock,
    random: deps.random,
    roles,
    transaction: tx,
    notify: deps.notify,
    lockouts,
  });
  const refusals = createRefusalAudit({
    audit,
    clock: deps.clock,
    transaction: tx,
    events: deps.events,
  });
  const setup = createSetup({
    settings,
    usersRepo,
    users,
    audit,
    refusals,
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
    dataDir: deps.dataDir,
    transaction: tx,
    lockouts,
  });
  // A supplied token is checked before any listener opens; the message never quotes it.
  if (!setup.isComplete() && deps.env.setupToken !== undefined) {
    const problem = setupTokenProblem(deps.env.setupToken);
    if (problem) throw new SetupTokenError(problem);
  }
  const sessions = createSessions({
    repo: usersRepo,
    clock: deps.clock,
    random: deps.random,
    key,
    roles,
  });
  const captcha = createCaptcha({
    key,
    clock: deps.clock,
    random: deps.random,
    spent: createSpentIdsRepo(deps.db),
  });
  const captchaPolicy = createCaptchaPolicy(settings);
  const login = createLogin({
    repo: usersRepo,
    sessions,
    captcha,
    captchaPolicy,
    audit,
    refusals,
    clock: deps.clock,
    random: deps.random,
    transaction: tx,
    verifyTotp: deps.verifyTotp,
    verifyRecoveryCode: deps.verifyRecoveryCode,
    lockouts,
    lockedOut: deps.notify &&
      ((username, clientIp) => {
        try {
          deps.notify!({
            level: "warning",
            kind: "login.lockout",
            title: `Sign-in locked for "${username.slice(0, 64)}" from ${clientIp}`,
            body:
              `Repeated failed sign-ins locked this username from ${clientIp} for a while; other addresses are not affected.`,
            data: { username: username.slice(0, 64), client_ip: clientIp },
            link: "/console/audit",
          });
        } catch (err) {
          deps.logger.error("lockout notification failed", { error: err as Error });
        }
      }),
  });
  const sink = { audit, transaction: tx };
  const slow = { refusals, sleep: deps.sleep };
  const cookies = createConsoleCookies({
    httpsBaseUrl: isHttpsBaseUrl(deps.config.server.management.base_url),
  });
  const guard = createGuard({
    sessions,
    setup,
    audit,
    transaction: tx,
    bearer: deps.bearer,
    node: deps.node,
  });
  const routes: RouteDef[] = [
    ...setupRoutes(setup, sink, slow, cookies),
    ...authRoutes({
      ...sink,
      login,
      sessions,
      captcha,
      captchaPolicy,
      refusals,
      sleep: deps.sleep,
      clock: deps.clock,
      preferences: createPreferences({ settings, clock: deps.clock }),
      cookies,
    }),
    ...userRoutes({ ...sink, users }),
    ...auditRoutes(audit, createAuditTargetNames(deps.db).lookup),
    ...consoleRoutes(),
  ];

  const maintenance = async () => {
    await setup.cleanup();
    tx(() => sessions.purge());
    captcha.sweep();
    login.throttle.sweep();
    users.sweep();
    refusals.sweep();
  };
  return {
    guard,
    routes,
    audit,
    setup,
    users,
    sessions,
    login,
    refusals,
    captcha,
    async start(baseUrl) {
      await setup.start(baseUrl, deps.env.setupToken);
    },
    maintenance,
    stop() {
      // Counts of refused logins since the last pass are written before the store closes.
      refusals.flush();
    },
  };
}
