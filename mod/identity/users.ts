/**
 * Accounts: create, list and update, each validated by the one username, role and password
 * rule, authorised by `account_authority.ts` (no escalation), hashed before the transaction
 * (hashing is slow), and audited inside it. Changing one's own password confirms the current one;
 * an administrator's password set by anyone else is audited as `user.password.reset` and
 * notified.
 */
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Notify } from "../core/notifications.ts";
import { type Random, randomHex } from "../core/random.ts";
import {
  assertMayGrantRole,
  assertMayUpdate,
  type Caller,
  isAdministrator,
} from "./account_authority.ts";
import { assertPassword, assertRepairable, assertRole, assertUsername } from "./account_rules.ts";
import { createLockout, type Lockout, type LockoutStore } from "./lockout.ts";
import { LOGIN_LOCKOUT } from "./login_throttle.ts";
import { assertNotLocked, confirmPassword, passwordKey } from "./password_confirm.ts";
import { hashPassword } from "./password_hash.ts";
import type { RoleMap } from "./permissions.ts";

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

export { assertPassword, assertRole, assertUsername } from "./account_rules.ts";

export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/** An account change's audit facts and who asks for it (`OPERATOR` for setup and the CLI). */
export type ChangeContext = AuditContext & { readonly caller: Caller };

export interface UsersDeps {
  readonly repo: UsersRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly roles: RoleMap;
  readonly transaction: <T>(fn: () => T) => T;
  /** Raises administrator notifications (an administrator's password set by someone else). */
  readonly notify?: Notify;
  /** Where the failure counts live (the store: shared by the deployment's controllers). */
  readonly lockouts?: LockoutStore;
}

/** The fields of an account an update may change. */
export interface UserUpdate {
  readonly username?: string;
  readonly password?: string;
  readonly role?: string;
  readonly disabled?: boolean;
  /** The caller's current password: required to change one's own password, refused otherwise. */
  readonly current_password?: string;
}

/** Accounts (what `createUsers` returns). */
export interface Users {
  /** Every account. */
  list(): PublicUser[];
  /** One account; 404 `NOT_FOUND` when there is none with this id. */
  get(id: string): PublicUser;
  /**
   * Creates an account with a role the caller holds entirely (403 `PERMISSION_ESCALATION`
   * otherwise). `inTransaction` runs extra work (setup completion) in the same transaction as
   * the insert and its audit record.
   */
  create(
    input: { username: string; password: string; role: string },
    ctx: ChangeContext & { action?: string },
    inTransaction?: (row: UserRow) => void,
  ): Promise<PublicUser>;
  /**
   * Changes username, role, password and/or the disabled flag; each change advances the
   * credential epoch, so the account's sessions end. The caller must hold every permission of
   * the account's role and of a new role (403 `PERMISSION_ESCALATION`); without `write:users` a
   * signed-in user changes only their own password. Changing one's own password needs
   * `current_password`. Nobody disables their own account, and the last account that can manage
   * users is neither demoted nor disabled.
   */
  update(id: string, input: UserUpdate, ctx: ChangeContext): Promise<PublicUser>;
  /** Forgets wrong current passwords whose window and lock have passed. */
  sweep(): void;
}

const taken = (username: string) =>
  new AppError(409, "USERNAME_TAKEN", `Username "${username}" is already taken`, {
    details: { field: "username" },
  });

class UsersService implements Users {
  readonly #deps: UsersDeps;
  /** Wrong current passwords, per account (the keys of the two-factor confirmations). */
  readonly #lockout: Lockout;

  constructor(deps: UsersDeps) {
    this.#deps = deps;
    this.#lockout = createLockout(
      deps.clock,
      LOGIN_LOCKOUT,
      deps.lockouts && { store: deps.lockouts, scope: "password" },
    );
  }

  sweep(): void {
    this.#lockout.sweep();
  }

  list(): PublicUser[] {
    return this.#deps.repo.list().map(toPublicUser);
  }

  get(id: string): PublicUser {
    return toPublicUser(this.#row(id));
  }

  async create(
    input: { username: string; password: string; role: string },
    ctx: ChangeContext & { action?: string },
    inTransaction?: (row: UserRow) => void,
  ): Promise<PublicUser> {
    const deps = this.#deps;
    assertUsername(input.username);
    assertRole(deps.roles, input.role);
    assertMayGrantRole(deps.roles, ctx.caller, input.role);
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
        actor: ctx.actor,
        clientIp: ctx.clientIp,
        traceId: ctx.traceId,
        action: ctx.action ?? "user.create",
        target: `user:${id}`,
        result: "success",
        detail: { username: input.username, role: input.role },
      });
      return toPublicUser(row);
    });
  }

  async update(id: string, input: UserUpdate, ctx: ChangeContext): Promise<PublicUser> {
    const deps = this.#deps;
    const before = this.#row(id);
    const own = ctx.caller.userId === id;
    assertMayUpdate(deps.roles, ctx.caller, before, input);
    // A supplied username is always checked, even when unchanged: PUT cannot keep or pick
    // a non-canonical historical name.
    if (input.username !== undefined) assertUsername(input.username);
    // Nor can it repair one (specification 4.3): that is `waf user repair-username`, which
    // revokes the sessions and writes the append-only repair record in the same transaction.
    if (input.username !== undefined && input.username !== before.username) {
      assertRepairable(before.username);
    }
    const username = input.username ?? before.username;
    if (input.password !== undefined) assertPassword(input.password, username);
    if (own && input.password !== undefined) await this.#confirmCurrent(before, input);
    const hash = input.password === undefined
      ? undefined
      : await hashPassword(input.password, deps.random);
    return deps.transaction(() => {
      const row = this.#row(id);
      const changed = this.#apply(row, { ...input, hash }, ctx);
      const audit = { actor: ctx.actor, clientIp: ctx.clientIp, traceId: ctx.traceId };
      deps.audit.record({
        ...audit,
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
      if (changed.includes("password") && !own && isAdministrator(deps.roles, row.role)) {
        this.#resetRecorded(row, audit);
      }
      return toPublicUser(deps.repo.get(id)!);
    });
  }

  /** 403 `PASSWORD_INVALID` (counted toward a lockout) unless the current password is right. */
  async #confirmCurrent(row: UserRow, input: UserUpdate): Promise<void> {
    assertNotLocked(this.#lockout, [passwordKey(row.id)]);
    await confirmPassword(this.#lockout, row, input.current_password!, "current_password");
    this.#lockout.reset(passwordKey(row.id));
  }

  /** An administrator's password set by someone else: its own audit record and a notification. */
  #resetRecorded(row: UserRow, audit: AuditContext): void {
    const deps = this.#deps;
    deps.audit.record({
      ...audit,
      action: "user.password.reset",
      target: `user:${row.id}`,
      result: "success",
      detail: { username: row.username, role: row.role },
    });
    const by = audit.actor.name ?? audit.actor.type;
    deps.notify?.({
      level: "warning",
      kind: "user.password.reset",
      title: `Password of administrator ${row.username} set by ${by}`,
      body:
        `${by} set the password of the administrator account ${row.username} (${row.id}); its sessions have ended. If this was not expected, check the audit trail (action user.password.reset).`,
      data: { user_id: row.id, username: row.username, actor: audit.actor },
      params: { user_id: row.id, username: row.username, by },
      link: "/console/users",
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
    input: Omit<UserUpdate, "password" | "current_password"> & { hash?: string },
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
      const losesAdmin = this.#canManageUsers(row) && !isAdministrator(deps.roles, input.role);
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
    return !row.disabled && isAdministrator(this.#deps.roles, row.role);
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
