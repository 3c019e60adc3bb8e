/**
 * Account recovery from the host (`waf user ...`): set a password, ensure an admin exists,
 * rename, and repair a historical non-canonical username. Each change runs in one store
 * transaction with its audit record, and advances the credential epoch so the server drops
 * existing sessions at their next request. Failures are AppErrors whose codes the CLI words.
 */
import type { AccountRepairRepo } from "../../db/account_repair_repo.ts";
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Actor, Audit } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { hashPassword } from "./password_hash.ts";
import { checkPassword } from "./password_policy.ts";
import type { RoleMap } from "./permissions.ts";
import { type Random, randomHex } from "../core/random.ts";
import { validateUsername } from "./username.ts";
import { assertRole } from "./users.ts";

export const ADMIN_ROLE = "admin";

export interface LocalAccountsDeps {
  readonly users: UsersRepo;
  readonly repairs: AccountRepairRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly roles: RoleMap;
  readonly transaction: <T>(fn: () => T) => T;
  /** Who runs the command on the host, e.g. `alice (uid 1000)`. */
  readonly osUser: string;
  /** Test-only fault points: a hook that throws proves the transaction rolls back. */
  readonly hooks?: { readonly afterUsernameUpdate?: () => void };
}

function assertCanonical(name: string): void {
  const check = validateUsername(name);
  if (!check.ok) {
    throw new AppError(400, "USERNAME_INVALID", `Invalid username "${name}": ${check.reason}`, {
      details: { name, reason: check.reason },
      problem: check.problem,
    });
  }
}

function assertPassword(password: string, username: string): void {
  const rules = checkPassword(password, username);
  if (rules.length > 0) {
    throw new AppError(400, "PASSWORD_POLICY", "Password does not meet the policy", {
      details: { rules },
    });
  }
}

function notFound(by: "name" | "id", value: string): AppError {
  const what = by === "name" ? `named "${value}"` : `with id "${value}"`;
  return new AppError(404, "USER_NOT_FOUND", `No account ${what}`, { details: { by, value } });
}

function taken(name: string): AppError {
  return new AppError(409, "USERNAME_TAKEN", `Username "${name}" belongs to another account`, {
    details: { name },
  });
}

/** Account recovery from the host (what `createLocalAccounts` returns). */
export interface LocalAccounts {
  /**
   * Sets the password of the account named exactly `username` (a historical name works
   * here: it is how its owner gets back in to have it repaired); `reset2fa` also turns TOTP off.
   */
  setPassword(
    username: string,
    password: string,
    options: { reset2fa: boolean; generated: boolean },
  ): Promise<{ user: UserRow; totpWasEnabled: boolean }>;
  /** Creates an admin named `username`, or makes the existing one an enabled admin. */
  ensureAdmin(
    username: string,
    password: string,
  ): Promise<{ user: UserRow; created: boolean; previousRole?: string }>;
  /**
   * Renames a canonical account to another canonical name and revokes its sessions. A
   * historical non-canonical name cannot be selected here: that is `repairUsername`'s job,
   * which leaves a repair record.
   */
  rename(oldName: string, newName: string): { user: UserRow; revokedSessions: number };
  /**
   * Repairs the username of the account with exactly this id, only when its current name
   * breaks today's rule. One transaction: the update, revoking every unrevoked session, the
   * append-only repair record (and the general audit record). Id, password hash, role and
   * TOTP state are untouched.
   */
  repairUsername(
    userId: string,
    newName: string,
    reason: string,
  ): { user: UserRow; previous: string; revokedSessions: number };
}

class LocalAccountService implements LocalAccounts {
  readonly #deps: LocalAccountsDeps;
  readonly #actor: Actor;

  constructor(deps: LocalAccountsDeps) {
    this.#deps = deps;
    this.#actor = { type: "cli", name: deps.osUser };
  }

  async setPassword(
    username: string,
    password: string,
    options: { reset2fa: boolean; generated: boolean },
  ): Promise<{ user: UserRow; totpWasEnabled: boolean }> {
    const deps = this.#deps;
    const found = deps.users.getByUsername(username);
    if (!found) throw notFound("name", username);
    assertPassword(password, username);
    const hash = await hashPassword(password, deps.random);
    return deps.transaction(() => {
      const row = deps.users.getByUsername(username);
      if (!row) throw notFound("name", username);
      const now = deps.clock.now();
      deps.users.updatePassword(row.id, hash, now);
      const totpWasEnabled = row.totp_enabled === 1;
      if (options.reset2fa) deps.users.setTotp(row.id, null, now);
      this.#record("user.password", row, {
        username,
        generated: options.generated,
        reset_2fa: options.reset2fa,
      });
      return { user: deps.users.get(row.id)!, totpWasEnabled };
    });
  }

  async ensureAdmin(
    username: string,
    password: string,
  ): Promise<{ user: UserRow; created: boolean; previousRole?: string }> {
    const deps = this.#deps;
    assertCanonical(username);
    assertRole(deps.roles, ADMIN_ROLE);
    assertPassword(password, username);
    const hash = await hashPassword(password, deps.random);
    return deps.transaction(() => {
      const now = deps.clock.now();
      const row = deps.users.getByUsername(username);
      if (!row) {
        const id = randomHex(deps.random);
        deps.users.insert({ id, username, password_hash: hash, role: ADMIN_ROLE, now });
        const created = deps.users.get(id)!;
        this.#record("user.create", created, { username, role: ADMIN_ROLE, ensure_admin: true });
        return { user: created, created: true };
      }
      if (row.role !== ADMIN_ROLE) deps.users.updateRole(row.id, ADMIN_ROLE, now);
      if (row.disabled) deps.users.setDisabled(row.id, false, now);
      deps.users.updatePassword(row.id, hash, now);
      this.#record("user.ensure_admin", row, {
        username,
        role: ADMIN_ROLE,
        previous_role: row.role,
        enabled: row.disabled === 1,
      });
      return { user: deps.users.get(row.id)!, created: false, previousRole: row.role };
    });
  }

  rename(oldName: string, newName: string): { user: UserRow; revokedSessions: number } {
    const deps = this.#deps;
    assertCanonical(oldName);
    assertCanonical(newName);
    if (oldName === newName) {
      throw new AppError(400, "SAME_USERNAME", "The new username equals the old one");
    }
    return deps.transaction(() => {
      const row = deps.users.getByUsername(oldName);
      if (!row) throw notFound("name", oldName);
      if (deps.users.getByUsername(newName)) throw taken(newName);
      const now = deps.clock.now();
      deps.users.updateUsername(row.id, newName, now);
      const revokedSessions = deps.users.revokeAllSessions(row.id, now);
      this.#record("user.rename", row, {
        previous_username: oldName,
        username: newName,
        revoked_sessions: revokedSessions,
      });
      return { user: deps.users.get(row.id)!, revokedSessions };
    });
  }

  repairUsername(
    userId: string,
    newName: string,
    reason: string,
  ): { user: UserRow; previous: string; revokedSessions: number } {
    const deps = this.#deps;
    if (reason.trim() === "") {
      throw new AppError(400, "REASON_REQUIRED", "A reason is required");
    }
    return deps.transaction(() => {
      const row = deps.users.get(userId);
      if (!row) throw notFound("id", userId);
      if (validateUsername(row.username).ok) {
        throw new AppError(
          409,
          "USERNAME_CANONICAL",
          `The username of "${userId}" already follows the rule`,
          { details: { name: row.username } },
        );
      }
      assertCanonical(newName);
      const owner = deps.users.getByUsername(newName);
      if (owner) throw taken(newName);
      const now = deps.clock.now();
      deps.users.updateUsername(row.id, newName, now);
      deps.hooks?.afterUsernameUpdate?.();
      const revokedSessions = deps.users.revokeAllSessions(row.id, now);
      deps.repairs.insert({
        user_id: row.id,
        old_username: row.username,
        new_username: newName,
        reason,
        os_user: deps.osUser,
        revoked_sessions: revokedSessions,
        time: now,
      });
      this.#record("user.repair_username", row, {
        previous_username: row.username,
        username: newName,
        reason,
        revoked_sessions: revokedSessions,
      });
      return { user: deps.users.get(row.id)!, previous: row.username, revokedSessions };
    });
  }

  #record(action: string, row: UserRow, detail: Record<string, unknown>): void {
    this.#deps.audit.record({
      actor: this.#actor,
      action,
      target: `user:${row.id}`,
      result: "success",
      detail,
    });
  }
}

/** The host's account recovery over the users and repair repositories. */
export function createLocalAccounts(deps: LocalAccountsDeps): LocalAccounts {
  return new LocalAccountService(deps);
}
