/**
 * Accounts: create, list and update, each validated by the one username, role and password
 * rule, hashed before the transaction (hashing is slow), and audited inside it.
 */
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { hashPassword } from "./password_hash.ts";
import { checkPassword, PASSWORD_RULES } from "./password_policy.ts";
import { grants, permissionsOf, type RoleMap, validateRole } from "./permissions.ts";
import { type Random, randomHex } from "../core/random.ts";
import { validateUsername } from "./username.ts";

/** What the API returns for an account: never hashes or secrets. */
export interface PublicUser {
  readonly id: string;
  readonly username: string;
  readonly role: string;
  readonly totp_enabled: boolean;
  /** A disabled account cannot sign in; its sessions and API tokens stop working. */
  readonly disabled: boolean;
  readonly created_at: string;
  readonly updated_at: string;
}

export function toPublicUser(row: UserRow): PublicUser {
  return {
    id: row.id,
    username: row.username,
    role: row.role,
    totp_enabled: row.totp_enabled === 1,
    disabled: row.disabled === 1,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** Throws 400 `USERNAME_INVALID` unless `username` follows the rule exactly. */
export function assertUsername(username: string): void {
  const check = validateUsername(username);
  if (!check.ok) {
    throw new AppError(400, "USERNAME_INVALID", `Invalid username: ${check.reason}`, {
      details: { field: "username", reason: check.reason },
      problem: check.problem,
    });
  }
}

/**
 * Throws 400 `USERNAME_INVALID` when the account's stored name breaks the rule (a name from before
 * the rule): renaming it through the API would be a repair, which only the CLI performs.
 */
function assertRepairable(current: string): void {
  const check = validateUsername(current);
  if (!check.ok) {
    throw new AppError(
      400,
      "USERNAME_INVALID",
      `Invalid username: the account's current name ${check.reason}, and the API cannot repair it: run "waf user repair-username USER_ID NEW_USERNAME --reason TEXT" on the host`,
      { details: { field: "username", reason: "repair_required" }, problem: check.problem },
    );
  }
}

/** Throws 400 `PASSWORD_POLICY` listing every failed rule. */
export function assertPassword(password: string, username: string): void {
  const failed = checkPassword(password, username);
  if (failed.length > 0) {
    throw new AppError(
      400,
      "PASSWORD_POLICY",
      `Password does not meet the policy: ${failed.map((r) => PASSWORD_RULES[r]).join("; ")}`,
      { details: { field: "password", rules: failed } },
    );
  }
}

/** Throws 400 `ROLE_INVALID` unless `role` is exactly a configured role. */
export function assertRole(roles: RoleMap, role: string): void {
  const check = validateRole(roles, role);
  if (!check.ok) {
    throw new AppError(400, "ROLE_INVALID", `Invalid role: ${check.reason}`, {
      details: { field: "role", reason: check.reason },
    });
  }
}

export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface UsersDeps {
  readonly repo: UsersRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly roles: RoleMap;
  readonly transaction: <T>(fn: () => T) => T;
}

/** The fields of an account an update may change. */
export interface UserUpdate {
  readonly username?: string;
  readonly password?: string;
  readonly role?: string;
  readonly disabled?: boolean;
}

/** Accounts (what `createUsers` returns). */
export interface Users {
  /** Every account. */
  list(): PublicUser[];
  /** One account; 404 `NOT_FOUND` when there is none with this id. */
  get(id: string): PublicUser;
  /**
   * Creates an account. `inTransaction` runs extra work (setup completion) in the same
   * transaction as the insert and its audit record.
   */
  create(
    input: { username: string; password: string; role: string },
    ctx: AuditContext & { action?: string },
    inTransaction?: (row: UserRow) => void,
  ): Promise<PublicUser>;
  /**
   * Changes username, role, password and/or the disabled flag; each change advances the
   * credential epoch, so the account's sessions end. Nobody disables their own account, and
   * the last account that can manage users is neither demoted nor disabled.
   */
  update(id: string, input: UserUpdate, ctx: AuditContext): Promise<PublicUser>;
}

const taken = (username: string) =>
  new AppError(409, "USERNAME_TAKEN", `Username "${username}" is already taken`, {
    details: { field: "username" },
  });

class UsersService implements Users {
  readonly #deps: UsersDeps;

  constructor(deps: UsersDeps) {
    this.#deps = deps;
  }

  list(): PublicUser[] {
    return this.#deps.repo.list().map(toPublicUser);
  }

  get(id: string): PublicUser {
    return toPublicUser(this.#row(id));
  }

  async create(
    input: { username: string; password: string; role: string },
    ctx: AuditContext & { action?: string },
    inTransaction?: (row: UserRow) => void,
  ): Promise<PublicUser> {
    const deps = this.#deps;
    assertUsername(input.username);
    assertRole(deps.roles, input.role);
    assertPassword(input.password, input.username);
    const hash = await hashPassword(input.password, deps.random);
    return deps.transaction(() => {
      if (deps.repo.getByUsername(input.username)) throw taken(input.username);
      const id = randomHex(deps.random);
      deps.repo.insert({
        id,
        username: input.username,
        password_hash: hash,
        role: input.role,
        now: deps.clock.now(),
      });
      const row = deps.repo.get(id)!;
      inTransaction?.(row);
      deps.audit.record({
        ...ctx,
        action: ctx.action ?? "user.create",
        target: `user:${id}`,
        result: "success",
        detail: { username: input.username, role: input.role },
      });
      return toPublicUser(row);
    });
  }

  async update(id: string, input: UserUpdate, ctx: AuditContext): Promise<PublicUser> {
    const deps = this.#deps;
    const before = this.#row(id);
    // A supplied username is always checked, even when unchanged: PUT cannot keep or pick
    // a non-canonical historical name.
    if (input.username !== undefined) assertUsername(input.username);
    // Nor can it repair one (specification 4.3): that is `waf user repair-username`, which
    // revokes the sessions and writes the append-only repair record in the same transaction.
    if (input.username !== undefined && input.username !== before.username) {
      assertRepairable(before.username);
    }
    if (input.role !== undefined) assertRole(deps.roles, input.role);
    const username = input.username ?? before.username;
    if (input.password !== undefined) assertPassword(input.password, username);
    const hash = input.password === undefined
      ? undefined
      : await hashPassword(input.password, deps.random);
    return deps.transaction(() => {
      const row = this.#row(id);
      const changed = this.#apply(row, { ...input, hash }, ctx);
      deps.audit.record({
        ...ctx,
        action: "user.update",
        target: `user:${id}`,
        result: "success",
        detail: {
          changed,
          username: username,
          ...(changed.includes("username") ? { previous_username: row.username } : {}),
          ...(changed.includes("role") ? { role: input.role, previous_role: row.role } : {}),
        },
      });
      return toPublicUser(deps.repo.get(id)!);
    });
  }

  /** The account with this id; 404 `NOT_FOUND` when there is none. */
  #row(id: string): UserRow {
    const row = this.#deps.repo.get(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No user with id "${id}"`);
    return row;
  }

  /** Writes what `input` changes of `row` (inside the update's transaction); returns what. */
  #apply(
    row: UserRow,
    input: Omit<UserUpdate, "password"> & { hash?: string },
    ctx: AuditContext,
  ): string[] {
    const deps = this.#deps;
    const now = deps.clock.now();
    const changed: string[] = [];
    if (input.username !== undefined && input.username !== row.username) {
      if (deps.repo.getByUsername(input.username)) throw taken(input.username);
      deps.repo.updateUsername(row.id, input.username, now);
      changed.push("username");
    }
    if (input.role !== undefined && input.role !== row.role) {
      const losesAdmin = this.#canManageUsers(row) &&
        !grants(permissionsOf(deps.roles, input.role), "write:users");
      if (losesAdmin && this.#managers() <= 1) {
        throw new AppError(
          409,
          "LAST_ADMIN",
          "Refusing to change the role of the last account that can manage users",
        );
      }
      deps.repo.updateRole(row.id, input.role, now);
      changed.push("role");
    }
    if (input.hash !== undefined) {
      deps.repo.updatePassword(row.id, input.hash, now);
      changed.push("password");
    }
    if (input.disabled !== undefined && input.disabled !== (row.disabled === 1)) {
      if (input.disabled) this.#refuseDisable(row, ctx);
      deps.repo.setDisabled(row.id, input.disabled, now);
      changed.push(input.disabled ? "disabled" : "enabled");
    }
    return changed;
  }

  #canManageUsers(row: UserRow): boolean {
    return !row.disabled && grants(permissionsOf(this.#deps.roles, row.role), "write:users");
  }

  /** How many accounts can manage users. */
  #managers(): number {
    return this.#deps.repo.list().filter((r) => this.#canManageUsers(r)).length;
  }

  /** Nobody disables their own account, nor the last one that can manage users. */
  #refuseDisable(row: UserRow, ctx: AuditContext): void {
    if (ctx.actor.type === "user" && ctx.actor.id === row.id) {
      throw new AppError(409, "SELF_DISABLE", "Refusing to disable your own account");
    }
    if (this.#canManageUsers(row) && this.#managers() <= 1) {
      throw new AppError(
        409,
        "LAST_ADMIN",
        "Refusing to disable the last account that can manage users",
      );
    }
  }
}

/** The account service over `deps.repo`. */
export function createUsers(deps: UsersDeps): Users {
  return new UsersService(deps);
}
