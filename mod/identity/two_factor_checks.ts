/**
 * The checks every two-factor operation is built from: the account must exist, its keys must not
 * be locked out, the password and the code must be right (a wrong one counts toward the lockout),
 * and the sealed secret must open. One lockout serves them all and the login check.
 */
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { SecretBox } from "../core/secret_box.ts";
import { createLockout, type Lockout, type LockoutStore } from "./lockout.ts";
import { LOGIN_LOCKOUT } from "./login_throttle.ts";
import { assertNotLocked, confirmPassword, passwordKey } from "./password_confirm.ts";
import { matchTotpStep } from "./totp.ts";

/** The lockout key of an account's two-factor codes. */
export const codeKey = (userId: string) => `totp:${userId}`;
export { passwordKey };

export const invalidCode = () =>
  new AppError(403, "TOTP_INVALID", "Invalid two-factor code", { details: { field: "code" } });

export const notEnabled = () =>
  new AppError(409, "TOTP_NOT_ENABLED", "Two-factor authentication is not enabled");

export interface TwoFactorChecksDeps {
  readonly users: UsersRepo;
  readonly box: SecretBox;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where the failure counts live (the store: shared by the deployment's controllers). */
  readonly lockouts?: LockoutStore;
}

/** The account, lockout, password, code and secret checks of two-factor operations. */
export class TwoFactorChecks {
  readonly lockout: Lockout;
  readonly #deps: TwoFactorChecksDeps;

  constructor(deps: TwoFactorChecksDeps) {
    this.#deps = deps;
    this.lockout = createLockout(
      deps.clock,
      LOGIN_LOCKOUT,
      deps.lockouts && { store: deps.lockouts, scope: "two_factor" },
    );
  }

  /** The account with this id; 404 `NOT_FOUND` when there is none. */
  account(id: string): UserRow {
    const row = this.#deps.users.get(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No user with id "${id}"`);
    return row;
  }

  /** 429 `TOO_MANY_ATTEMPTS` while any of `keys` is locked out. */
  assertNotLocked(keys: readonly string[]): void {
    assertNotLocked(this.lockout, keys);
  }

  /** 403 `PASSWORD_INVALID` (a counted failure) unless `password` is the account's. */
  async checkPassword(row: UserRow, password: string): Promise<void> {
    await confirmPassword(this.lockout, row, password);
  }

  /** The account's secret, or undefined (logged) when it cannot be decrypted. */
  async openSecret(sealed: string | null, userId: string): Promise<Uint8Array | undefined> {
    try {
      return await this.#deps.box.open(sealed ?? "", userId);
    } catch (err) {
      this.#deps.logger.error("two-factor secret cannot be decrypted", {
        user_id: userId,
        error: err as Error,
      });
      return undefined;
    }
  }

  /** The matching time step of `code`, or a counted failure. */
  matchCode(secret: Uint8Array, userId: string, code: string): number {
    const step = matchTotpStep(secret, code, this.#deps.clock.now());
    if (step === undefined) {
      this.lockout.fail([codeKey(userId)]);
      throw invalidCode();
    }
    return step;
  }
}
