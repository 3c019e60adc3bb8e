/**
 * The one wrapper of `re2-wasm`: operator-supplied regular expressions run on RE2, whose
 * matching time is linear in the input, so a pattern such as `(a+)+$` cannot stall the proxy
 * the way a backtracking engine would. RE2 has no look-around or back-references; such a
 * pattern is refused with RE2's own message.
 *
 * Compiled expressions live in WebAssembly memory that RE2's JavaScript API never frees, so
 * they are cached by source and flags: recompiling a policy with the same rules reuses them
 * instead of growing memory on every change.
 */
import { RE2 } from "re2-wasm";

/** A compiled linear-time matcher. */
export interface Matcher {
  readonly source: string;
  test(input: string): boolean;
}

export type CompileResult =
  | { readonly ok: true; readonly matcher: Matcher }
  | { readonly ok: false; readonly message: string };

const MAX_CACHED = 10_000;
const cache = new Map<string, Matcher>();

/**
 * Compiles `pattern` (JavaScript syntax, always in Unicode mode) with RE2.
 *
 * @param pattern the expression source, without slashes
 * @param options `ignoreCase` for case-insensitive matching
 * @returns the matcher, or RE2's message when the pattern is invalid or unsupported
 */
export function compileRe2(
  pattern: string,
  options: { readonly ignoreCase?: boolean } = {},
): CompileResult {
  const flags = options.ignoreCase ? "iu" : "u";
  const key = `${flags}/${pattern}`;
  const cached = cache.get(key);
  if (cached) return { ok: true, matcher: cached };
  let re: RE2;
  try {
    re = new RE2(pattern, flags);
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  const found = requiredLiteral(pattern);
  // Case-insensitive prefilters stay ASCII: RE2's case folding differs from toLowerCase beyond it.
  // deno-lint-ignore no-control-regex -- the ASCII range itself
  const literal = options.ignoreCase && found !== undefined && !/^[\x00-\x7f]+$/.test(found)
    ? undefined
    : found;
  const lower = literal?.toLowerCase();
  const matcher: Matcher = literal === undefined
    ? { source: pattern, test: (input) => re.test(input) }
    : options.ignoreCase
    ? { source: pattern, test: (input) => input.toLowerCase().includes(lower!) && re.test(input) }
    : { source: pattern, test: (input) => input.includes(literal) && re.test(input) };
  if (cache.size < MAX_CACHED) cache.set(key, matcher);
  return { ok: true, matcher };
}

const MIN_LITERAL = 3;
/** Escapes that stand for one literal character (punctuation); letters and digits are classes. */
const PUNCTUATION = /^[^A-Za-z0-9]$/;

/**
 * The longest run of literal characters every match must contain, for a cheap `includes`
 * prefilter before RE2 (each RE2 call copies the input into WebAssembly memory). Conservative:
 * a pattern with alternation, groups, inline flags or escapes other than escaped punctuation
 * gets no prefilter, and a character followed by a quantifier ends the run.
 */
export function requiredLiteral(pattern: string): string | undefined {
  if (/[|()]/.test(pattern)) return undefined;
  let best = "";
  let run = "";
  const end = () => {
    if (run.length > best.length) best = run;
    run = "";
  };
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    let lit: string | undefined;
    if (ch === "\\") {
      const next = pattern[++i];
      if (next === undefined) return undefined;
      if (PUNCTUATION.test(next)) lit = next;
      else if (!"dDwWsSbB".includes(next)) return undefined;
    } else if (ch === "[") {
      const close = pattern.indexOf("]", i + 2);
      if (close < 0 || pattern.slice(i, close).includes("\\")) return undefined;
      i = close;
    } else if (ch === "{") {
      const close = pattern.indexOf("}", i);
      if (close < 0) return undefined;
      i = close;
    } else if (!".^$+*?}]".includes(ch)) {
      lit = ch;
    }
    const quant = pattern[i + 1];
    if (lit === undefined || quant === "?" || quant === "*" || quant === "{") {
      end();
      continue;
    }
    run += lit;
    if (quant === "+") end();
  }
  end();
  return best.length >= MIN_LITERAL ? best : undefined;
}

/** Like {@link compileRe2} but throws the engine's message (for already-validated input). */
export function re2OrThrow(
  pattern: string,
  options: { readonly ignoreCase?: boolean } = {},
): Matcher {
  const r = compileRe2(pattern, options);
  if (!r.ok) throw new SyntaxError(r.message);
  return r.matcher;
}
