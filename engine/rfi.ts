/**
 * Remote file inclusion probes that name no host: a URL scheme cut off by question marks
 * (`https?`, `ftps??`, `file?`). A scanner sends these to see whether a parameter is passed to
 * an include that fetches URLs, where the `?` turns whatever the application appends into a
 * query string. Includes of real URLs are judged with the other URL targets (`ssrf.ts`).
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

/** A scheme an include can fetch from, then only question marks: the whole value. */
const CUT_SCHEME = /^\s*(?:file|ftps?|https?)\?+\s*$/i;

/**
 * Reports a value that is a fetchable URL scheme followed by question marks.
 *
 * @param value the decoded input
 * @returns an `rfi` finding or undefined
 */
export function rfiProbe(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (text.length > 16 || text.indexOf("?") < 0 || !CUT_SCHEME.test(text)) return undefined;
  return makeFinding(value, "rfi", 72, "rfi.cut_scheme", text, 0);
}
