/** Edge validation: JSON bodies and query strings through zod, failures as 400 naming the field. */
import { z } from "zod";
import { AppError, badRequest } from "../../mod/core/errors.ts";
import type { Ctx } from "./env.ts";

function fieldName(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : (out ? "." : "") + String(part);
  }
  return out;
}

/**
 * Error codes of refinements that say why (`params.reason`) a value was refused, where a client
 * can act on the reason: a regular expression whose program is over the size limit.
 */
const REASON_CODES: Readonly<Record<string, string>> = { size: "PATTERN_TOO_LARGE" };

/**
 * Throws a 400 for a zod failure, `BAD_REQUEST` unless the first problem has a code of its own
 * ({@link REASON_CODES}); the message names the first field.
 */
export function invalid(error: z.ZodError): AppError {
  const problems = error.issues.map((i) => {
    const base = fieldName(i.path);
    const field = i.code === "unrecognized_keys" ? fieldName([...i.path, i.keys[0] ?? ""]) : base;
    return { field: field || "(body)", message: i.message };
  });
  const first = problems[0]!;
  const issue = error.issues[0]!;
  const reason = issue.code === "custom" ? issue.params?.reason : undefined;
  const code = (typeof reason === "string" ? REASON_CODES[reason] : undefined) ?? "BAD_REQUEST";
  return new AppError(400, code, `Invalid field "${first.field}": ${first.message}`, {
    details: { field: first.field, problems },
  });
}

/** Parses the request body as JSON and validates it. */
export async function readJson<S extends z.ZodType>(c: Ctx, schema: S): Promise<z.infer<S>> {
  let data: unknown;
  try {
    const text = await c.req.text();
    data = text.length === 0 ? {} : JSON.parse(text);
  } catch {
    throw badRequest("Malformed JSON body: expected a JSON object", "(body)");
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw invalid(parsed.error);
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
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw invalid(parsed.error);
  return parsed.data;
}
