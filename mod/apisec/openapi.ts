/**
 * OpenAPI 3.0 / 3.1 import: each operation becomes a schema entry. The path template becomes
 * `path_pattern` (`/users/{id}` -> `^/users/[^/]+$`, under the first server's base path), the
 * required query parameters `required_params`, the required header parameters
 * `required_headers`, `x-max-body-bytes` (on the operation or the document) `max_body_bytes`,
 * and the JSON request body's schema `body_schema` (with the document's `components`, so its
 * references resolve; OpenAPI 3.0's `nullable` becomes a `null` type).
 */
import { parse as parseYaml } from "yaml";
import { AppError, badRequest } from "../core/errors.ts";
import { malformedJson, parseJson } from "../core/json_syntax.ts";
import type { SchemaEntry } from "./apisec_schema.ts";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch"] as const;
/** Header parameters OpenAPI says to ignore (they are described elsewhere). */
const IGNORED_HEADERS = new Set(["accept", "content-type", "authorization"]);
const JSON_MEDIA = /^application\/([a-z0-9.+-]*\+)?json$/i;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

export interface ImportResult {
  readonly entries: SchemaEntry[];
  readonly skipped: Array<
    { readonly path: string; readonly method: string; readonly reason: string }
  >;
}

function bad(message: string): AppError {
  return badRequest(`Invalid OpenAPI document: ${message}`, "(body)");
}

/** Parses JSON or YAML text into the document object. */
export function parseOpenApiText(text: string): Obj {
  let doc: unknown;
  if (text.trimStart().startsWith("{")) {
    const json = parseJson(text);
    if (!json.ok) throw malformedJson("Invalid OpenAPI document: not JSON", json.error);
    doc = json.value;
  } else {
    try {
      doc = parseYaml(text);
    } catch (err) {
      throw bad(`not JSON or YAML: ${(err as Error).message}`);
    }
  }
  if (!isObj(doc)) throw bad("expected an object");
  return doc;
}

/** Follows a local `#/...` reference (one level at a time, bounded). */
function deref(doc: Obj, v: unknown): unknown {
  for (let i = 0; i < 10 && isObj(v) && typeof v["$ref"] === "string"; i++) {
    const ref = v["$ref"] as string;
    if (!ref.startsWith("#/")) return undefined;
    let at: unknown = doc;
    for (const part of ref.slice(2).split("/")) {
      at = isObj(at) ? at[part.replaceAll("~1", "/").replaceAll("~0", "~")] : undefined;
    }
    v = at;
  }
  return v;
}

/** OpenAPI 3.0's `nullable: true` as JSON Schema: the type also admits `null`. */
function nullableToType(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(nullableToType);
  if (!isObj(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) if (k !== "nullable") out[k] = nullableToType(x);
  if (v["nullable"] === true && typeof v["type"] === "string") out["type"] = [v["type"], "null"];
  return out;
}

function basePath(doc: Obj): string {
  const servers = doc["servers"];
  const url = Array.isArray(servers) && isObj(servers[0]) ? String(servers[0]["url"] ?? "") : "";
  const path = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "");
  return path.replace(/\{[^}]*\}/g, "").replace(/\/+$/, "");
}

const escapeRe = (s: string) => s.replace(/[.*+?^$()|[\]\\]/g, "\\$&");

/** `/users/{id}` under base `/v1` -> `^/v1/users/[^/]+$`. */
export function pathPattern(base: string, template: string): string {
  const parts = template.split(/(\{[^}/]+\})/).map((p) =>
    p.startsWith("{") && p.endsWith("}") ? "[^/]+" : escapeRe(p)
  );
  return `^${escapeRe(base)}${parts.join("")}$`;
}

function entryId(op: Obj, method: string, path: string, taken: Set<string>): string {
  const raw = typeof op["operationId"] === "string" ? op["operationId"] : `${method}${path}`;
  let id = raw.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "").slice(0, 60) ||
    method;
  for (let n = 2; taken.has(id); n++) id = `${id.replace(/-\d+$/, "")}-${n}`;
  taken.add(id);
  return id;
}

function bodySchema(doc: Obj, op: Obj, v30: boolean): Obj | null {
  const body = deref(doc, op["requestBody"]);
  if (!isObj(body) || !isObj(body["content"])) return null;
  for (const [media, m] of Object.entries(body["content"])) {
    if (!JSON_MEDIA.test(media) || !isObj(m) || !isObj(m["schema"])) continue;
    const schema: Obj = { ...m["schema"] };
    if (isObj(doc["components"])) schema["components"] = doc["components"];
    return (v30 ? nullableToType(schema) : schema) as Obj;
  }
  return null;
}

/** The schema entries of an OpenAPI document; operations that cannot be mapped are listed. */
export function importOpenApi(doc: Obj): ImportResult {
  const version = String(doc["openapi"] ?? "");
  if (!/^3\.[01]\./.test(version)) {
    throw bad(`expected "openapi": "3.0.x" or "3.1.x", got "${version}"`);
  }
  const v30 = version.startsWith("3.0.");
  if (!isObj(doc["paths"])) throw bad('expected a "paths" object');
  const base = basePath(doc);
  const docLimit = Number(doc["x-max-body-bytes"] ?? 0);
  const entries: SchemaEntry[] = [];
  const skipped: ImportResult["skipped"] = [];
  const taken = new Set<string>();
  for (const [path, rawItem] of Object.entries(doc["paths"])) {
    const item = deref(doc, rawItem);
    if (!isObj(item) || !path.startsWith("/")) {
      skipped.push({ path, method: "*", reason: "not a path item" });
      continue;
    }
    const shared = Array.isArray(item["parameters"]) ? item["parameters"] : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const params = [...shared, ...(Array.isArray(op["parameters"]) ? op["parameters"] : [])]
        .map((p) => deref(doc, p)).filter(isObj);
      const required = (where: string) =>
        params.filter((p) => p["in"] === where && p["required"] === true).map((p) =>
          String(p["name"])
        );
      const limit = Number(op["x-max-body-bytes"] ?? docLimit);
      entries.push({
        id: entryId(op, method, path, taken),
        method: method.toUpperCase() as SchemaEntry["method"],
        path_pattern: pathPattern(base, path),
        required_params: [...new Set(required("query"))],
        required_headers: [...new Set(required("header").map((h) => h.toLowerCase()))].filter((h) =>
          !IGNORED_HEADERS.has(h)
        ),
        max_body_bytes: Number.isInteger(limit) && limit > 0 ? limit : 0,
        enabled: op["deprecated"] !== true,
        site_id: null,
        body_schema: bodySchema(doc, op, v30),
      });
    }
  }
  return { entries, skipped };
}
