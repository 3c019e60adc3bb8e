/** Edge validation: JSON bodies and query strings through zod, failures as 400 naming the field. */
import { z } from "zod";
import { AppError, badRequest } from "../../mod/core/errors.ts";
import { malformedJson, parseJson } from "../../mod/core/json_syntax.ts";
import type { Ctx } from "./env.ts";

function fieldName(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : (out ? "." : "") + String(part);
  }
  return out;
}

/**
 * One failing field of a request as data, so a client can word it in its own language and show it
 * beside its own control: `field` is the API's path (`upstreams[0]`, `timeouts.connect_ms`),
 * `code` zod's issue code (`required` for a missing value), with the bound of a size problem.
 */
export interface FieldProblem {
  readonly field: string;
  readonly message: string;
  readonly code: string;
  readonly minimum?: number;
  readonly maximum?: number;
  /** What the bound counts: `string` (characters), `array` (items), `number` (the value). */
  readonly origin?: string;
}

/** No input was given to {@link invalid}: a missing value cannot be told from a wrong one. */
const NO_INPUT = Symbol("no input");

function valueAt(input: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let v = input;
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function bound(value: unknown): number | undefined {
  return typeof value === "number" || typeof value === "bigint" ? Number(value) : undefined;
}

function problemOf(i: z.core.$ZodIssue, input: unknown): FieldProblem {
  const base = fieldName(i.path);
  const field = i.code === "unrecognized_keys" ? fieldName([...i.path, i.keys[0] ?? ""]) : base;
  const missing = i.code === "invalid_type" && input !== NO_INPUT &&
    valueAt(input, i.path) === undefined;
  const sized = i.code === "too_small" || i.code === "too_big";
  return {
    field: field || "(body)",
    message: i.message,
    code: missing ? "required" : i.code,
    ...(i.code === "too_small" ? { minimum: bound(i.minimum) } : {}),
    ...(i.code === "too_big" ? { maximum: bound(i.maximum) } : {}),
    ...(sized ? { origin: i.origin } : {}),
  };
}

/**
 * Error codes of refinements that say why (`params.reason`) a value was refused, where a client
 * can act on the reason: a regular expression whose program is over the size limit.
 */
const REASON_CODES: Readonly<Record<string, string>> = { size: "PATTERN_TOO_LARGE" };

/**
 * The 400 of a zod failure, `BAD_REQUEST` unless the first problem has a code of its own
 * ({@link REASON_CODES}): the message names the first field, and `problems` lists every one (see
 * {@link FieldProblem}); `input` (what was parsed) tells a missing value from a wrong one.
 */
export function invalid(error: z.ZodError, input: unknown = NO_INPUT): AppError {
  const problems = error.issues.map((i) => problemOf(i, input));
  const first = problems[0]!;
  const issue = error.issues[0]!;
  const reason = issue.code === "custom" ? issue.params?.reason : undefined;
  const code = (typeof reason === "string" ? REASON_CODES[reason] : undefined) ?? "BAD_REQUEST";
  return new AppError(400, code, `Invalid field "${first.field}": ${first.message}`, {
    details: { field: first.field, problems },
  });
}

/**
 * Parses the request body as JSON and validates it. Malformed JSON answers 400 naming where it
 * goes wrong: `Malformed JSON body at line 3, column 5: unexpected "x", expected a value`, with
 * `line` and `column` in the error object.
 */
export async function readJson<S extends z.ZodType>(c: Ctx, schema: S): Promise<z.infer<S>> {
  let text: string;
  try {
    text = await c.req.text();
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw badRequest("Malformed JSON body: the body could not be read", "(body)");
  }
  const json = text.length === 0 ? { ok: true as const, value: {} } : parseJson(text);
  if (!json.ok) throw malformedJson("Malformed JSON body", json.error);
  const parsed = schema.safeParse(json.value);
  if (!parsed.success) throw invalid(parsed.error, json.value);
  return parsed.data;
}

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json\s*(?:;|$)/i;

/**
 * {@link readJson} for a route a cross-site form must not reach: an HTML form can send
 * `text/plain`, form-encoded or multipart bodies without a CORS preflight, never
 * `application/json`, so anything else is refused with 415 before the body is read.
 */
export function readJsonOnly<S extends z.ZodType>(c: Ctx, schema: S): Promise<z.infer<S>> {
  const type = c.req.header("content-type") ?? "";
  if (!JSON_TYPE.test(type)) {
    return Promise.reject(
      new AppError(
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        `Unsupported content type "${type}": expected "application/json"`,
        { details: { field: "(content-type)" } },
      ),
    );
  }
  return readJson(c, schema);
}

/**
 * The `cursor` query value of a paged list, a previous page's `next_cursor`: a store row id
 * (audit trail, access log) is checked and read here; a `<time>.<id>` key (notifications,
 * deliveries) is read by its service, so only its length is bounded here.
 */
export const cursorQuery = {
  rowId: z.string().regex(/^\d{1,18}$/, "expected the next_cursor of a previous page")
    .transform(Number),
  key: z.string().max(128),
} as const;

/** Validates the query string (single values; repeated keys keep the last). */
export function readQuery<S extends z.ZodType>(c: Ctx, schema: S): z.infer<S> {
  const query = c.req.query();
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw invalid(parsed.error, query);
  return parsed.data;
}
