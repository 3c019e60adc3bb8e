/**
 * An account identifier read as the assertion value of an LDAP filter: an application that
 * looks a login up with `(uid=<value>)` and does not escape the value hands the client the
 * filter's syntax. RFC 4515 forbids `*`, `(`, `)` and NUL unescaped in a value, and no account
 * name holds them, so in a field named for an account ({@link LDAP_ACCOUNT_FIELDS}) they are
 * filter syntax: `admin*` or `*` turns the lookup into a wildcard match (the first account
 * matches, or any password binds an account found by prefix), and a lone parenthesis is the
 * probe that shows the value reaches a filter unescaped. `|`, `&` and `!` stay literal inside an
 * item (`(uid=a|b)` is one value), so they pass here; breakouts that open an item of their own
 * are judged in every field by `ldap_xpath.ts`.
 *
 * A run of stars is a mask, not a wildcard (`oK6kowEAoK4z7e**`, `138****1234`: identifiers an
 * application masked and sent back; `**` is no valid substring filter), and a search box's
 * `admin*` is a prefix search it offers on purpose: neither field is an account's.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";
import { LDAP_ACCOUNT_FIELDS, LDAP_ACCOUNT_HEADERS } from "./ldap_account_fields.ts";

/** A wildcard: a star with no star beside it. */
const WILDCARD = /(?<!\*)\*(?!\*)/;
/** Item syntax: parentheses, and NUL, which ends the C string a filter is built in. */
const ITEM_SYNTAX = /[()\0]/;
/** Whether the character at `i` separates a structured name's parts (`user[login]`, `a.b`, `/a@b`). */
function separates(name: string, i: number): boolean {
  const c = name.charCodeAt(i);
  return c === 46 || c === 47 || c === 64 || c === 91 || c === 93;
}
const NAME_JOINERS = /[_-]/g;
/** A NUL as sent, percent-encoded once or more (`%00`, `%2500`). */
const ENCODED_NUL = /%(?:25)*00/;

/** Sources whose name says what the value is; a header by {@link LDAP_ACCOUNT_HEADERS}. */
const NAMED: ReadonlySet<string> = new Set(["query", "form", "json", "xml", "multipart", "cookie"]);

/** Whether `name`'s last part names an account identifier. */
export function accountField(name: string): boolean {
  let end = name.length;
  while (end > 0 && separates(name, end - 1)) end--;
  let start = end;
  while (start > 0 && !separates(name, start - 1)) start--;
  if (end - start < 3 || end - start > 24) return false;
  return LDAP_ACCOUNT_FIELDS.has(name.slice(start, end).toLowerCase().replace(NAME_JOINERS, ""));
}

/**
 * Reports filter syntax in an account field.
 *
 * @param value the decoded input
 * @returns `ldap.account_wildcard` (75) or `ldap.account_probe` (55), or undefined
 */
export function ldapAccountValue(value: DetectorInput): Finding | undefined {
  const input = value.input;
  const account = input.source === "header"
    ? LDAP_ACCOUNT_HEADERS.has(input.name)
    : NAMED.has(input.source) && accountField(input.name);
  if (!account) return undefined;
  const text = value.decoded;
  const star = text.indexOf("*") >= 0 ? WILDCARD.exec(text) : null;
  if (star !== null) {
    return makeFinding(value, "ldap", 75, "ldap.account_wildcard", text, 0);
  }
  // The normaliser drops NUL from the decoded text; the raw value still names it.
  if (ITEM_SYNTAX.test(text) || ENCODED_NUL.test(value.raw)) {
    return makeFinding(value, "ldap", 55, "ldap.account_probe", text, 0);
  }
  return undefined;
}
