/**
 * Composes what builds on identity: management API tokens (the guard's bearer hook) and their
 * cleanup worker, administrator notifications, TOTP two-factor authentication (the login's
 * code check), and the system endpoints (version, backup, OTA). `app/server.ts` passes the
 * hooks to identity and mounts the routes.
 */
import { createApiTokensRepo } from "../db/api_tokens_repo.ts";
import { createNotificationsRepo } from "../db/notifications_repo.ts";
import { type Db, transaction } from "../db/store.ts";
import { createTotpRepo } from "../db/totp_repo.ts";
import { createUsersRepo } from "../db/users_repo.ts";
import { type ApiTokens, createApiTokens } from "../mod/identity/api_tokens.ts";
import type { Audit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Config } from "../mod/config/config.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { TotpVerifier } from "../mod/identity/login.ts";
import { permissionsOf } from "../mod/identity/permissions.ts";
import { createNotifications, type Notifications } from "../mod/core/notifications.ts";
import { createOta } from "../mod/ops/ota.ts";
import type { Random } from "../mod/core/random.ts";
import { type DeploymentKeys, keyBytesAsync } from "../mod/core/deployment_keys.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import { createLockoutRepo } from "../db/lockout_repo.ts";
import { recoveryKey } from "../mod/identity/recovery_codes.ts";
import { createTokenCleanup, type TokenCleanup } from "../mod/identity/token_cleanup.ts";
import { createTwoFactor, type TwoFactor } from "../mod/identity/two_factor.ts";
import { apiTokenRoutes } from "../routes/api/api_tokens.ts";
import type { Ctx, Principal } from "../routes/api/env.ts";
import { notificationRoutes } from "../routes/api/notifications.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { systemRoutes } from "../routes/api/system.ts";
import { twoFactorRoutes } from "../routes/api/two_factor.ts";

/** How often expired 2FA setups and idle lockout entries are forgotten. */

export interface ApiAccessDeps {
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
  /** The administrator inbox (built before, so monitoring's producers share it). */
  readonly notifications?: Notifications;
  /** The clock of TOTP checks (time synchronisation may add the measured offset). */
  readonly timeClock?: Clock;
}

export interface ApiAccess {
  readonly tokens: ApiTokens;
  readonly cleanup: TokenCleanup;
  readonly notifications: Notifications;
  readonly twoFactor: TwoFactor;
  readonly routes: readonly RouteDef[];
  /** The guard's `Authorization: Bearer` hook. */
  readonly bearer: (c: Ctx, token: string) => Principal | undefined;
  /** The login's second-factor check. */
  readonly verifyTotp: TotpVerifier;
  /** The login's check of a recovery code given instead. */
  readonly verifyRecoveryCode: TotpVerifier;
}

export function createApiAccess(deps: ApiAccessDeps): ApiAccess {
  const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
  const { audit } = deps;
  const tokensRepo = createApiTokensRepo(deps.db);
  const usersRepo = createUsersRepo(deps.db);
  const tokens = createApiTokens({
    repo: tokensRepo,
    clock: deps.clock,
    random: deps.random,
    audit,
    transaction: tx,
    enabled: () => deps.config.apisec.management_api.enabled,
    userPermissions: (id) => {
      const user = usersRepo.get(id);
      return user && !user.disabled
        ? permissionsOf(deps.config.apisec.permissions, user.role)
        : undefined;
    },
  });
  const notifications = deps.notifications ?? createNotifications({
    repo: createNotificationsRepo(deps.db),
    clock: deps.clock,
    random: deps.random,
  });
  const cleanup = createTokenCleanup({
    repo: tokensRepo,
    audit,
    notifications,
    clock: deps.clock,
    logger: deps.logger,
    transaction: tx,
  });
  let codesKey: Promise<Uint8Array> | undefined;
  const twoFactor = createTwoFactor({
    users: usersRepo,
    totp: createTotpRepo(deps.db),
    box: createSecretBox(deps.keys.sealing, deps.random),
    // The same key as the sealed secrets (backed up with them), under a derived key.
    recoveryKey: () =>
      codesKey ??= keyBytesAsync(deps.keys.sealing, deps.random).then(recoveryKey).catch((err) => {
        codesKey = undefined;
        throw err;
      }),
    audit,
    notifications,
    clock: deps.timeClock ?? deps.clock,
    random: deps.random,
    logger: deps.logger,
    transaction: tx,
    roles: deps.config.apisec.permissions,
    lockouts: createLockoutRepo(deps.db),
  });
  const sink = { audit, transaction: tx };
  const routes: RouteDef[] = [
    ...apiTokenRoutes({ ...sink, tokens, created: () => cleanup.tokenCreated() }),
    ...notificationRoutes({ ...sink, notifications }),
    ...twoFactorRoutes({ ...sink, twoFactor }),
    ...systemRoutes({ ...sink, ota: createOta(deps.config.update.ota) }),
  ];

  return {
    tokens,
    cleanup,
    notifications,
    twoFactor,
    routes,
    bearer: (c, token) => tokens.authenticate(token, c.get("clientIp")),
    verifyTotp: (user, code) => twoFactor.verifyLogin(user, code),
    verifyRecoveryCode: (user, code) => twoFactor.verifyRecoveryLogin(user, code),
  };
}
