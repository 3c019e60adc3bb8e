/**
 * The second step of a password login for an account with 2FA: a current code from the app
 * (`totp_code`), or instead one of the account's recovery codes (`recovery_code`), each checked
 * and spent by its verifier. A missing, locked, wrong or reused one is a refusal the login audits
 * and answers; a replayed code answers exactly like a wrong one, the audit keeps the difference.
 */
import type { UserRow } from "../../db/users_repo.ts";
import { AppError } from "../core/errors.ts";

/** The outcome of checking a second-factor code at login. */
export type TotpCheck =
  | { readonly ok: true; readonly recoveryCodesLeft?: number }
  | { readonly ok: false; readonly reason: "invalid" | "replayed" | "unreadable" }
  | { readonly ok: false; readonly reason: "locked"; readonly retryAfter: number };

/** Checks a second-factor code (and spends it); without one, 2FA accounts cannot log in. */
export type TotpVerifier = (user: UserRow, code: string) => Promise<TotpCheck>;

export interface LoginInput {
  readonly username: string;
  readonly password: string;
  readonly totp_code?: string;
  /** Instead of `totp_code`: one of the account's recovery codes (spent by the login). */
  readonly recovery_code?: string;
  readonly captcha_receipt?: string;
}

/** Why a login is refused (audited), what the caller is answered, and whether it counts. */
export interface LoginRefusal {
  readonly reason: string;
  readonly error: AppError;
  /** Whether it counts toward the (username, client) lockout. */
  readonly count: boolean;
}

/** A second factor that passed: with a recovery code, how many the account has left. */
export interface SecondFactorPassed {
  readonly recoveryCodesLeft?: number;
}

/** The verifiers of the two kinds of code; a build without one refuses that kind. */
export interface SecondFactorVerifiers {
  readonly totp?: TotpVerifier;
  readonly recovery?: TotpVerifier;
}

/** Checks (and spends) the code `input` brings for `account`; a refusal says why not. */
export async function checkSecondFactor(
  input: LoginInput,
  account: UserRow,
  verifiers: SecondFactorVerifiers,
): Promise<SecondFactorPassed | { readonly refusal: LoginRefusal }> {
  const recovery = input.recovery_code !== undefined;
  const verify = recovery ? verifiers.recovery : verifiers.totp;
  const code = recovery ? input.recovery_code : input.totp_code;
  if (!verify) {
    return refused(
      "totp_unavailable",
      false,
      new AppError(
        401,
        "TOTP_UNAVAILABLE",
        "This account uses two-factor authentication, which this build cannot verify",
      ),
    );
  }
  if (!code) {
    return refused(
      "totp_missing",
      false,
      new AppError(401, "TOTP_REQUIRED", "A two-factor code is required"),
    );
  }
  const check = await verify(account, code);
  if (check.ok) return { recoveryCodesLeft: check.recoveryCodesLeft };
  if (check.reason === "locked") {
    return refused(
      "totp_locked",
      false,
      new AppError(
        429,
        "TOO_MANY_ATTEMPTS",
        `Too many wrong two-factor codes: retry in ${check.retryAfter} s`,
        { details: { retry_after: check.retryAfter } },
      ),
    );
  }
  return refused(
    `${recovery ? "recovery_code" : "totp"}_${check.reason}`,
    true,
    recovery
      ? new AppError(401, "RECOVERY_CODE_INVALID", "Invalid or already used recovery code")
      : new AppError(401, "TOTP_INVALID", "Invalid two-factor code"),
  );
}

const refused = (reason: string, count: boolean, error: AppError) => ({
  refusal: { reason, count, error },
});
