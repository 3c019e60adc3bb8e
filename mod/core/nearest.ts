/**
 * "Did you mean ...?": the known word closest to a mistyped one, for the configuration check
 * (unknown keys and permissions) and the command line (unknown commands).
 */

/** Edit distance (insertions, deletions, substitutions, adjacent swaps). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The entry of `known` closest to `key` (case is ignored), when it is close enough to be a typo:
 * at most 2 edits, or a third of the key's length for longer keys.
 *
 * @example
 * nearest("serv", ["serve", "config"]); // "serve"
 * nearest("frobnicate", ["serve", "config"]); // undefined
 */
export function nearest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const dist = distance(key.toLowerCase(), k.toLowerCase());
    if (dist < bestDistance) [best, bestDistance] = [k, dist];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(key.length / 3))
    ? best
    : undefined;
}
