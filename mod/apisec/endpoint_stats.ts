/**
 * One endpoint's statistics and how two of them add up. Counts (hits, per method, per status
 * class) add, `first_seen` is the earlier, `last_seen` and its `example_path` the later, and the
 * names are unioned up to their bounds. Adding is what lets several controllers share one stored
 * row: each writes what it saw since its last write, added to what the row holds
 * ({@link combineStats}), and a template merged into another brings its counts along.
 */

/** One sampled request, as the data plane saw it. */
export interface Sample {
  readonly siteId: string;
  readonly method: string;
  /** The decoded path. */
  readonly path: string;
  readonly status: number;
  readonly time: number;
  readonly queryNames: readonly string[];
  readonly bodyNames: readonly string[];
  /** The media type without parameters; empty without a body. */
  readonly contentType: string;
}

export interface Endpoint {
  readonly site_id: string;
  template: string;
  methods: Record<string, number>;
  hits: number;
  statuses: Record<string, number>;
  first_seen: number;
  last_seen: number;
  query_params: string[];
  body_params: string[];
  content_types: string[];
  /** One real path of the endpoint (coverage is checked against it). */
  example_path: string;
}

/** What `apisec_endpoints.data` holds: the statistics without the row's key. */
export type EndpointStats = Omit<Endpoint, "site_id" | "template">;

const MAX_NAMES = 50;
const MAX_TYPES = 10;

function addNames(into: string[], names: readonly string[], max: number): void {
  for (const n of names) if (into.length < max && !into.includes(n)) into.push(n);
}

/** An endpoint with nothing counted yet, first seen at `s`. */
export function blankEndpoint(s: Sample, template: string): Endpoint {
  return {
    site_id: s.siteId,
    template,
    methods: {},
    hits: 0,
    statuses: {},
    first_seen: s.time,
    last_seen: s.time,
    query_params: [],
    body_params: [],
    content_types: [],
    example_path: s.path,
  };
}

/** Counts one sampled request into `e`. */
export function countSample(e: Endpoint, s: Sample): void {
  e.methods[s.method] = (e.methods[s.method] ?? 0) + 1;
  const cls = `${Math.floor(s.status / 100)}xx`;
  e.statuses[cls] = (e.statuses[cls] ?? 0) + 1;
  e.hits++;
  e.first_seen = Math.min(e.first_seen, s.time);
  if (s.time >= e.last_seen) {
    e.last_seen = s.time;
    e.example_path = s.path;
  }
  addNames(e.query_params, s.queryNames, MAX_NAMES);
  addNames(e.body_params, s.bodyNames, MAX_NAMES);
  if (s.contentType !== "") addNames(e.content_types, [s.contentType], MAX_TYPES);
}

/** Adds `from`'s statistics to `into`'s. */
export function mergeStats(into: EndpointStats, from: EndpointStats): void {
  for (const [m, n] of Object.entries(from.methods)) into.methods[m] = (into.methods[m] ?? 0) + n;
  for (const [s, n] of Object.entries(from.statuses)) {
    into.statuses[s] = (into.statuses[s] ?? 0) + n;
  }
  into.hits += from.hits;
  into.first_seen = Math.min(into.first_seen, from.first_seen);
  if (from.last_seen > into.last_seen) {
    into.last_seen = from.last_seen;
    into.example_path = from.example_path;
  }
  addNames(into.query_params, from.query_params, MAX_NAMES);
  addNames(into.body_params, from.body_params, MAX_NAMES);
  addNames(into.content_types, from.content_types, MAX_TYPES);
}

/** A deep copy (the table's view and its unwritten counts never share objects). */
export function copyEndpoint<T extends EndpointStats>(e: T): T {
  return structuredClone(e);
}

/** The statistics as stored. */
export function statsJson(e: Endpoint): string {
  const { site_id: _site, template: _template, ...data } = e;
  return JSON.stringify(data);
}

const isCounts = (v: unknown): v is Record<string, number> =>
  typeof v === "object" && v !== null && !Array.isArray(v) &&
  Object.values(v).every((n) => typeof n === "number");
const isNames = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((n) => typeof n === "string");

/** Stored statistics; undefined when `json` is not one endpoint's (such a row is replaced). */
export function parseStats(json: string): EndpointStats | undefined {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null) return undefined;
  const { methods, hits, statuses, first_seen, last_seen } = v;
  const { query_params, body_params, content_types, example_path } = v;
  if (
    !isCounts(methods) || !isCounts(statuses) || typeof hits !== "number" ||
    typeof first_seen !== "number" || typeof last_seen !== "number" || !isNames(query_params) ||
    !isNames(body_params) || !isNames(content_types) || typeof example_path !== "string"
  ) return undefined;
  return {
    methods,
    hits,
    statuses,
    first_seen,
    last_seen,
    query_params,
    body_params,
    content_types,
    example_path,
  };
}

/** The stored `data` after adding `add` (JSON statistics) to `stored` (none: a new row). */
export function combineStats(stored: string | undefined, add: string): string {
  const into = stored === undefined ? undefined : parseStats(stored);
  const from = parseStats(add);
  if (into === undefined || from === undefined) return from === undefined ? stored ?? add : add;
  mergeStats(into, from);
  return JSON.stringify(into);
}
