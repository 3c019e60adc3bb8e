/**
 * Shared data types of the pure inspection engine.
 *
 * The engine knows nothing about HTTP servers: a connector turns a request into an
 * {@link EngineRequest}, the engine returns findings and a verdict as plain data.
 */

/** Attack classes the semantic engine reports. */
export const ATTACK_CLASSES = [
  "sqli",
  "xss",
  "rce",
  "lfi",
  "rfi",
  "ssrf",
  "xxe",
  "ssti",
  "nosqli",
  "jndi",
  "crlf",
  "php",
  "java",
  "deserialization",
  "ldap",
  "xpath",
  "open-redirect",
  "ssi",
  "mail",
  "session-fixation",
  "prototype-pollution",
  "graphql",
  "request-smuggling",
  "host-header",
  "header-injection",
  "method",
] as const;
export type AttackClass = typeof ATTACK_CLASSES[number];

/**
 * Where an inspected value came from. Names follow the source in a finding's location:
 * `path[2]` (a segment), `query:id`, `json:user.name`, `json_key:user.$where`,
 * `multipart:file.filename`, `xml:/root/a@probe`, `graphql.query`, `cookie_name:x`.
 */
export type InputSource =
  | "path"
  | "query"
  | "query_name"
  | "form"
  | "form_name"
  | "json"
  | "json_key"
  | "multipart"
  | "xml"
  | "graphql"
  | "body"
  | "cookie"
  | "cookie_name"
  | "header";

/** One attacker-controlled value, already separated from its container. */
export interface Input {
  readonly source: InputSource;
  /**
   * Parameter, header, cookie or JSON path name; empty for the raw path or body. A name that
   * starts with `[` or `.` is joined to the source without a colon (`path[2]`, `graphql.query`).
   */
  readonly name: string;
  /** Raw value as received (before normalisation). */
  readonly value: string;
  /**
   * A whole document whose text and attribute values are inputs of their own (an XML body
   * that parsed): only the rules that need the document itself (DTDs, server-side includes)
   * judge it, so markup that is the document's own structure is not mistaken for injected
   * markup.
   */
  readonly structured?: boolean;
  /**
   * The content of an uploaded file (a multipart part every framework reads as a file): judged
   * only for what a server runs (PHP, ASP, JSP, SSI), what a parser resolves (DTDs, gadgets,
   * JNDI lookups) and, for `markup` (HTML, SVG, XML by name or type), script a browser runs.
   */
  readonly upload?: "file" | "markup";
}

/** Severity bands; the site's level picks which bands block. */
export type Confidence = "low" | "medium" | "high" | "critical";

/** What one detector concluded about one input. */
export interface Finding {
  readonly class: AttackClass;
  readonly confidence: Confidence;
  /** Numeric score 0..100 backing the band, for ordering. */
  readonly score: number;
  /** `source:name`, for example `query:id` or `header:user-agent`. */
  readonly location: string;
  /** Short fragment (at most 120 characters) that triggered the finding. */
  readonly evidence: string;
  /** Stable identifier of the detector rule, for logs and exceptions, e.g. `sqli.tautology`. */
  readonly ruleId: string;
}

/** A request as the engine sees it: plain data, no streams. */
export interface EngineRequest {
  readonly method: string;
  /** Raw path without the query string, still percent-encoded. */
  readonly path: string;
  /** Raw query string without the leading `?`, still percent-encoded; empty when absent. */
  readonly query: string;
  /** Header names lower-case, values as received; repeated headers appear repeatedly. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** Body prefix up to the inspection limit (may be truncated); undefined when there is none. */
  readonly body?: Uint8Array;
}

/** Protection level of a site. */
export type Level = "low" | "balanced" | "strict";

export interface InspectOptions {
  readonly level: Level;
  /**
   * Work units the inspection may spend (`work_budget.ts`: a character read by one detector is
   * one unit); by default `budgetFor(request)`, which grows with the request's size.
   */
  readonly budget?: number;
}

/** The engine's answer for one request. */
export interface Inspection {
  /** Every finding, highest score first. */
  readonly findings: readonly Finding[];
  /** The finding that decides the verdict under the given level, if any. */
  readonly blocking: Finding | undefined;
  /**
   * True when the work budget ran out (or the caller stopped the run) before every input was
   * analysed: the findings are those of what was read. The access log flags the request
   * (`inspection: budget`).
   */
  readonly truncated: boolean;
}

/** One input after decoding, as a detector receives it. */
export interface DetectorInput {
  readonly input: Input;
  /** `source:name` of the input, ready to copy into a finding. */
  readonly location: string;
  /** Fully decoded text (URL, %uXXXX, entities, \u/\x escapes, overlong UTF-8, NUL removed). */
  readonly decoded: string;
  /** The raw value, for detectors that judge the encoding itself (CRLF, traversal). */
  readonly raw: string;
}

/**
 * A per-class analyser: pure, allocation-light, never throws.
 * Returns the strongest finding for this input or undefined.
 */
export type Detector = (value: DetectorInput) => Finding | undefined;
