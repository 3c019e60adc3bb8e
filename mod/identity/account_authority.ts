/**
 * Who may change which account: no privilege escalation through user management. A caller gives
 * an account only a role it holds entirely, and changes an account (password, second factor,
 * role, name, disabled state) only when that account's role holds no permission the caller
 * lacks. The "cannot grant more than it holds" rule is the one API tokens follow
 * (`uncovered` in permissions.ts).
 */
import { AppError, badRequest } from "../core/errors.ts";
import { assertRole } from "./account_rules.ts";
import { grants, permissionsOf, type RoleMap, uncovered } from "./permissions.ts";

/** Who asks for an account change, with the permissions it acts with now. */
export interface Caller {
  /** The signed-in user's id; undefined for an API token and the host operator. */
  readonly userId?: string;
  readonly permissions: readonly string[];
}

/** The host operator (first-install setup, the command line): every permission. */
export const OPERATOR: Caller = { permissions: ["*"] };

/** The permission that manages accounts; an account whose role holds it is an administrator. */
export const MANAGE_USERS = "write:users";

/** The account a change acts on: what the checks need of it. */
export interface Account {
  readonly id: string;
  readonly username: string;
  readonly role: string;
}

const escalation = (message: string, permissions: readonly string[]) =>
  new AppError(403, "PERMISSION_ESCALATION", message, { details: { permissions } });

/** True when an account with `role` can manage accounts. */
export function isAdministrator(roles: RoleMap, role: string): boolean {
  return grants(permissionsOf(roles, role), MANAGE_USERS);
}

/** 403 `PERMISSION_ESCALATION` unless `caller` holds every permission of `role`. */
export function assertMayGrantRole(roles: RoleMap, caller: Caller, role: string): void {
  const missing = uncovered(caller.permissions, permissionsOf(roles, role));
  if (missing.length > 0) {
    throw escalation(
      `Cannot give the role "${role}": it holds permissions you do not: ${missing.join(", ")}`,
      missing,
    );
  }
}

/**
 * 403 `PERMISSION_ESCALATION` unless `caller` holds every permission of `account`'s role (one's
 * own account always passes: a user holds their own role).
 */
export function assertMayManage(roles: RoleMap, caller: Caller, account: Account): void {
  if (caller.userId === account.id) return;
  const missing = uncovered(caller.permissions, permissionsOf(roles, account.role));
  if (missing.length > 0) {
    throw escalation(
      `Cannot change the account "${account.username}": its role "${account.role}" holds permissions you do not: ${
        missing.join(", ")
      }`,
      missing,
    );
  }
}

/** An account update as `assertMayUpdate` judges it (the fields of `UserUpdate`). */
export interface AccountChange {
  readonly username?: string;
  readonly password?: string;
  readonly role?: string;
  readonly disabled?: boolean;
  readonly current_password?: string;
}

/** The fields of `change` that differ from `account` (a password always counts). */
function changedFields(account: Account & { disabled: number }, change: AccountChange): string[] {
  const fields: string[] = [];
  if (change.username !== undefined && change.username !== account.username) {
    fields.push("username");
  }
  if (change.role !== undefined && change.role !== account.role) fields.push("role");
  if (change.disabled !== undefined && change.disabled !== (account.disabled === 1)) {
    fields.push("disabled");
  }
  if (change.password !== undefined) fields.push("password");
  return fields;
}

/**
 * Who may ask for an account update: without `write:users` only the owner (the route lets a
 * signed-in user reach their own account), for their password alone (403 `FORBIDDEN`); anyone
 * else must hold the account's role and any new one (403 `PERMISSION_ESCALATION`, and 400
 * `ROLE_INVALID` for a role that is not configured). `current_password` belongs to one's own
 * password change only, which needs it (400 naming it).
 */
export function assertMayUpdate(
  roles: RoleMap,
  caller: Caller,
  account: Account & { disabled: number },
  change: AccountChange,
): void {
  const own = caller.userId === account.id;
  if (!grants(caller.permissions, MANAGE_USERS)) {
    const others = changedFields(account, change).filter((f) => f !== "password");
    if (!own || others.length > 0) {
      throw new AppError(
        403,
        "FORBIDDEN",
        `Permission "${MANAGE_USERS}" is required${
          own ? ` to change ${others.join(", ")}: you may change only your own password` : ""
        }`,
        { details: { permission: MANAGE_USERS } },
      );
    }
  }
  assertMayManage(roles, caller, account);
  if (change.role !== undefined) {
    assertRole(roles, change.role);
    if (change.role !== account.role) assertMayGrantRole(roles, caller, change.role);
  }
  const ownPassword = own && change.password !== undefined;
  if (change.current_password !== undefined && !ownPassword) {
    throw badRequest(
      'Invalid field "current_password": only sent with "password" when changing your own password',
      "current_password",
    );
  }
  if (ownPassword && change.current_password === undefined) {
    throw badRequest(
      'Invalid field "current_password": required to change your own password',
      "current_password",
    );
  }
}
