/**
 * The one username rule, used by every place a human account name enters the system (setup,
 * login, the users API, the CLI, storage, session claims, CAPTCHA receipts). Names are never
 * normalised: the server does not trim, lowercase or rewrite, so `" admin"` is a different
 * string from `"admin"` and is invalid.
 */

/** Why a name breaks the rule, as data (`char` is a code point such as `U+200B`). */
export type UsernameProblem =
  | { readonly code: "whitespace" | "control" | "non_ascii" | "character"; readonly char: string }
  | { readonly code: "length"; readonly length: number }
  | { readonly code: "first" | "last" };

/** A failure carries the problem as data and its English wording (API messages use it). */
export type UsernameCheck =
  | { ok: true }
  | { ok: false; problem: UsernameProblem; reason: string };

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

/** The English wording of a problem (API error messages and details). */
export function usernameProblemText(p: UsernameProblem): string {
  switch (p.code) {
    case "whitespace":
      return `contains the whitespace character ${p.char}`;
    case "control":
      return `contains the control or format character ${p.char}`;
    case "non_ascii":
      return `contains the non-ASCII character ${p.char}`;
    case "character":
      return `contains ${p.char}: only ASCII letters, digits, '.', '_' and '-' are allowed`;
    case "length":
      return `must be ${USERNAME_MIN} to ${USERNAME_MAX} characters long, got ${p.length}`;
    case "first":
      return "must start with an ASCII letter";
    case "last":
      return "must end with an ASCII letter or digit";
  }
}

function problemOf(name: string): UsernameProblem | undefined {
  const space = firstBad(name, WHITESPACE);
  if (space) return { code: "whitespace", char: space };
  const control = firstBad(name, CONTROL_OR_FORMAT);
  if (control) return { code: "control", char: control };
  // ASCII controls were refused above, so "outside printable ASCII" means non-ASCII here.
  const nonAscii = firstBad(name, /[^ -~]/);
  if (nonAscii) return { code: "non_ascii", char: nonAscii };
  if (!ALLOWED.test(name)) return { code: "character", char: firstBad(name, /[^A-Za-z0-9._-]/)! };
  if (name.length < USERNAME_MIN || name.length > USERNAME_MAX) {
    return { code: "length", length: name.length };
  }
  if (!FIRST.test(name)) return { code: "first" };
  if (!LAST.test(name)) return { code: "last" };
  return undefined;
}

/** Checks `name` against the username rules without changing it. */
export function validateUsername(name: string): UsernameCheck {
  const problem = problemOf(name);
  return problem === undefined
    ? { ok: true }
    : { ok: false, problem, reason: usernameProblemText(problem) };
}
