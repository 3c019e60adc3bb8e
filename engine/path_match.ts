/**
 * The case-insensitive twin of an RE2 path pattern: on a site whose upstream folds case the path
 * is compared lower-cased (`testPath` of path_normalize.ts), which a pattern without upper-case
 * letters matches as it is; one with them gets a twin compiled once with it. Apart from the
 * prefix and literal helpers of path_normalize.ts, so that what needs no RE2 does not load it.
 */
import { compileRe2, type Matcher, type SharedMatcher } from "./re2.ts";

const UPPER = /[A-Z]/;

/**
 * The case-insensitive twin of a case-sensitive path pattern, added to `held`; undefined when the
 * pattern has no upper-case letter (then it matches a lower-cased path as it is) or the twin does
 * not compile within RE2's budget (then the pattern as written judges the lower-cased path).
 */
export function foldedTwin(pattern: string, held: SharedMatcher[]): Matcher | undefined {
  if (!UPPER.test(pattern)) return undefined;
  const r = compileRe2(pattern, { ignoreCase: true });
  if (!r.ok) return undefined;
  held.push(r.matcher);
  return r.matcher;
}
