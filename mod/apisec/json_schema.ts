/**
 * The one wrapper of `ajv`: JSON Schema (2020-12, which OpenAPI 3.1 uses; OpenAPI 3.0 schemas
 * are converted on import) compiled once per distinct schema and shared by every policy that
 * holds it. Compiled validators are cached by the schema's JSON; past the bound a fresh Ajv
 * instance starts, so the cache cannot grow without limit.
 */
import { Ajv2020 } from "ajv/dist/2020.js";

export interface BodyError {
  /** JSON pointer into the body (`/items/0/qty`), empty for the body itself. */
  readonly path: string;
  readonly message: string;
}

export type BodyValidator = (value: unknown) => readonly BodyError[];

export type SchemaCompile =
  | { readonly ok: true; readonly validate: BodyValidator }
  | { readonly ok: false; readonly message: string };

const CACHE_LIMIT = 2000;
const MAX_ERRORS = 5;
const newAjv = () =>
  // strict off: OpenAPI keywords (`example`, `xml`, `discriminator`, `components`) are not errors.
  new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
let ajv = newAjv();
const cache = new Map<string, SchemaCompile>();

/** Compiles a JSON Schema (`#/components/...` references resolve inside it). */
export function compileBodySchema(schema: Readonly<Record<string, unknown>>): SchemaCompile {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit) return hit;
  if (cache.size >= CACHE_LIMIT) {
    cache.clear();
    ajv = newAjv();
  }
  let result: SchemaCompile;
  try {
    const v = ajv.compile(structuredClone(schema));
    result = {
      ok: true,
      validate: (value) => {
        if (v(value)) return [];
        return (v.errors ?? []).slice(0, MAX_ERRORS).map((e) => ({
          path: e.instancePath,
          message: e.message ?? e.keyword,
        }));
      },
    };
  } catch (err) {
    result = { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  cache.set(key, result);
  return result;
}
