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
    if (input.source === "header") {
      if (inspectHeader(input, findings)) truncated = true;
    } else if (inspectInput(input, findings)) truncated = true;
  }
  findings.sort((a, b) => b.score - a.score);
  const threshold = RANK[BLOCKING_BAND[opts.level]];
  const blocking = findings.find((f) => RANK[f.confidence] >= threshold);
  return { findings, blocking, truncated };
}

/** Runs every detector on one value and what it hides; true when decoding was cut short. */
function inspectInput(input: Input, findings: Finding[]): boolean {
  const plus: PlusMode = PLUS_AS_SPACE.has(input.source) || input.name.startsWith(REFERER_QUERY)
    ? "space"
    : "literal";
  const normalized = normalize(input.value, plus);
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
  return normalized.truncated;
}

/**
 * Header verdicts by name and text. Browsers repeat their headers on every request (the
 * User-Agent, the page in Referer, client hints), and those values are long and not inert
 * (`(KHTML, like Gecko)`, a whole URL), so judging them dominated the engine's time for benign
 * traffic (a browser's User-Agent alone cost as much as the rest of the request). Verdicts,
 * findings included so an attack in a header is reported every time, are kept for values up to
 * 512 characters, 4,096 at most; a flood of distinct values only empties the memo.
 */
type Verdict = { readonly findings: readonly Finding[]; readonly truncated: boolean };
/** By header name, then value (no joined key: decoded Referer parameter names hold anything). */
const HEADER_VERDICTS = new Map<string, Map<string, Verdict>>();
const MAX_HEADER_VERDICTS = 4096;
const MAX_CACHED_HEADER = 512;
let headerVerdicts = 0;

function inspectHeader(input: Input, findings: Finding[]): boolean {
  if (input.value.length > MAX_CACHED_HEADER) return inspectInput(input, findings);
  let byValue = HEADER_VERDICTS.get(input.name);
  const known = byValue?.get(input.value);
  if (known !== undefined) {
    for (const f of known.findings) findings.push(f);
    return known.truncated;
  }
  const own: Finding[] = [];
  const truncated = inspectInput(input, own);
  for (const f of own) findings.push(f);
  if (headerVerdicts >= MAX_HEADER_VERDICTS) {
    HEADER_VERDICTS.clear();
    headerVerdicts = 0;
    byValue = undefined;
  }
  if (byValue === undefined) HEADER_VERDICTS.set(input.name, byValue = new Map());
  byValue.set(input.value, { findings: own, truncated });
  headerVerdicts++;
  return truncated;
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
