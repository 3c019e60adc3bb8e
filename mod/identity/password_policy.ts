/**
 * The password policy: length, character classes, and the patterns people reach for when a
 * form insists on "complexity" (common passwords, sequences, keyboard walks, repeated runs,
 * the username itself). `checkPassword` returns the identifiers of every failed rule so the
 * caller can list them all at once.
 */
import type { Random } from "../core/random.ts";

export const PASSWORD_MIN = 10;
/** Bounds the hashing work one request can demand. */
export const PASSWORD_MAX = 256;

export type PasswordRule =
  | "min_length"
  | "max_length"
  | "character_classes"
  | "common_password"
  | "sequence"
  | "keyboard_walk"
  | "repeated_run"
  | "contains_username";

/** What each rule asks for, keyed by identifier (shown by the setup page and in errors). */
export const PASSWORD_RULES: Readonly<Record<PasswordRule, string>> = {
  min_length: `at least ${PASSWORD_MIN} characters`,
  max_length: `at most ${PASSWORD_MAX} characters`,
  character_classes:
    "at least 3 of: upper-case letters, lower-case letters, digits (not all one repeated digit), special characters",
  common_password: "not a common password",
  sequence: "no runs of 4 or more consecutive letters or digits such as 'abcd' or '1234'",
  keyboard_walk: "no keyboard walks of 4 or more keys such as 'qwer' or 'asdf'",
  repeated_run: "no character repeated 4 or more times in a row and no repeated short pattern",
  contains_username: "must neither equal nor contain the username (ignoring case)",
};

const RUN = 4;

/** Base words that make a password common however they are decorated. */
const COMMON_WORDS: readonly string[] = [
  "password",
  "passwort",
  "letmein",
  "welcome",
  "iloveyou",
  "changeme",
  "trustno1",
  "qwerty",
  "monkey",
  "dragon",
  "football",
  "baseball",
  "sunshine",
  "princess",
  "superman",
  "starwars",
  "whatever",
  "shadow",
  "master",
  "michael",
  "jordan",
  "freedom",
  "secret",
  "login",
  "admin",
  "administrator",
  "default",
  "hello",
  "charlie",
  "pokemon",
  "liverpool",
  "chelsea",
  "computer",
  "internet",
  "summer",
  "winter",
  "spring",
  "autumn",
  "access",
  "mustang",
  "batman",
  "soccer",
  "hockey",
  "killer",
  "ashley",
  "bailey",
  "flower",
  "hunter",
  "ranger",
  "buster",
  "tigger",
  "cookie",
  "ginger",
  "pepper",
  "azerty",
  "zaq1zaq1",
  "1q2w3e4r",
  "1qaz2wsx",
  "qazwsx",
  "p@ssw0rd",
];
const COMMON = new Set(COMMON_WORDS);

/** Undoes the usual letter-for-symbol swaps before looking a password up. */
const LEET: Readonly<Record<string, string>> = {
  "@": "a",
  "4": "a",
  "0": "o",
  "1": "i",
  "!": "i",
  "3": "e",
  "$": "s",
  "5": "s",
  "7": "t",
  "+": "t",
};

function deLeet(s: string): string {
  let out = "";
  for (const ch of s) out += LEET[ch] ?? ch;
  return out;
}

/** The password without the digits and symbols people pad a word with. */
function core(lower: string): string {
  return lower.replace(/^[^a-z]+/, "").replace(/[^a-z]+$/, "");
}

function isCommon(password: string): boolean {
  const lower = password.toLowerCase();
  const candidates = [lower, core(lower), deLeet(lower), core(deLeet(lower))];
  for (const c of candidates) {
    if (COMMON.has(c)) return true;
    for (const word of COMMON_WORDS) {
      // Short words are only common as the whole core; long ones anywhere inside.
      if (word.length >= 7 && c.includes(word)) return true;
    }
  }
  return false;
}

const ALPHABETS: readonly string[] = ["abcdefghijklmnopqrstuvwxyz", "0123456789"];
const KEYBOARD_ROWS: readonly string[] = [
  "`1234567890-=",
  "qwertyuiop[]\\",
  "asdfghjkl;'",
  "zxcvbnm,./",
  "qazwsxedcrfvtgbyhnujmik,ol.p;/",
  "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/",
];

/** True when `text` has `RUN` characters that follow each other in `line`, either way. */
function hasRunIn(text: string, line: string): boolean {
  const reversed = [...line].reverse().join("");
  for (let i = 0; i + RUN <= text.length; i++) {
    const piece = text.slice(i, i + RUN);
    if (line.includes(piece) || reversed.includes(piece)) return true;
  }
  return false;
}

function hasSequence(lower: string): boolean {
  return ALPHABETS.some((a) => hasRunIn(lower, a));
}

function hasKeyboardWalk(lower: string): boolean {
  return KEYBOARD_ROWS.some((row) => hasRunIn(lower, row));
}

function hasRepeatedRun(lower: string): boolean {
  if (new RegExp(`(.)\\1{${RUN - 1},}`, "u").test(lower)) return true;
  // The whole password is one short chunk over and over ("abcabcabcabc").
  return /^(.{1,4})\1+$/u.test(lower);
}

function classCount(password: string): number {
  const digits = password.replace(/[^0-9]/g, "");
  const oneRepeatedDigit = digits.length >= 2 && /^(\d)\1*$/.test(digits);
  let n = 0;
  if (/[A-Z]/.test(password)) n++;
  if (/[a-z]/.test(password)) n++;
  if (digits.length > 0 && !oneRepeatedDigit) n++;
  if (/[^A-Za-z0-9]/.test(password)) n++;
  return n;
}

/** Identifiers of every rule `password` fails for `username`; empty when it is acceptable. */
export function checkPassword(password: string, username: string): PasswordRule[] {
  const failed: PasswordRule[] = [];
  const length = [...password].length;
  if (length < PASSWORD_MIN) failed.push("min_length");
  if (length > PASSWORD_MAX) failed.push("max_length");
  if (classCount(password) < 3) failed.push("character_classes");
  const lower = password.toLowerCase();
  if (isCommon(password)) failed.push("common_password");
  if (hasSequence(lower)) failed.push("sequence");
  if (hasKeyboardWalk(lower)) failed.push("keyboard_walk");
  if (hasRepeatedRun(lower)) failed.push("repeated_run");
  if (username.length > 0 && lower.includes(username.toLowerCase())) {
    failed.push("contains_username");
  }
  return failed;
}

const UPPER = "ABCDEFGHJKLMNPQRSTUVWXYZ";
const LOWER = "abcdefghijkmnopqrstuvwxyz";
const DIGITS = "23456789";
const SPECIAL = "!#%+-=?@^_~";
const ALL = UPPER + LOWER + DIGITS + SPECIAL;

/** An unbiased integer in [0, n) for n <= 256 (rejection sampling over random bytes). */
function randomIndex(random: Random, n: number): number {
  const limit = 256 - (256 % n);
  for (;;) {
    const b = random.bytes(1)[0]!;
    if (b < limit) return b % n;
  }
}

function pick(random: Random, alphabet: string): string {
  return alphabet[randomIndex(random, alphabet.length)]!;
}

/** A 20-character random password that satisfies the policy (for `username` when given). */
export function generatePassword(random: Random, username = ""): string {
  for (;;) {
    const chars = [pick(random, UPPER), pick(random, LOWER), pick(random, DIGITS)];
    chars.push(pick(random, SPECIAL));
    while (chars.length < 20) chars.push(pick(random, ALL));
    // Shuffle so the guaranteed classes do not sit at fixed positions.
    for (let i = chars.length - 1; i > 0; i--) {
      const k = randomIndex(random, i + 1);
      [chars[i], chars[k]] = [chars[k]!, chars[i]!];
    }
    const password = chars.join("");
    if (checkPassword(password, username).length === 0) return password;
  }
}
