/**
 * When the login form needs a CAPTCHA: `always`, `never`, or `after_failures` (once the
 * (username, client) pair has `failures` failed logins in the lockout window, or a ceiling of
 * `login_throttle.ts` is reached: a username under a distributed attack, a client spraying many
 * usernames). Stored in the store's `settings` table under `auth.captcha_policy`, so it changes
 * through the API without a restart.
 */
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { LoginPressure } from "./login_throttle.ts";

export type CaptchaMode = "always" | "never" | "after_failures";

export interface CaptchaPolicy {
  readonly mode: CaptchaMode;
  /** Failed logins before the CAPTCHA is required (mode `after_failures`). */
  readonly failures: number;
  /** Leading zero bits the proof of work needs (8 to 24; each bit doubles the work). */
  readonly difficulty: number;
}

export const DEFAULT_CAPTCHA_POLICY: CaptchaPolicy = {
  mode: "after_failures",
  failures: 3,
  difficulty: 14,
};

const KEY = "auth.captcha_policy";

export function createCaptchaPolicy(settings: SettingsRepo) {
  return {
    get(): CaptchaPolicy {
      const stored = settings.get(KEY) as Partial<CaptchaPolicy> | undefined;
      return { ...DEFAULT_CAPTCHA_POLICY, ...stored };
    },
    /** Call inside the transaction that records the change's audit event. */
    set(policy: CaptchaPolicy, now: number): void {
      settings.set(KEY, policy, now);
    },
    /** Whether a login under this pressure must carry a receipt. */
    required(pressure: LoginPressure): boolean {
      const p = this.get();
      if (p.mode === "always") return true;
      if (p.mode === "never") return false;
      return pressure.ceilingReached || pressure.pairFailures >= p.failures;
    },
  };
}

export type CaptchaPolicyStore = ReturnType<typeof createCaptchaPolicy>;
