/**
 * Confirming an account's own password before a sensitive change (turning 2FA off, recovering
 * another account's 2FA, changing one's own password): a wrong password counts toward a lockout
 * of that account's confirmations, and a locked account is refused before the slow hash runs.
 */
import type { UserRow } from "../../db/users_repo.ts";
import { AppError } from "../core/errors.ts";
import type { Lockout } from "./lockout.ts";
import { verifyPassword } from "./password_hash.ts";

/** The lockout key of an account's password, as sensitive changes confirm it. */
export const passwordKey = (userId: string) => `password:${userId}`;

/** 429 `TOO_MANY_ATTEMPTS` while any of `keys` is locked out. */
export function assertNotLocked(lockout: Lockout, keys: readonly string[]): void {
  const wait = lockout.retryAfter(keys);
  if (wait > 0) {
    throw new AppError(429, "TOO_MANY_ATTEMPTS", `Too many failed attempts: retry in ${wait} s`, {
      details: { retry_after: wait },
    });
  }
}

/**
 * 403 `PASSWORD_INVALID` naming `field` (a counted failure) unless `password` is the account's.
 */
export async function confirmPassword(
  lockout: Lockout,
  row: UserRow,
  password: string,
  field = "password",
): Promise<void> {
  if (!(await verifyPassword(password, row.password_hash))) {
    lockout.fail([passwordKey(row.id)]);
    throw new AppError(403, "PASSWORD_INVALID", "The password is not correct", {
      details: { field },
    });
  }
}
