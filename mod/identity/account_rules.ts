/**
 * The validation rules every account write applies, as 400 errors naming the field: the
 * username rule (specification 2.1), the configured roles and the password policy.
 */
import { AppError } from "../core/errors.ts";
import { checkPassword, PASSWORD_RULES } from "./password_policy.ts";
import { type RoleMap, validateRole } from "./permissions.ts";
import { validateUsername } from "./username.ts";

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
export function assertRepairable(current: string): void {
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
