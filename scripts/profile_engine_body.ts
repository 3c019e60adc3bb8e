/**
 * Where the engine's time goes on the realistic 1 MiB bodies of `tests/bench/engine_body_kinds.ts`:
 * each body is split as `inspect()` splits it (its inputs, long values in overlapping windows
 * with the neutral lead-in), decoded once, and every detector is timed alone on all of it, with
 * the decoder and the scan for hidden text beside them. Prints, per body kind, the milliseconds
 * each part costs for the whole body, largest first.
 *
 * ```sh
 * deno run -A scripts/profile_engine_body.ts [rounds=3]
 * ```
 *
 * The detectors' own early exits are what they are in `inspect()`; what this leaves out is the
 * second reading of hidden text (base64, nested JSON) and the comment-joined SQL reading, which
 * ordinary bodies do not reach. The machine's load slows every row alike; compare rows, not runs.
 */

import { DETECTORS } from "../engine/detectors.ts";
import { extract } from "../engine/extract.ts";
import { hiddenTexts } from "../engine/hidden.ts";
import { MAX_TEXT, WINDOW_OVERLAP } from "../engine/limits.ts";
import { normalize } from "../engine/normalize.ts";
import { sqli } from "../engine/sqli.ts";
import type { Detector, DetectorInput, Input } from "../engine/types.ts";
import { xss } from "../engine/xss.ts";
import { locationOf } from "../engine/extract_push.ts";
import { isInert } from "../engine/char_classes.ts";
import { BODY_KINDS } from "../tests/bench/engine_body_kinds.ts";

const ALL: readonly Detector[] = [sqli, xss, ...DETECTORS];
const PLUS: ReadonlySet<string> = new Set(["query", "query_name", "form", "form_name"]);

/** The values the detectors get for one input, as `inspect()` cuts and decodes them. */
function valuesOf(input: Input): DetectorInput[] {
  if (isInert(input.value)) return [];
  const plus = PLUS.has(input.source) ? "space" : "literal";
  const location = locationOf(input);
  const v = input.value;
  const out: DetectorInput[] = [];
  for (let at = 0; at === 0 || at < v.length - WINDOW_OVERLAP; at += MAX_TEXT - WINDOW_OVERLAP) {
    const raw = v.length <= MAX_TEXT ? v : v.slice(at, at + MAX_TEXT);
    const text = normalize(raw, plus).text;
    out.push({ input, location, decoded: at > 0 ? "x " + text : text, raw });
    if (v.length <= MAX_TEXT) break;
  }
  return out;
}

function time(rounds: number, f: () => void): number {
  f();
  let best = Infinity;
  for (let k = 0; k < rounds; k++) {
    const t0 = performance.now();
    f();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

/** Entry point. */
export function main(args: string[]): number {
  const rounds = Number(args[0] ?? 3);
  for (const [name, req] of BODY_KINDS) {
    const inputs = extract(req);
    const values = inputs.flatMap(valuesOf);
    const rows: Array<[string, number]> = [];
    rows.push(["decoding", time(rounds, () => inputs.forEach(valuesOf))]);
    rows.push(["hidden text", time(rounds, () => values.forEach((v) => hiddenTexts(v.decoded)))]);
    for (const d of ALL) rows.push([d.name, time(rounds, () => values.forEach((v) => d(v)))]);
    rows.sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((s, r) => s + r[1], 0);
    console.log(
      `${name}: ${inputs.length} inputs, ${values.length} detector inputs, ${total.toFixed(0)} ms`,
    );
    console.log(
      "  " + rows.map(([k, ms]) => `${k} ${ms.toFixed(1)} (${(ms / total * 100).toFixed(0)} %)`)
        .join(", "),
    );
  }
  return 0;
}

if (import.meta.main) Deno.exit(main(Deno.args));
