/**
 * The error object (specification 2.5) on every guarded route of a server, for each kind of bad
 * request: without the CSRF value, without the permission, with malformed JSON, a JSON array, or
 * common fields of the wrong type; an unknown id on a `GET`; filters and pagination of the wrong
 * type on a list. Used by `tests/routes/api/error_object_test.ts` and `scripts/spec_audit.ts`.
 */
import type { RouteDef } from "../../routes/api/route.ts";
import { type ApiTarget, callJson, type Session } from "./identity.ts";

/** One route and one kind of bad request: whether the answer conforms, and what it was. */
export interface SweepResult {
  readonly area: string;
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

type Body = Record<string, unknown>;

/** True when `body` is the section 2.5 error object with `code`. */
export function errorObject(body: Body, code?: string): string | undefined {
  const e = body.error as Record<string, unknown> | undefined;
  if (!e) return "no error object";
  for (const k of ["code", "message", "trace_id", "event_id"]) {
    if (typeof e[k] !== "string" || e[k] === "") return `error.${k} missing`;
  }
  if (!/^[0-9a-f]+$/.test(e.trace_id as string)) return "trace_id is not hex";
  if (!/^[0-9a-f]+$/.test(e.event_id as string)) return "event_id is not hex";
  if (!/^[A-Z][A-Z0-9_]*$/.test(e.code as string)) return `code "${e.code}" is not upper case`;
  if (code !== undefined && e.code !== code) return `code ${e.code}, expected ${code}`;
  return undefined;
}

/** Sends a raw body (not JSON-encoded) with a session. */
export async function raw(
  server: ApiTarget,
  method: string,
  path: string,
  body: string,
  s: Session,
) {
  const res = await server.api(path, {
    method,
    headers: {
      "content-type": "application/json",
      cookie: s.cookie,
      "x-csrf-token": s.csrf,
    },
    body: method === "GET" ? undefined : body,
  });
  const text = await res.text();
  let parsed: Body = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch { /* not JSON: reported by the caller */ }
  return { status: res.status, body: parsed, text };
}

/** Common field names, each with a value of the wrong type. */
const WRONG_FIELDS = JSON.stringify({
  name: 1,
  enabled: "yes",
  id: [],
  username: 7,
  password: false,
  role: {},
  permissions: "read:users",
  note: 1,
  html: 2,
  template_id: 3,
  upstreams: "http://x",
  hosts: 1,
  pattern: 1,
  mode: 9,
  url: 1,
  ip: [],
  entries: {},
  schedule: 1,
  message: 1,
});

const BAD_BODIES = [
  ["malformed JSON", '{"a":'],
  ["wrong type", "[1,2]"],
  ["wrong field types", WRONG_FIELDS],
] as const;

const BAD_QUERY = [
  "limit=abc",
  "cursor=-1",
  "offset=x",
  "page=0",
  "days=many",
  "status=%00",
  "since=yesterday",
  "until=2",
  "period=1y",
  "site=%ff",
  "q=%E0%A4%A",
].join("&");

/** Path parameters that are values to look up (an address), where no value means "not found". */
const VALUE_PARAM = /:ip\b/;

/** A path with every parameter an id that exists nowhere (a trace id must look like one). */
const concrete = (path: string) =>
  path.replace(/:traceId/g, "0".repeat(32)).replace(/:[A-Za-z_]+/g, "no-such-id");

/** A failure that is not a 5xx (the deliberate 501s aside) and carries the error object. */
function conforming(res: { status: number; body: Body; text: string }): string | undefined {
  if (res.status >= 500 && res.status !== 501) {
    return `status ${res.status}: ${res.text.slice(0, 160)}`;
  }
  return res.status >= 400 ? errorObject(res.body) : undefined;
}

function result(
  area: string,
  name: string,
  res: { status: number; body: Body; text: string },
  problem: string | undefined,
): SweepResult {
  return {
    area,
    name,
    ok: problem === undefined,
    detail: problem ?? `${res.status} ${(res.body.error as Body | undefined)?.code ?? ""}`,
  };
}

/** Expects exactly `status` and `code` with the error object. */
function exact(
  area: string,
  name: string,
  res: { status: number; body: Body; text: string },
  status: number,
  code: string,
): SweepResult {
  const problem = res.status !== status
    ? `status ${res.status} (${res.text.slice(0, 160)}), expected ${status}`
    : errorObject(res.body, code);
  return result(area, name, res, problem);
}

/**
 * Sweeps every `permission` route of `routes`. `admin` holds every permission; `viewer` holds the
 * default `readonly` role (every `read:` identifier, nothing else).
 */
export async function sweepErrorObjects(
  server: ApiTarget,
  routes: readonly RouteDef[],
  sessions: { readonly admin: Session; readonly viewer: Session },
): Promise<SweepResult[]> {
  const { admin, viewer } = sessions;
  const out: SweepResult[] = [];
  const json = async (method: string, path: string, session: Session, csrf?: false) => {
    const r = await callJson(server, method, path, {
      session,
      body: method === "GET" ? undefined : {},
      csrf,
    });
    return { status: r.status, body: r.body, text: JSON.stringify(r.body) };
  };
  for (const r of routes) {
    if (r.access.kind !== "permission") continue;
    const path = concrete(r.path);
    const name = `${r.method} ${r.path}`;
    if (r.method === "GET") {
      if (VALUE_PARAM.test(r.path)) {
        // A parameter that is a value, not the id of something stored: a malformed one is a 400.
        out.push(exact("bad value", name, await json("GET", path, admin), 400, "BAD_REQUEST"));
      } else if (r.path.includes(":")) {
        out.push(exact("unknown id", name, await json("GET", path, admin), 404, "NOT_FOUND"));
      } else if (!r.path.startsWith("/api/realtime/")) {
        // Filters and pagination of the wrong type: a 400 with the error object, or ignored.
        // (The streams are left out: their answer does not end; their filters have own tests.)
        const res = await raw(server, "GET", `${path}?${BAD_QUERY}`, "", admin);
        out.push(result("bad query", name, res, conforming(res)));
      }
      continue;
    }
    out.push(
      exact("missing CSRF", name, await json(r.method, path, admin, false), 403, "CSRF_INVALID"),
    );
    if (!r.access.permission.startsWith("read:")) {
      out.push(exact("no permission", name, await json(r.method, path, viewer), 403, "FORBIDDEN"));
    }
    // A route without a body may ignore it and an unknown id may be found first (404); anything
    // else must be a 400 with the error object, and nothing may be a 5xx or lack the object.
    for (const [kind, body] of BAD_BODIES) {
      const res = await raw(server, r.method, path, body, admin);
      out.push(result(kind, name, res, conforming(res)));
    }
  }
  return out;
}
