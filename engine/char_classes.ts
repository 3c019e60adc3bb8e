/**
 * Character-class tests the engine runs on every request, several times (each input, path
 * segment, parameter and cookie name, standard header value), written as loops over the code
 * units instead of regular expressions: for strings this short a regular expression's call costs
 * more than the scan, and in the data plane it also evicts other code from the CPU caches. Each
 * function accepts exactly what the pattern in its comment accepts (`tests/engine/
 * char_classes_test.ts` holds them to it).
 */

/** A-Z a-z 0-9 `_` `,` `-`. */
function inertWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 ||
    c === 44 || c === 45;
}

/**
 * `/^[A-Za-z0-9_,-]*(?:\.[A-Za-z0-9_,-]+)*$/`: words joined by single dots, a leading dot
 * allowed (`.env`), no trailing one. Such a value carries no attack class the engine knows.
 */
export function isInert(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    // A dot must be followed by a word character (past the end, NaN is none).
    if (c === 46 ? !inertWordChar(v.charCodeAt(i + 1)) : !inertWordChar(c)) return false;
  }
  return true;
}

/** `/^[A-Za-z0-9_.~@,-]*$/`: a path segment or a name not worth a separate look. */
export function isPlainSegment(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (!inertWordChar(c) && c !== 46 && c !== 126 && c !== 64) return false;
  }
  return true;
}

/**
 * Whether `v` holds a character the grammars of the standard headers (media ranges, encodings,
 * numbers, validators) never contain: a control character (below 0x20) or one of
 * `< > ' { } $ ( ) % \`, or a backtick.
 */
export function unusualInStandard(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (
      c < 0x20 || c === 60 || c === 62 || c === 39 || c === 96 || c === 123 || c === 125 ||
      c === 36 || c === 40 || c === 41 || c === 37 || c === 92
    ) return true;
  }
  return false;
}
