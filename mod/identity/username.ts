/**
 * The one username rule, used by every place a human account name enters the system (setup,
 * login, the users API, the CLI, storage, session claims, CAPTCHA receipts). Names are never
 * normalised: the server does not trim, lowercase or rewrite, so `" admin"` is a different
 * string from `"admin"` and is invalid.
 */

export type UsernameCheck = { ok: true } | { ok: false; reason: string };

export const USERNAME_MIN = 3;
export const USERNAME_MAX = 32;

/** Human-readable rules, shown by the setup page and in help texts. */
export const USERNAME_RULES: readonly string[] = [
  `${USERNAME_MIN} to ${USERNAME_MAX} characters`,
  "ASCII letters, digits, '.', '_' and '-' only",
  "starts with an ASCII letter",
  "ends with an ASCII letter or digit",
];

const ALLOWED = /^[A-Za-z0-9._-]*$/;
const FIRST = /^[A-Za-z]/;
const LAST = /[A-Za-z0-9]$/;
const WHITESPACE = /\s/u;
const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}]/u;

function codePoint(ch: string): string {
  return `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** The first offending character, described by its code point (never echoed raw). */
function firstBad(name: string, re: RegExp): string | undefined {
  for (const ch of name) if (re.test(ch)) return codePoint(ch);
  return undefined;
}

/** Checks `name` against the username rules without changing it. */
export function validateUsername(name: string): UsernameCheck {
  const space = firstBad(name, WHITESPACE);
  if (space) return { ok: false, reason: `contains the whitespace character ${space}` };
  const control = firstBad(name, CONTROL_OR_FORMAT);
  if (control) {
    return { ok: false, reason: `contains the control or format character ${control}` };
  }
  // ASCII controls were refused above, so "outside printable ASCII" means non-ASCII here.
  const nonAscii = firstBad(name, /[^ -~]/);
  if (nonAscii) return { ok: false, reason: `contains the non-ASCII character ${nonAscii}` };
  if (!ALLOWED.test(name)) {
    const other = firstBad(name, /[^A-Za-z0-9._-]/)!;
    return {
      ok: false,
      reason: `contains ${other}: only ASCII letters, digits, '.', '_' and '-' are allowed`,
    };
  }
  if (name.length < USERNAME_MIN || name.length > USERNAME_MAX) {
    return {
      ok: false,
      reason: `must be ${USERNAME_MIN} to ${USERNAME_MAX} characters long, got ${name.length}`,
    };
  }
  if (!FIRST.test(name)) return { ok: false, reason: "must start with an ASCII letter" };
  if (!LAST.test(name)) return { ok: false, reason: "must end with an ASCII letter or digit" };
  return { ok: true };
}
