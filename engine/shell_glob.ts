/**
 * Which command a shell wildcard word names (`/???/c?t` runs `cat`, `n[c]` runs `nc`): the
 * shell expands a wildcard path before it runs it, so the command detector reads the command
 * the expansion can only be.
 *
 * Matched directly, without building a regular expression per word: a value can hold thousands
 * of wildcard words, and each one is tried against every command name (names whose letters do
 * not cover the pattern's are skipped with one mask test).
 */
import { COMMANDS } from "./shell_commands.ts";

/** Shell wildcards: `?`, `*`, a bracket expression. */
export const GLOB = /[?*[]/;
const GLOB_PART = /\[!?[a-z0-9-]{1,16}\]|[?*]|[^?*[]/g;
/** Names are short, so a longer pattern names none. */
const MAX_PATTERN = 24;

/** One element of a pattern: a literal, `?`, `*` or a bracket expression. */
type Part =
  | { readonly kind: "char"; readonly c: number }
  | { readonly kind: "any" }
  | { readonly kind: "star" }
  | { readonly kind: "set"; readonly negated: boolean; readonly ranges: readonly number[] };

/** Every command name, longest first (the first match wins). */
const NAMES: readonly string[] = [...COMMANDS.keys()].sort((a, b) => b.length - a.length);
/** Words of a set of names, one bit a name (in {@link NAMES}' order). */
const WORDS = Math.ceil(NAMES.length / 32);
/** For each character, the names that contain it; a pattern's literals narrow the candidates. */
const CONTAINING = new Map<number, Uint32Array>();
for (const [i, name] of NAMES.entries()) {
  for (let k = 0; k < name.length; k++) {
    const c = name.charCodeAt(k);
    let set = CONTAINING.get(c);
    if (set === undefined) CONTAINING.set(c, set = new Uint32Array(WORDS));
    set[i >>> 5]! |= 1 << (i & 31);
  }
}
const NONE = new Uint32Array(WORDS);

function parse(pattern: string): Part[] {
  const parts: Part[] = [];
  for (const part of pattern.match(GLOB_PART) ?? []) {
    if (part === "?") parts.push({ kind: "any" });
    else if (part === "*") parts.push({ kind: "star" });
    else if (part.length > 1) {
      const negated = part[1] === "!";
      const body = part.slice(negated ? 2 : 1, -1);
      const ranges: number[] = [];
      for (let i = 0; i < body.length; i++) {
        const lo = body.charCodeAt(i);
        if (body[i + 1] === "-" && i + 2 < body.length) {
          ranges.push(lo, body.charCodeAt(i + 2));
          i += 2;
        } else ranges.push(lo, lo);
      }
      parts.push({ kind: "set", negated, ranges });
    } else parts.push({ kind: "char", c: part.charCodeAt(0) });
  }
  return parts;
}

/** Whether one non-star part matches the character `c` (`?` and sets never match `/`). */
function partMatches(p: Part, c: number): boolean {
  switch (p.kind) {
    case "char":
      return p.c === c;
    case "any":
      return c !== 47;
    case "star":
      return false;
    case "set": {
      let inside = false;
      for (let i = 0; i < p.ranges.length && !inside; i += 2) {
        inside = c >= p.ranges[i]! && c <= p.ranges[i + 1]!;
      }
      return c !== 47 && inside !== p.negated;
    }
  }
}

/**
 * Whether `parts` match all of `text`: the usual wildcard walk that remembers the last star
 * and retries from it, linear in the product of the two lengths (both short).
 */
function matchesAll(parts: readonly Part[], text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    const part = parts[p];
    const c = text.charCodeAt(t);
    if (part !== undefined && part.kind === "star") {
      star = p++;
      resume = t;
    } else if (part !== undefined && partMatches(part, c)) {
      p++;
      t++;
    } else if (star >= 0 && c !== 47) {
      p = star + 1;
      t = ++resume;
    } else return false;
  }
  while (parts[p]?.kind === "star") p++;
  return p === parts.length;
}

/**
 * The distinct command a wildcard file name expands to (`c?t` to `cat`, `n[c]` to `nc`), or
 * undefined. A pattern that matches nearly anything (`*`, `??`) names no particular command.
 *
 * @param pattern the last path element of a command word, lower-case
 * @returns the longest command name it matches, or undefined
 */
export function commandMatching(pattern: string): string | undefined {
  if (pattern.length === 0 || pattern.length > MAX_PATTERN || !GLOB.test(pattern)) return undefined;
  const parts = parse(pattern);
  if (matchesAll(parts, "z") || matchesAll(parts, "zz") || matchesAll(parts, "zzz")) {
    return undefined;
  }
  const candidates = new Uint32Array(WORDS).fill(0xffffffff);
  let fixed = 0;
  let starred = false;
  for (const p of parts) {
    if (p.kind === "star") starred = true;
    else fixed++;
    if (p.kind !== "char") continue;
    const containing = CONTAINING.get(p.c) ?? NONE;
    for (let w = 0; w < WORDS; w++) candidates[w]! &= containing[w]!;
  }
  for (let w = 0; w < WORDS; w++) {
    for (let bits = candidates[w]!; bits !== 0; bits &= bits - 1) {
      const name = NAMES[(w << 5) + 31 - Math.clz32(bits & -bits)];
      if (name === undefined) continue;
      if (starred ? name.length < fixed : name.length !== fixed) continue;
      if (matchesAll(parts, name)) return name;
    }
  }
  return undefined;
}
