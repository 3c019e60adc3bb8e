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
import { extract } from "./extract.ts";
import { locationOf } from "./extract_push.ts";
import { sessionParameter } from "./session_fixation.ts";
import { decodeBase64Code, normalize, type PlusMode } from "./normalize.ts";
import { hiddenTexts } from "./hidden.ts";
import { HeaderMemo } from "./header_memo.ts";
import { MAX_TEXT, WINDOW_OVERLAP } from "./limits.ts";
import { checkProtocol } from "./protocol.ts";
import { sqli, sqlWord } from "./sqli.ts";
import { xss, xssWord } from "./xss.ts";
import { DETECTORS } from "./detectors.ts";
import { prototypePollution } from "./prototype_pollution.ts";
import { isUploadName, scriptUpload } from "./upload.ts";
import { javaClassName, javaToken } from "./java.ts";
import { INERT_SCRIPT_HINT, scriptInjection } from "./script_injection.ts";
import { bareCommand, mayBeBareCommand } from "./cmdi.ts";
import { xxe } from "./xxe.ts";
import { ssi } from "./ssi.ts";
import { codeInjection } from "./code_injection.ts";
import { deserialization } from "./deserialization.ts";
import { jndi } from "./jndi.ts";
import { restrictedFile } from "./restricted_files.ts";
import { isInert } from "./char_classes.ts";
import { budgetFor, WorkBudget } from "./work_budget.ts";
import { gateOn } from "./literal_gate.ts";
import { hotSpans, kindOf, MARGIN, type TextKind } from "./hot_spans.ts";

/** Long values are judged in windows of this many raw characters... */
const WINDOW = MAX_TEXT;
/** ...starting this far apart, so any fragment up to the overlap lies whole in one window. */
const STEP = MAX_TEXT - WINDOW_OVERLAP;
/** Windows of long values that look like binary data (compressed, encrypted) are skipped. */
const BINARY_SHARE = 0.25;
/**
 * What a window after the first starts with: a neutral word, so detectors that read the start
 * of a value as a command, a SQL statement or a path do not take the middle of a text for it.
 */
const CONTINUED = "x ";
/** Layers of hidden text (base64 in JSON in base64) judged inside one value. */
const MAX_HIDDEN_DEPTH = 3;

const RANK: Readonly<Record<Confidence, number>> = { low: 0, medium: 1, high: 2, critical: 3 };
/** Lowest band that blocks at each level. */
export const BLOCKING_BAND: Readonly<Record<Level, Confidence>> = {
  strict: "medium",
  balanced: "high",
  low: "critical",
};

/**
 * Whether a finding of `confidence` blocks at `level` (the band `inspect` decides with).
 *
 * @param confidence the finding's confidence
 * @param level the site's level
 */
export function blocksAt(confidence: Confidence, level: Level): boolean {
  return RANK[confidence] >= RANK[BLOCKING_BAND[level]];
}

/** What judges a structured document whose values are inputs of their own. */
const DOCUMENT_DETECTORS: readonly Detector[] = [xxe, ssi];

/** What an inert dotted value can still be: a gadget class name or a restricted file. */
const DOTTED_DETECTORS: readonly Detector[] = [javaClassName, restrictedFile];
/** What an inert word can still be: a probing command. */
const WORD_DETECTORS: readonly Detector[] = [bareCommand];

/** SQLi and XSS first: they are the most common attacks, so findings appear early. */
const ALL_DETECTORS: readonly Detector[] = [sqli, xss, ...DETECTORS];
/** The `+` of query strings and form bodies is a space; elsewhere it is literal. */
const PLUS_AS_SPACE: ReadonlySet<Input["source"]> = new Set([
  "query",
  "query_name",
  "form",
  "form_name",
]);

/** Verdicts of repeated header values (see header_memo.ts), shared by all requests. */
const HEADER_MEMO = new HeaderMemo();
/**
 * Verdicts of repeated paths and path segments: sites serve the same few paths over and over
 * (pages, assets, API routes), and a path is never inert (its slashes), so every detector ran on
 * it for every request. The same memo as the headers' (a verdict is a function of the value and
 * its name alone), kept apart so a path and a header never share an entry.
 */
const PATH_MEMO = new HeaderMemo();

/** Referer query parameters (see extract.ts) were form-encoded by the browser. */
const REFERER_QUERY = "referer?";

/** Per-request state: the findings so far and the work left. */
class Analysis {
  readonly findings: Finding[] = [];
  readonly #budget: WorkBudget;

  constructor(budget: number) {
    this.#budget = new WorkBudget(budget);
  }

  /** True once the budget ran out (or the run was stopped): the rest is not judged. */
  get truncated(): boolean {
    return this.#budget.exhausted;
  }

  /** Charges `units` of work about to be done; false once they do not fit. */
  spend(units: number): boolean {
    return this.#budget.spend(units);
  }

  /** Ends the work where it is. */
  stop(): void {
    this.#budget.stop();
  }

  /**
   * Runs every detector on one value (at most a window long) and what it hides, into
   * `findings`; `text` is the value's normalised text (`value.decoded` without a window's
   * lead-in).
   */
  judge(value: DetectorInput, text: string, findings: Finding[]): void {
    const input = value.input;
    if (input.structured === true) {
      this.run(value, findings, DOCUMENT_DETECTORS);
      return;
    }
    if (input.upload !== undefined) {
      const detectors = input.upload === "markup" ? MARKUP_UPLOAD_DETECTORS : UPLOAD_DETECTORS;
      if (this.spend(value.decoded.length * detectors.length)) {
        judgeUpload(value, detectors, findings);
      }
      return;
    }
    gateOn(value.decoded);
    if (!this.run(value, findings)) return;
    if (text.indexOf("/*") >= 0 && this.spend(text.length)) {
      const joined = joinSplitWords(value.decoded);
      if (joined !== undefined) this.run({ ...value, decoded: joined }, findings, SQL_ONLY);
    }
    this.#revealHidden(value, text, findings, 0);
  }

  /** Runs the SQL detector on one value, and on it with comments inside words dropped. */
  judgeSql(value: DetectorInput, text: string, findings: Finding[]): void {
    gateOn(value.decoded);
    if (!this.run(value, findings, SQL_ONLY)) return;
    if (text.indexOf("/*") >= 0 && this.spend(text.length)) {
      const joined = joinSplitWords(value.decoded);
      if (joined !== undefined) this.run({ ...value, decoded: joined }, findings, SQL_ONLY);
    }
    // What it hides, as a window's hidden texts are judged (full-width quotes folded).
    if (!this.spend(text.length)) return;
    for (const hidden of hiddenTexts(text)) {
      if (!this.spend(hidden.length)) return;
      const inner: DetectorInput = { ...value, decoded: normalize(hidden).text, raw: hidden };
      if (!this.run(inner, findings, SQL_ONLY)) return;
    }
  }

  /** {@link runDetectors} when the budget has room for them; false when it had not. */
  run(
    value: DetectorInput,
    findings: Finding[],
    detectors: readonly Detector[] = ALL_DETECTORS,
  ): boolean {
    if (!this.spend(value.decoded.length * detectors.length)) return false;
    runDetectors(value, findings, detectors);
    return true;
  }

  /** Judges what a decoded text hides (base64, nested JSON), and what that hides in turn. */
  #revealHidden(value: DetectorInput, text: string, findings: Finding[], depth: number): void {
    if (!this.spend(text.length)) return;
    for (const hidden of hiddenTexts(text)) {
      if (!this.spend(hidden.length)) return;
      const decoded = normalize(hidden).text;
      const inner: DetectorInput = { ...value, decoded, raw: hidden };
      if (!this.run(inner, findings)) return;
      if (depth + 1 < MAX_HIDDEN_DEPTH) this.#revealHidden(inner, decoded, findings, depth + 1);
    }
  }
}

/**
 * Inspects one request.
 *
 * @param req the request as plain data
 * @param opts the site's level and an optional work budget in characters
 * @returns every finding (highest score first) and the one that blocks at this level
 *
 * @example
 * ```ts
 * import { inspect } from "./mod.ts";
 * const attack = inspect(
 *   { method: "GET", path: "/", query: "id=1%27%20or%201=1--", headers: [] },
 *   { level: "balanced" },
 * );
 * attack.blocking?.ruleId; // "sqli.tautology"
 * attack.blocking?.location; // "query:id"
 * const benign = inspect(
 *   { method: "GET", path: "/products", query: "id=42", headers: [["user-agent", "curl/8.0"]] },
 *   { level: "balanced" },
 * );
 * benign.blocking; // undefined
 * ```
 */
export function inspect(req: EngineRequest, opts: InspectOptions): Inspection {
  const run = new InspectionRun(req, opts);
  while (run.step());
  return run.result();
}

/**
 * One request's inspection done a slice at a time, so a caller that must stay responsive (the
 * data plane's event loop) can pause between slices: {@link step} judges one input, or one
 * window of a long one (16 KB), and says whether work is left; {@link result} gives the same
 * verdict {@link inspect} gives. A slice costs what 16 KB of text costs, whatever the request.
 *
 * @example
 * ```ts
 * import { InspectionRun } from "./mod.ts";
 * const run = new InspectionRun({
 *   method: "POST",
 *   path: "/comment",
 *   query: "",
 *   headers: [["content-type", "application/x-www-form-urlencoded"]],
 *   body: new TextEncoder().encode("text=<script>alert(1)</script>"),
 * }, { level: "balanced" });
 * while (run.step()) {
 *   // a caller that must stay responsive yields here between slices
 * }
 * run.result().blocking?.ruleId; // "xss.script"
 * ```
 */
export class InspectionRun {
  readonly #analysis: Analysis;
  readonly #inputs: Input[];
  readonly #level: Level;
  #next = 0;
  /** The long input being judged in windows, and where its next window starts. */
  #long: LongValue | undefined;

  constructor(req: EngineRequest, opts: InspectOptions) {
    this.#level = opts.level;
    const analysis = new Analysis(opts.budget ?? budgetFor(req));
    this.#analysis = analysis;
    const protocol = checkProtocol(req.method, req.headers);
    if (protocol !== undefined) analysis.findings.push(protocol);
    this.#inputs = extract(req);
    const session = sessionParameter(req, this.#inputs);
    if (session !== undefined) analysis.findings.push(session);
  }

  /** Does the next slice of work; false once nothing is left (or the budget ran out). */
  step(): boolean {
    const analysis = this.#analysis;
    if (analysis.truncated) return false;
    if (this.#long !== undefined) {
      this.#window(this.#long);
      return !analysis.truncated;
    }
    const input = this.#inputs[this.#next++];
    if (input === undefined || analysis.truncated) return false;
    // Reading and decoding the value; the detectors charge what they read.
    if (!analysis.spend(Math.min(input.value.length, WINDOW))) return false;
    // Values made only of words and dots (`isInert`) cannot carry any attack class the engine
    // knows (no quotes, spaces, markup, separators or encodings), so they skip every detector.
    // This is what keeps typical benign requests (ids, tokens, slugs) cheap.
    if (isInert(input.value) && decodeBase64Code(input.value) === undefined) {
      // Dotted names (`java.lang.Runtime`, `.env`) still name classes and files, and a
      // lone word can be a probing command (`whoami`).
      judgeInert(input, analysis.findings);
    } else if (input.value.length > WINDOW) {
      this.#long = {
        input,
        location: locationOf(input),
        plus: plusMode(input),
        kind: kindOf(input.source, input.value),
        at: 0,
      };
      this.#window(this.#long);
    } else if (input.source === "header") inspectRemembered(HEADER_MEMO, input, analysis);
    else if (input.source === "path") inspectRemembered(PATH_MEMO, input, analysis);
    else inspectInput(input, analysis.findings, analysis);
    return true;
  }

  /**
   * Ends the run where it is, as when the budget runs out: what was read stays judged, the rest
   * is not, and the result says so (`truncated`). For a caller's own limit, such as a deadline.
   */
  stop(): void {
    this.#analysis.stop();
  }

  /** The findings so far, sorted, and the one that blocks at the run's level. */
  result(): Inspection {
    const findings = this.#analysis.findings;
    // On a tie the most precise place wins: a segment, a field or an element over the whole.
    findings.sort((a, b) => b.score - a.score || wholeness(a) - wholeness(b));
    const threshold = RANK[BLOCKING_BAND[this.#level]];
    const blocking = findings.find((f) => RANK[f.confidence] >= threshold);
    return { findings, blocking, truncated: this.#analysis.truncated };
  }

  /**
   * Judges the next window of the long input, where some detector can fire in it (its hot
   * spans, see hot_spans.ts: each trigger and the text around it, and the value's first and
   * last characters), each part as a window is judged; forgets the input after its last one.
   */
  #window(long: LongValue): void {
    const v = long.input.value;
    const at = long.at;
    const window = v.slice(at, at + WINDOW);
    const last = at + WINDOW >= v.length;
    if (!hotSpansOn) {
      if (this.#analysis.spend(window.length) && !isInert(window) && !isBinary(window)) {
        this.#judgeSpan(long, at, window);
      }
    } else if (this.#analysis.spend(window.length) && !isInert(window) && !isBinary(window)) {
      // Each trigger is read by one window: from a margin past this window's start (the last
      // window read what comes before) to a margin past the next window's start, so it has
      // its whole margin on both sides in this window.
      const spans = SPANS;
      const sql = SQL_STARTS;
      hotSpans(
        window,
        long.kind,
        long.plus,
        at > 0 ? MARGIN : 0,
        last ? window.length : STEP + MARGIN,
        spans,
        sql,
      );
      // Detectors read the start of a value as a command, a statement or a path.
      if (at === 0) spans.unshift(0, Math.min(MARGIN, window.length));
      if (last) spans.push(Math.max(0, window.length - MARGIN), window.length);
      let end = -1;
      for (let k = 0; k < spans.length && !this.#analysis.truncated; k += 2) {
        let s = spans[k]!;
        let e = spans[k + 1]!;
        // Spans that touch or overlap are one (the first and last parts added above).
        while (k + 2 < spans.length && spans[k + 2]! <= e) {
          e = Math.max(e, spans[k + 3]!);
          k += 2;
        }
        if (s < end) s = end;
        if (s >= e) continue;
        end = e;
        this.#judgeSpan(long, at + s, s === 0 && e === window.length ? window : window.slice(s, e));
      }
      // Each trigger read for SQL from close before it (see hot_spans.ts: a span's start
      // decides which quotes SQL reads as opening a string).
      // Uploads and structured documents are judged for what they are (see judge()), not as
      // values an application puts in a query.
      const plain = long.input.upload === undefined && long.input.structured !== true;
      for (let k = 0; plain && k < sql.length && k < MAX_SQL_STARTS; k++) {
        if (this.#analysis.truncated) break;
        const s = sql[k]!;
        this.#judgeSpan(long, at + s, window.slice(s, Math.min(window.length, s + MARGIN)), true);
      }
    }
    long.at += STEP;
    if (last) this.#long = undefined;
  }

  /**
   * Judges one part of a long value, starting at `from` in it, as a window is judged (or for
   * SQL alone, `sql`).
   */
  #judgeSpan(long: LongValue, from: number, raw: string, sql = false): void {
    if (isInert(raw)) return;
    const text = normalize(raw, long.plus).text;
    const value: DetectorInput = {
      input: long.input,
      location: long.location,
      decoded: from > 0 ? CONTINUED + text : text,
      raw,
    };
    if (sql) this.#analysis.judgeSql(value, text, this.#analysis.findings);
    else this.#analysis.judge(value, text, this.#analysis.findings);
  }
}

/** A long value judged in windows: its input, how it reads, and where its next window starts. */
interface LongValue {
  readonly input: Input;
  readonly location: string;
  readonly plus: PlusMode;
  readonly kind: TextKind;
  at: number;
}

/** Whether long values are judged at their hot spans (the default) or in whole windows. */
let hotSpansOn = true;

/**
 * Judges long values in whole windows (`false`), as before hot spans, or at their hot spans
 * (`true`, the default): for tests and comparisons that check the second finds what the first
 * does.
 *
 * @param on whether long values are judged at their hot spans
 */
export function judgeHotSpans(on: boolean): void {
  hotSpansOn = on;
}

/** The hot spans of the window being judged, two offsets each (one window at a time). */
const SPANS: number[] = [];
/** Where the window's triggers are read for SQL alone (see hot_spans.ts). */
const SQL_STARTS: number[] = [];
/** Most SQL readings of a window's triggers; a window with more is an attack's anyway. */
const MAX_SQL_STARTS = 32;

const WHOLE: ReadonlySet<string> = new Set(["path", "body", "xml", "multipart"]);

function wholeness(f: Finding): number {
  return WHOLE.has(f.location) ? 1 : 0;
}

function plusMode(input: Input): PlusMode {
  return PLUS_AS_SPACE.has(input.source) || input.name.startsWith(REFERER_QUERY)
    ? "space"
    : "literal";
}

/** Runs every detector on one value (at most a window long) and what it hides. */
function inspectInput(input: Input, findings: Finding[], analysis: Analysis): void {
  const location = locationOf(input);
  const text = normalize(input.value, plusMode(input)).text;
  const value: DetectorInput = { input, location, decoded: text, raw: input.value };
  analysis.judge(value, text, findings);
}

// deno-lint-ignore no-control-regex -- control characters are what it looks for
const BINARY_CHAR = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\xff\ufffd]/;

/** Control characters and Latin-1 bytes above ASCII: text decoded from binary data. */
function isBinary(text: string): boolean {
  // Text without one such character is text; the regex engine reads it faster than the loop.
  if (!BINARY_CHAR.test(text)) return false;
  const n = text.length;
  const limit = n * BINARY_SHARE;
  // Text reads as text once the characters left cannot lift the count above the share.
  const settled = n - limit;
  let odd = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || (c >= 0x7f && c <= 0xff) || c === 0xfffd) {
      if (++odd > limit) return true;
    } else if (i - odd >= settled) return false;
  }
  return false;
}

/**
 * A comment inside a word (`UN`, an empty comment, `ION`): no database joins a keyword across a
 * comment, but an application or filter that strips comments before the query does, which is
 * what the spelling is for. Comments of up to 64 characters between two letters (stars inside
 * one, several in a row: cases in sqli.json) are dropped and the text judged again for SQL only
 * (MySQL's versioned comments, which open with `!`, are code and stay: the lexer reads them).
 */
const SPLIT_WORD = /([A-Za-z])(?:\/\*(?!!)(?:[^*]|\*(?!\/)){0,64}\*\/)+(?=[A-Za-z])/g;
const SQL_ONLY: readonly Detector[] = [sqli];

function joinSplitWords(text: string): string | undefined {
  const joined = text.replace(SPLIT_WORD, "$1");
  return joined === text ? undefined : joined;
}

/**
 * What an uploaded file's content is judged for. A document is not a value the application
 * puts into a query, a command or a page: a CSV of SQL, a text file quoting `<script>`, a shell
 * script or a paper on path traversal is what users upload, and real WAFs read a file's name,
 * not its content (ModSecurity's CRS inspects `FILES` and `FILES_NAMES`). What a file still
 * attacks: the server that runs it when it lands in a served folder (PHP, ASP and JSP code
 * inside its tags, SSI directives), the parser that reads it (DTD entities, deserialisation
 * gadgets, JNDI lookups logged from it) and, when it is markup served back (HTML, SVG), the
 * browser that runs its script.
 */
const UPLOAD_DETECTORS: readonly Detector[] = [codeInjection, ssi, xxe, deserialization, jndi];
const MARKUP_UPLOAD_DETECTORS: readonly Detector[] = [xss, ...UPLOAD_DETECTORS];
/**
 * Rules that judge markup as injected into a page (a tag that changes how the page parses, a
 * closed raw-text element, an XML declaration mid-value): an uploaded HTML or SVG file is a
 * document of its own, its `<style>`, `<svg>` root and `<?xml ...?>` are what it is made of.
 * A markup upload is judged for the script a browser runs from it (`<script>`, handlers,
 * `javascript:` URLs), not for these.
 */
const DOCUMENT_SHAPE_RULES: ReadonlySet<string> = new Set([
  "xss.html_injection",
  "xss.context_breakout",
  "xss.foreign_content",
  "xss.xml_declaration",
  "xss.namespaced_markup",
]);
/** PHP only runs inside its tags (`<?xml` is a declaration where short tags are off). */
const PHP_TAG = /<\?(?!xml\b)/i;
/** ASP and JSP code only runs inside `<% %>`, `<jsp:...>` or a server-side script element. */
const SERVER_TAG = /<%|<jsp:|\brunat\s*=\s*["']?server/i;

function judgeUpload(
  value: DetectorInput,
  detectors: readonly Detector[],
  findings: Finding[],
): void {
  const own: Finding[] = [];
  runDetectors(value, own, detectors);
  for (const f of own) {
    if (DOCUMENT_SHAPE_RULES.has(f.ruleId)) continue;
    const tag = f.class === "php"
      ? PHP_TAG
      : f.class === "java" || f.ruleId === "rce.asp_code"
      ? SERVER_TAG
      : undefined;
    if (tag === undefined || tag.test(value.decoded)) findings.push(f);
  }
}

/** Judges a header or path value, or takes the verdict `memo` has for it. */
function inspectRemembered(memo: HeaderMemo, input: Input, analysis: Analysis): void {
  if (!memo.fits(input.value)) {
    inspectInput(input, analysis.findings, analysis);
    return;
  }
  const known = memo.get(input.name, input.value);
  if (known !== undefined) {
    for (const f of known) analysis.findings.push(f);
    return;
  }
  const own: Finding[] = [];
  inspectInput(input, own, analysis);
  for (const f of own) analysis.findings.push(f);
  memo.set(input.name, input.value, own);
}

/** Dotted words that can name a gadget class or a restricted file (the rest are versions, hosts). */
const DOTTED_HINT =
  /^(?:java|javax|sun|jdk|groovy|bsh|org|com|class|net|ch|oracle)\.|^\.|\.(?:bak|old|orig|swp|sql|env)|rocessbuilder|untime|ransformer|losure|actory|ecoder|riter|roperty/i;

function judgeInert(input: Input, findings: Finding[]): void {
  const v = input.value;
  // A parameter name or JSON key made of words can still be a path into the prototype
  // (`__proto__.isAdmin`, the key `prototype` under `constructor`).
  // An uploaded file's name made of words can still be a script (`shell.php`).
  const upload = isUploadName(input);
  if (upload || (input.source === "json_key" ? input.name : v).indexOf("proto") >= 0) {
    const value: DetectorInput = { input, location: locationOf(input), decoded: v, raw: v };
    const finding = upload ? scriptUpload(value) : prototypePollution(value);
    if (finding !== undefined) findings.push(finding);
  }
  if (v.length >= 4 && (v.length <= 28 || (v.length <= 64 && v.indexOf(".") > 0))) {
    // A catalog's name or a table in one (`information_schema.tables`), an overflowing number,
    // `document.cookie`: attacks without syntax.
    const word: DetectorInput = { input, location: locationOf(input), decoded: v, raw: v };
    const found = sqlWord(word) ?? (v.length <= 28 ? xssWord(word) : undefined);
    if (found !== undefined) findings.push(found);
  }
  const dotted = v.indexOf(".") >= 0;
  const script = INERT_SCRIPT_HINT.test(v);
  if (script || (!dotted && v.length >= 6)) {
    // A token of letters and digits can still be a Java object stream or a name in base64, and
    // a dotted path a Node.js global (`process.env`).
    const value: DetectorInput = { input, location: locationOf(input), decoded: v, raw: v };
    const finding = script ? scriptInjection(value, v) : javaToken(value);
    if (finding !== undefined) findings.push(finding);
  }
  if (dotted ? !DOTTED_HINT.test(v) : v.length < 5 || v.length > 10 || !mayBeBareCommand(v)) {
    return;
  }
  const value: DetectorInput = { input, location: locationOf(input), decoded: v, raw: v };
  for (const detector of dotted ? DOTTED_DETECTORS : WORD_DETECTORS) {
    const finding = detector(value);
    if (finding !== undefined) findings.push(finding);
  }
}

function runDetectors(
  value: DetectorInput,
  findings: Finding[],
  detectors: readonly Detector[] = ALL_DETECTORS,
): void {
  // The Host header only reaches the engine for header-injection checks (see extract.ts).
  const hostOnly = value.location === "header:host";
  for (const detector of detectors) {
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
