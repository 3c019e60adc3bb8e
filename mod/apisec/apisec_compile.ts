/**
 * Compiles the stored `apisec` settings into the immutable structures the data plane runs on:
 * every path pattern through RE2 once, durations into milliseconds, key files read, disabled
 * entries dropped.
 * Built with the rest of the policy on every change and swapped with it.
 */
import {
  compileRe2,
  holderOf,
  type Matcher,
  type RuleSetHolder,
  type SharedMatcher,
} from "../../engine/re2.ts";
import { foldedTwin } from "../../engine/path_match.ts";
import { type NormalPath, pathIs, testPath, underPrefix } from "../../engine/path_normalize.ts";
import { durationMs } from "../core/duration.ts";
import type { ApiSecConfigDoc, AuthDoc, SchemaEntry } from "./apisec_schema.ts";
import { parseJwks } from "./jwt.ts";
import { type BodyValidator, compileBodySchema } from "./json_schema.ts";
import type { JSONWebKeySet } from "jose";

/** A route's path pattern: on a plain string as written, on a request's normalised path. */
export interface PathMatcher extends Matcher {
  /** Matches the path as the site's upstream reads it (case, trailing slash; path_normalize.ts). */
  matches(path: NormalPath): boolean;
}

interface RouteScope {
  readonly id: string;
  /** An upper-case method, or `*` for every method. */
  readonly method: string;
  /** Null: every site. */
  readonly siteId: string | null;
  readonly path: PathMatcher;
}

export interface CompiledSchema extends RouteScope {
  readonly requiredParams: readonly string[];
  readonly requiredHeaders: readonly string[];
  /** 0: no limit beyond the site's. */
  readonly maxBodyBytes: number;
  /** Validates a JSON body (from `body_schema`); undefined without one. */
  readonly body: BodyValidator | undefined;
  readonly entry: SchemaEntry;
}

export interface CompiledRouteLimit extends RouteScope {
  readonly requests: number;
  readonly windowMs: number;
}

export type CompiledAuthRoute = RouteScope;

/** The token checks: which routes need a token, and how a token is verified. */
export interface CompiledAuth {
  /** Enabled routes needing a token (empty when `auth` is off). */
  readonly routes: readonly CompiledAuthRoute[];
  readonly algorithms: readonly string[];
  readonly issuer: string | null;
  readonly audience: readonly string[];
  readonly clockSkewSeconds: number;
  /** A token without `exp` is refused (`auth.require_exp`). */
  readonly requireExp: boolean;
  readonly secretSealed: string | null;
  /** The inline PEM, or the PEM file's text. */
  readonly pem: string | null;
  /** The local JWKS file's public keys. */
  readonly jwks: JSONWebKeySet | null;
  readonly remote: {
    readonly url: string;
    readonly cacheFile: string | null;
    readonly refreshMs: number;
  } | null;
}

/** What discovery samples; `enabled` false: nothing. */
export interface CompiledDiscovery {
  readonly enabled: boolean;
  readonly sampleLimit: number;
  readonly ignorePrefixes: readonly string[];
  readonly ignoreSuffixes: readonly string[];
}

export interface CompiledApiSec {
  /** Holds the RE2 expressions; released when a newer compile replaces this one. */
  readonly holder: RuleSetHolder;
  readonly discovery: CompiledDiscovery;
  readonly auth: CompiledAuth;
  /** Enabled schema entries in their configured order (empty when validation is off). */
  readonly schemas: readonly CompiledSchema[];
  /** Enabled route limits in their configured order. */
  readonly rateLimits: readonly CompiledRouteLimit[];
}

const NO_AUTH: CompiledAuth = {
  routes: [],
  algorithms: [],
  issuer: null,
  audience: [],
  clockSkewSeconds: 0,
  requireExp: true,
  secretSealed: null,
  pem: null,
  jwks: null,
  remote: null,
};

const NO_DISCOVERY: CompiledDiscovery = {
  enabled: false,
  sampleLimit: 0,
  ignorePrefixes: [],
  ignoreSuffixes: [],
};

export const NO_APISEC: CompiledApiSec = {
  holder: { retain() {}, release() {} },
  discovery: NO_DISCOVERY,
  auth: NO_AUTH,
  schemas: [],
  rateLimits: [],
};

/** True when discovery skips this decoded path. */
export function ignoredPath(d: CompiledDiscovery, path: string): boolean {
  for (const p of d.ignorePrefixes) if (path.startsWith(p)) return true;
  for (const s of d.ignoreSuffixes) if (path.endsWith(s)) return true;
  return false;
}

/** A key file's text; null when it cannot be read (tokens needing it then fail: fail closed). */
function readKeyFile(path: string | null): string | null {
  if (path === null) return null;
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

function compileAuth(a: AuthDoc): CompiledAuth {
  const routes = a.enabled
    ? a.routes.filter((r) => r.enabled).map((r): CompiledAuthRoute => ({
      id: r.id,
      method: r.method,
      siteId: r.site_id,
      path: matcher(r.path_pattern),
    }))
    : [];
  if (routes.length === 0) return NO_AUTH;
  const jwksText = readKeyFile(a.jwks_file);
  return {
    routes,
    algorithms: a.algorithms,
    issuer: a.issuer,
    audience: a.audience,
    clockSkewSeconds: durationMs(a.clock_skew) / 1000,
    requireExp: a.require_exp,
    secretSealed: a.secret_sealed,
    pem: a.pem ?? readKeyFile(a.pem_file),
    jwks: jwksText === null ? null : parseJwks(jwksText) ?? null,
    remote: a.jwks_url === null ? null : {
      url: a.jwks_url,
      cacheFile: a.jwks_cache_file,
      refreshMs: durationMs(a.jwks_refresh_interval),
    },
  };
}

/** The expressions one compile holds (collected while it runs; compiles are synchronous). */
let held: SharedMatcher[] = [];

const SPECIAL = new Set([..."\\.*+?()[]{}|^$"]);
const QUANTIFIER = new Set([..."*+?{"]);

/**
 * The literal path prefix an anchored pattern requires (`^/api/v1/` of `^/api/v1/[0-9]+$`) and
 * whether that prefix is the whole pattern (`^/login$`: exact; `^/api/`: a prefix). Conservative:
 * no alternation, and a character a quantifier follows is not part of the prefix.
 */
export function anchoredLiteral(
  pattern: string,
): { prefix: string; rest: "" | "$" | "regex" } | undefined {
  if (!pattern.startsWith("^") || pattern.includes("|")) return undefined;
  let prefix = "";
  let i = 1;
  while (i < pattern.length) {
    const ch = pattern[i]!;
    let lit: string | undefined;
    let next = i + 1;
    if (ch === "\\") {
      const esc = pattern[i + 1];
      if (esc === undefined || /[A-Za-z0-9]/.test(esc)) break;
      lit = esc;
      next = i + 2;
    } else if (!SPECIAL.has(ch)) lit = ch;
    if (lit === undefined) break;
    if (QUANTIFIER.has(pattern[next] ?? "")) break;
    prefix += lit;
    i = next;
  }
  const rest = pattern.slice(i);
  return { prefix, rest: rest === "" ? "" : rest === "$" ? "$" : "regex" };
}

const NEVER: Omit<PathMatcher, "source"> = { test: () => false, matches: () => false };

function matcher(pattern: string): PathMatcher {
  // Anchored literals (`^/login$`, `^/api/`) skip RE2, whose every call copies the path into
  // WebAssembly memory; the rest are prefiltered by their literal prefix (see
  // docs/api-security.md, "Cost, measured").
  const lit = anchoredLiteral(pattern);
  if (lit?.rest === "") {
    const prefix = lit.prefix;
    return {
      source: pattern,
      test: (p) => p.startsWith(prefix),
      matches: (p) => underPrefix(p, prefix),
    };
  }
  if (lit?.rest === "$") {
    const exact = lit.prefix;
    return { source: pattern, test: (p) => p === exact, matches: (p) => pathIs(p, exact) };
  }
  const r = compileRe2(pattern);
  // Stored patterns were compiled when written; one that no longer compiles never matches.
  if (!r.ok) return { source: pattern, ...NEVER };
  held.push(r.matcher);
  const re = r.matcher;
  const folded = foldedTwin(pattern, held);
  const prefix = lit?.prefix ?? "";
  if (prefix === "") {
    return { source: pattern, test: (p) => re.test(p), matches: (p) => testPath(p, re, folded) };
  }
  return {
    source: pattern,
    test: (p) => p.startsWith(prefix) && re.test(p),
    matches: (p) => underPrefix(p, prefix) && testPath(p, re, folded),
  };
}

/**
 * True when an entry applies to a request of this site, method and path. The methods are the
 * request's and those its overrides name (`RequestView.methods`): any of them in scope counts.
 * A request's path is its normalised path; a plain string (a sampled endpoint) is compared as
 * it is.
 */
export function inScope(
  e: RouteScope,
  siteId: string,
  method: string | readonly string[],
  path: string | NormalPath,
): boolean {
  if (e.siteId !== null && e.siteId !== siteId) return false;
  if (
    e.method !== "*" &&
    (typeof method === "string" ? e.method !== method : !method.includes(e.method))
  ) {
    return false;
  }
  return typeof path === "string" ? e.path.test(path) : e.path.matches(path);
}

function bodyValidator(schema: SchemaEntry["body_schema"]): BodyValidator | undefined {
  if (schema === null) return undefined;
  const r = compileBodySchema(schema);
  // Stored schemas compiled when written; one that no longer does refuses nothing.
  return r.ok ? r.validate : undefined;
}

export function compileApiSec(doc: ApiSecConfigDoc): CompiledApiSec {
  held = [];
  const schemas = doc.validation.enabled
    ? doc.validation.schemas.filter((s) => s.enabled).map((s): CompiledSchema => ({
      id: s.id,
      method: s.method,
      siteId: s.site_id,
      path: matcher(s.path_pattern),
      requiredParams: s.required_params,
      requiredHeaders: s.required_headers,
      maxBodyBytes: s.max_body_bytes,
      body: bodyValidator(s.body_schema),
      entry: s,
    }))
    : [];
  const rateLimits = doc.rate_limits.filter((l) => l.enabled).map((l): CompiledRouteLimit => ({
    id: l.id,
    method: l.method,
    siteId: l.site_id,
    path: matcher(l.path_pattern),
    requests: l.requests,
    windowMs: durationMs(l.window),
  }));
  const auth = compileAuth(doc.auth);
  const d = doc.discovery;
  const discovery: CompiledDiscovery = d.enabled
    ? {
      enabled: true,
      sampleLimit: d.sample_limit,
      ignorePrefixes: d.ignore_prefixes.filter((p) => p.startsWith("/")),
      ignoreSuffixes: d.ignore_prefixes.filter((p) => p.startsWith("*")).map((p) => p.slice(1)),
    }
    : NO_DISCOVERY;
  const holder = holderOf(held);
  held = [];
  return schemas.length === 0 && rateLimits.length === 0 && auth === NO_AUTH && !d.enabled
    ? NO_APISEC
    : { holder, discovery, auth, schemas, rateLimits };
}
