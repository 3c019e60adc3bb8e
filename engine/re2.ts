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
  const matcher: Matcher = { source: pattern, test: (input) => re.test(input) };
  if (cache.size < MAX_CACHED) cache.set(key, matcher);
  return { ok: true, matcher };
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
