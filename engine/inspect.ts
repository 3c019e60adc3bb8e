/**
 * The semantic engine's entry point: extract, decode, run every detector, decide.
 *
 * Levels map to the confidence bands that block (scores per `make_finding.ts`: medium from
 * 40, high from 70, critical from 90):
 *
 * - `strict` blocks medium and above: it also blocks fragments that are only suspicious in
 *   context (a SQL condition in free text, a `<style>` tag, an `<iframe>` without source);
 * - `balanced` (default) blocks high and above: values that break out of their context and
 *   form a working fragment (tautology after a quote, event handler, UNION SELECT...);
 * - `low` blocks critical only: unmistakable attacks (UNION SELECT with a select list,
 *   `<script>`, time delays), for sites that cannot afford any false positive.
 */

import type {
  Confidence,
  Detector,
  DetectorInput,
  EngineRequest,
  Finding,
  Input,
  Inspection,
  InspectOptions,
  Level,
} from "./types.ts";
import { extract, MAX_INPUTS, nestedJsonStrings } from "./extract.ts";
import { decodeBase64Code, decodeBase64Runs, normalize, type PlusMode } from "./normalize.ts";
import { sqli } from "./sqli.ts";
import { xss } from "./xss.ts";
import { DETECTORS } from "./detectors.ts";

/** Characters analysed per request by default; ample for real traffic, bounded for floods. */
export const DEFAULT_BUDGET = 256 * 1024;

const RANK: Readonly<Record<Confidence, number>> = { low: 0, medium: 1, high: 2, critical: 3 };
/** Lowest band that blocks at each level. */
export const BLOCKING_BAND: Readonly<Record<Level, Confidence>> = {
  strict: "medium",
  balanced: "high",
  low: "critical",
};

/** SQLi and XSS first: they are the most common attacks, so findings appear early. */
const ALL_DETECTORS: readonly Detector[] = [sqli, xss, ...DETECTORS];
/**
 * Values made only of these characters cannot carry any attack class the engine knows
 * (no quotes, spaces, markup, separators or encodings), so they skip every detector.
 * This is what keeps typical benign requests (ids, tokens, slugs) cheap.
 */
const INERT = /^[A-Za-z0-9_,-]*(?:\.[A-Za-z0-9_,-]+)*$/;
/** The `+` of query strings and form bodies is a space; elsewhere it is literal. */
const PLUS_AS_SPACE: ReadonlySet<Input["source"]> = new Set(["query", "query_name", "form"]);

/** Referer query parameters (see extract.ts) were form-encoded by the browser. */
const REFERER_QUERY = "referer?";

/**
 * Inspects one request.
 *
 * @param req the request as plain data
 * @param opts the site's level and an optional work budget in characters
 * @returns every finding (highest score first) and the one that blocks at this level
 */
export function inspect(req: EngineRequest, opts: InspectOptions): Inspection {
  const inputs = extract(req);
  let budget = opts.budget ?? DEFAULT_BUDGET;
  let truncated = inputs.length >= MAX_INPUTS;
  const findings: Finding[] = [];
  for (const input of inputs) {
    if (budget <= 0) {
      truncated = true;
      break;
    }
    budget -= input.value.length;
    if (INERT.test(input.value) && decodeBase64Code(input.value) === undefined) continue;
    const plus: PlusMode = PLUS_AS_SPACE.has(input.source) || input.name.startsWith(REFERER_QUERY)
      ? "space"
      : "literal";
    const normalized = normalize(input.value, plus);
    if (normalized.truncated) truncated = true;
    const location = input.name.length > 0 ? `${input.source}:${input.name}` : input.source;
    const value: DetectorInput = {
      input,
      location,
      decoded: normalized.text,
      raw: input.value,
    };
    runDetectors(value, findings);
    for (const hidden of decodeBase64Runs(normalized.text)) {
      runDetectors({ ...value, decoded: hidden }, findings);
      runNested(value, hidden, findings);
    }
    runNested(value, normalized.text, findings);
  }
  findings.sort((a, b) => b.score - a.score);
  const threshold = RANK[BLOCKING_BAND[opts.level]];
  const blocking = findings.find((f) => RANK[f.confidence] >= threshold);
  return { findings, blocking, truncated };
}

/** JSON nested in a value: each string is judged alone (a breakout needs its own literal). */
function runNested(value: DetectorInput, text: string, findings: Finding[]): void {
  const strings = nestedJsonStrings(text);
  if (strings === undefined) return;
  for (const decoded of strings) {
    if (decoded.length > 2 && !INERT.test(decoded)) runDetectors({ ...value, decoded }, findings);
  }
}

function runDetectors(value: DetectorInput, findings: Finding[]): void {
  // The Host header only reaches the engine for header-injection checks (see extract.ts).
  const hostOnly = value.location === "header:host";
  for (const detector of ALL_DETECTORS) {
    let finding: Finding | undefined;
    try {
      finding = detector(value);
    } catch {
      // A detector bug must not turn one request into a failed data plane; skip it.
      continue;
    }
    if (finding !== undefined && (!hostOnly || finding.class === "crlf")) findings.push(finding);
  }
}
