/**
 * A trace id out of whatever an operator pasted: the bare id, `traceId: ...` as the block page
 * shows it, `trace_id=...`, a JSON error object, quotes, spaces, upper case, or a console or
 * block-page URL carrying it (`/console/logs/<id>`, `?trace=<id>`).
 */

const KEYED = /trace[\s_-]*(?:id)?["']?\s*[:=]\s*["']?([0-9a-f]{32})(?![0-9a-f])/i;
const BARE = /(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])/gi;
/** Spaces or hyphens between hex digits, as a wrapped or grouped copy has them. */
const GAPS = /(?<=[0-9a-f])[\s-]+(?=[0-9a-f])/gi;
/** Longer text is not a copied trace id. */
const MAX_TEXT = 2000;

function candidates(text: string): string[] {
  return [...new Set([...text.matchAll(BARE)].map((m) => m[0].toLowerCase()))];
}

/**
 * The trace id (32 lower-case hex characters) in `text`, or undefined when it holds none, or
 * several unnamed ones (an id after a `trace` key wins over any other).
 *
 * @example
 * ```ts
 * traceIdIn('traceId: "5D0C8E6F0B1A4C2E9F7A3B6D8E1C4F2A"'); // "5d0c8e6f0b1a4c2e9f7a3b6d8e1c4f2a"
 * traceIdIn("https://waf.example/console/logs?trace=5d0c8e6f0b1a4c2e9f7a3b6d8e1c4f2a");
 * ```
 */
export function traceIdIn(text: string): string | undefined {
  if (text.length > MAX_TEXT) return undefined;
  const keyed = KEYED.exec(text);
  if (keyed) return keyed[1]!.toLowerCase();
  let found = candidates(text);
  if (found.length === 0) found = candidates(text.replace(GAPS, ""));
  return found.length === 1 ? found[0] : undefined;
}
