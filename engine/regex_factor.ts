/**
 * Factors the alternations of a gate pattern by their first character, so the regex engine
 * tries one branch per position instead of every alternative.
 *
 * The engine's gates are long alternations of literals (`etc|passwd|boot|win|...`) run over
 * every window of every body. Irregexp tries the alternatives one after another at each
 * position; grouped as a trie (`e(?:tc|nv)|p(?:asswd|roc)|...`) it reads the first character
 * once and follows one branch. At a given position only alternatives that start with the
 * character found there can match, so the grouping finds a match at exactly the positions the
 * original did: for `test()` and for a match's index the two patterns are the same. (What a
 * match captures may differ when branches overlap, so it is only for patterns used that way;
 * a pattern with capturing groups or backreferences is returned unchanged.)
 */
import { gated } from "./literal_gate.ts";

/** Factors every alternation of `re` (top level and inside non-capturing groups). */
export function factorAlternation(re: RegExp): RegExp {
  if (CAPTURE.test(re.source)) return re;
  const folded = re.flags.includes("i");
  // Behind its literal gate (the same matches): these lists are run over every long window.
  return gated(new RegExp(factorSource(re.source, folded), re.flags));
}

/** A capturing group or a backreference: factoring would renumber or break them. */
const CAPTURE = /(?<!\\)\((?!\?)|\\[1-9]|\\k</;
/** Characters after a literal that quantify it: the literal is then not a plain prefix. */
const QUANTIFIER = /^[?*+{]/;

function factorSource(source: string, folded: boolean): string {
  const alternatives = splitTopLevel(source).map((alt) => factorGroups(alt, folded));
  if (alternatives.length < 2) return alternatives.join("|");
  return factorList(alternatives, folded);
}

/** Factors the alternations inside the groups of one alternative. */
function factorGroups(alt: string, folded: boolean): string {
  let out = "";
  let i = 0;
  while (i < alt.length) {
    const c = alt[i]!;
    if (c === "\\") {
      out += alt.slice(i, i + 2);
      i += 2;
    } else if (c === "[") {
      const end = classEnd(alt, i);
      out += alt.slice(i, end);
      i = end;
    } else if (c === "(") {
      const end = groupEnd(alt, i);
      const head = /^\((?:\?(?:<[=!]|[:=!]))?/.exec(alt.slice(i))![0];
      const inner = alt.slice(i + head.length, end - 1);
      out += head + factorSource(inner, folded) + ")";
      i = end;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Groups alternatives by their leading literal, recursively. */
function factorList(alternatives: readonly string[], folded: boolean): string {
  const groups = new Map<string, string[]>();
  const order: Array<string | { key: string }> = [];
  for (const alt of alternatives) {
    const lead = leadingLiteral(alt);
    if (lead === undefined) {
      order.push(alt);
      continue;
    }
    const key = folded ? lead.toLowerCase() : lead;
    let rests = groups.get(key);
    if (rests === undefined) {
      rests = [];
      groups.set(key, rests);
      order.push({ key });
    }
    rests.push(alt.slice(lead.length));
  }
  return order.map((entry) => {
    if (typeof entry === "string") return entry;
    const rests = groups.get(entry.key)!;
    if (rests.length === 1) return entry.key + rests[0]!;
    return `${entry.key}(?:${factorList(rests, folded)})`;
  }).join("|");
}

/** The alternative's first atom when it is a plain or escaped literal character, unquantified. */
function leadingLiteral(alt: string): string | undefined {
  if (alt.length === 0) return undefined;
  const c = alt[0]!;
  let lead: string;
  if (c === "\\") {
    const e = alt[1];
    // `\.` and `\/` are literals; `\b`, `\s`, `\d`, `\u....` are not single plain characters.
    if (e === undefined || /[a-zA-Z0-9]/.test(e)) return undefined;
    lead = alt.slice(0, 2);
  } else if (/[a-zA-Z0-9_ :'"=<>@!%&,;~`#/-]/.test(c)) lead = c;
  else return undefined;
  return QUANTIFIER.test(alt.slice(lead.length)) ? undefined : lead;
}

/** Splits a pattern at its top-level `|`. */
function splitTopLevel(source: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") i++;
    else if (c === "[") i = classEnd(source, i) - 1;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "|" && depth === 0) {
      out.push(source.slice(start, i));
      start = i + 1;
    }
  }
  out.push(source.slice(start));
  return out;
}

/** Index just past the character class opening at `at`. */
function classEnd(source: string, at: number): number {
  let i = at + 1;
  if (source[i] === "^") i++;
  if (source[i] === "]") i++;
  for (; i < source.length; i++) {
    if (source[i] === "\\") i++;
    else if (source[i] === "]") return i + 1;
  }
  return source.length;
}

/** Index just past the group opening at `at`. */
function groupEnd(source: string, at: number): number {
  let depth = 0;
  for (let i = at; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") i++;
    else if (c === "[") i = classEnd(source, i) - 1;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  return source.length;
}
