/**
 * Request schema validation: the first enabled schema entry whose method, site and path pattern
 * match the request applies, and the request must carry its required headers and parameters
 * (query string, form fields, or top-level keys of a JSON object body) within its body limit.
 * The data plane and `POST /api/apisec/validate` run this same code on a {@link RequestView}.
 */
import type { NormalPath, UpstreamKind } from "../../engine/path_normalize.ts";
import { RequestView } from "../../engine/request_view.ts";
import { type CompiledApiSec, type CompiledSchema, inScope } from "./apisec_compile.ts";

export interface Violation {
  readonly code: "missing_header" | "missing_param" | "body_too_large" | "body_schema";
  /** Where, as the access log's finding names it (`header:x-api-key`, `param:id`, `body`). */
  readonly location: string;
  readonly detail: string;
}

const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json\b/i;

/** The first enabled schema for this request, if any. */
export function findSchema(
  c: CompiledApiSec,
  siteId: string,
  methods: readonly string[],
  path: NormalPath,
): CompiledSchema | undefined {
  for (const s of c.schemas) if (inScope(s, siteId, methods, path)) return s;
  return undefined;
}

/** Top-level keys of a JSON object body; empty when the body is not one. */
export function jsonKeys(view: RequestView): readonly string[] {
  if (!JSON_TYPE.test(view.header("content-type") ?? "")) return [];
  try {
    const doc: unknown = JSON.parse(view.body);
    return doc !== null && typeof doc === "object" && !Array.isArray(doc) ? Object.keys(doc) : [];
  } catch {
    return [];
  }
}

/** What {@link violations} answers for a valid request (shared: nothing allocated). */
const NONE: readonly Violation[] = Object.freeze([]);

/**
 * Every way the request breaks the schema (empty: valid). A valid request allocates nothing:
 * the list, and the JSON body's keys, are made only when needed.
 *
 * @param bodyBytes the body's size (declared or read), null when unknown
 * @param whole whether the inspected body is all of it (a decoded Content-Encoding body's wire
 *   size is not its length); by default, when `bodyBytes` is within the inspected prefix
 */
export function violations(
  s: CompiledSchema,
  view: RequestView,
  bodyBytes: number | null,
  whole?: boolean,
): readonly Violation[] {
  let out: Violation[] | undefined;
  for (const h of s.requiredHeaders) {
    if (view.header(h) === undefined) {
      (out ??= []).push({
        code: "missing_header",
        location: `header:${h}`,
        detail: `missing header "${h}"`,
      });
    }
  }
  let keys: readonly string[] | undefined;
  const params = s.requiredParams.length > 0 ? view.params : NO_PARAMS;
  required: for (const p of s.requiredParams) {
    for (const [k] of params) if (k === p) continue required;
    if ((keys ??= jsonKeys(view)).includes(p)) continue;
    (out ??= []).push({
      code: "missing_param",
      location: `param:${p}`,
      detail: `missing parameter "${p}"`,
    });
  }
  if (s.body !== undefined) {
    const prefix = view.req.body?.length ?? 0;
    bodyViolations(s.body, view, whole ?? (bodyBytes === null || bodyBytes <= prefix), out ??= []);
  }
  if (s.maxBodyBytes > 0 && bodyBytes !== null && bodyBytes > s.maxBodyBytes) {
    (out ??= []).push({
      code: "body_too_large",
      location: "body",
      detail: `body of ${bodyBytes} bytes is over the schema's limit of ${s.maxBodyBytes}`,
    });
  }
  return out === undefined || out.length === 0 ? NONE : out;
}

const NO_PARAMS: ReadonlyArray<readonly [string, string]> = [];

/**
 * The JSON body against the entry's JSON Schema. A body longer than the inspected prefix is not
 * checked (it cannot be parsed whole); an absent body is the required-parameter checks' business.
 *
 * @param whole whether the inspected body is all of it
 */
function bodyViolations(
  check: NonNullable<CompiledSchema["body"]>,
  view: RequestView,
  whole: boolean,
  out: Violation[],
): void {
  const prefix = view.req.body;
  if (prefix === undefined || prefix.length === 0 || !whole) return;
  const type = view.header("content-type") ?? "";
  if (!JSON_TYPE.test(type)) {
    out.push({
      code: "body_schema",
      location: "body",
      detail: `expected a JSON body, got content type "${type}"`,
    });
    return;
  }
  let value: unknown;
  try {
    value = JSON.parse(view.body);
  } catch {
    out.push({ code: "body_schema", location: "body", detail: "body is not valid JSON" });
    return;
  }
  for (const e of check(value)) {
    out.push({
      code: "body_schema",
      location: `body${e.path}`,
      detail: `body${e.path} ${e.message}`,
    });
  }
}

/** A test request of `POST /api/apisec/validate` (nothing is sent upstream). */
export interface TestRequest {
  readonly siteId: string | null;
  readonly method: string;
  /** The path, optionally with `?query`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Added to the path's own query string. */
  readonly query: string;
  readonly body: string;
  /** How the site's upstream reads the path (default: `generic`, every kind's reading). */
  readonly upstreamKind?: UpstreamKind;
}

export interface TestResult {
  /** The schema entry that applied, or null when none matched. */
  readonly schema: string | null;
  readonly valid: boolean;
  readonly violations: readonly Violation[];
}

const ENCODER = new TextEncoder();

/** Validates a test request against the schemas in force, exactly as the data plane would. */
export function validateTestRequest(
  c: CompiledApiSec,
  t: TestRequest,
): TestResult {
  const q = t.path.indexOf("?");
  const path = q < 0 ? t.path : t.path.slice(0, q);
  const query = [q < 0 ? "" : t.path.slice(q + 1), t.query].filter((s) => s !== "").join("&");
  const body = t.body === "" ? undefined : ENCODER.encode(t.body);
  const v = new RequestView(
    {
      method: t.method,
      path,
      query,
      headers: Object.entries(t.headers).map(([k, val]) => [k.toLowerCase(), val]),
      body,
    },
    "",
    t.upstreamKind,
  );
  let schema: CompiledSchema | undefined;
  for (const s of c.schemas) {
    if (
      (s.method === "*" || v.methods.includes(s.method)) &&
      (t.siteId === null || s.siteId === null || s.siteId === t.siteId) &&
      s.path.matches(v.normalPath)
    ) {
      schema = s;
      break;
    }
  }
  if (schema === undefined) return { schema: null, valid: true, violations: [] };
  const found = violations(schema, v, body?.length ?? 0);
  return { schema: schema.id, valid: found.length === 0, violations: found };
}
