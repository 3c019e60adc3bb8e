/**
 * The discovered endpoints in memory, and the clustering of sampled paths into their templates.
 * Identifier-shaped segments become `{id}` (see `path_template.ts`); a position under one parent
 * whose distinct values pass {@link VARIETY_LIMIT} is a parameter, becomes `{param}`, and the
 * endpoints already seen under it are merged. Memory is bounded: at most `maxEndpoints`
 * endpoints (new templates beyond it are counted, not kept), a few dozen names per endpoint, and
 * a bounded table of distinct values. The table remembers what changed since it was last stored.
 */
import type { EndpointRow } from "../../db/apisec_endpoints_repo.ts";
import { ID, isIdSegment, isPlaceholder, PARAM } from "./path_template.ts";

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

/** Distinct values at one position beyond which the position is a parameter. */
export const VARIETY_LIMIT = 50;
const MAX_NAMES = 50;
const MAX_TYPES = 10;
const VARIETY_KEYS_LIMIT = 50_000;
/** Paths whose template is remembered (cleared whole when full or when clustering changes). */
const TEMPLATE_CACHE_LIMIT = 4096;

/** An endpoint the store no longer holds under this template (it was merged into another). */
export interface GoneEndpoint {
  readonly site_id: string;
  readonly template: string;
}

const keyOf = (site: string, template: string) => `${site}\u0000${template}`;

function addNames(into: string[], names: readonly string[], max: number): void {
  for (const n of names) if (into.length < max && !into.includes(n)) into.push(n);
}

function merge(into: Endpoint, from: Endpoint): void {
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

/** The endpoints by site and template, what changed since the last write, and the clustering. */
export class EndpointTable {
  readonly #max: number;
  readonly #endpoints = new Map<string, Endpoint>();
  /** `site \0 parent template` -> distinct literal child segments seen. */
  readonly #variety = new Map<string, Set<string>>();
  /** Parents whose child position is a parameter. */
  readonly #variable = new Set<string>();
  /** `site \0 path` -> its template under the clustering in force. */
  readonly #templates = new Map<string, string>();
  readonly #dirty = new Set<string>();
  readonly #gone = new Map<string, GoneEndpoint>();
  #overflow = 0;

  /** A table of at most `maxEndpoints`, holding the stored `rows` to begin with. */
  constructor(maxEndpoints: number, rows: Iterable<EndpointRow>) {
    this.#max = maxEndpoints;
    for (const row of rows) {
      const e = {
        ...JSON.parse(row.data) as Endpoint,
        site_id: row.site_id,
        template: row.template,
      };
      this.#endpoints.set(keyOf(row.site_id, row.template), e);
      const segs = row.template.split("/");
      for (let i = 1; i < segs.length; i++) {
        if (segs[i] === PARAM) this.#variable.add(keyOf(row.site_id, segs.slice(0, i).join("/")));
      }
    }
  }

  /** How many endpoints are kept. */
  get size(): number {
    return this.#endpoints.size;
  }

  /** New templates not kept because the table was full. */
  get overflow(): number {
    return this.#overflow;
  }

  /** Every endpoint kept. */
  values(): Endpoint[] {
    return [...this.#endpoints.values()];
  }

  /** Counts one sampled request into the endpoint of its template. */
  add(s: Sample): void {
    const template = this.#cachedTemplate(s.siteId, s.path);
    const k = keyOf(s.siteId, template);
    let e = this.#endpoints.get(k);
    if (!e) {
      if (this.#endpoints.size >= this.#max) {
        this.#overflow++;
        return;
      }
      e = {
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
      this.#endpoints.set(k, e);
      this.#gone.delete(k);
    }
    e.methods[s.method] = (e.methods[s.method] ?? 0) + 1;
    const cls = `${Math.floor(s.status / 100)}xx`;
    e.statuses[cls] = (e.statuses[cls] ?? 0) + 1;
    e.hits++;
    if (s.time >= e.last_seen) {
      e.last_seen = s.time;
      e.example_path = s.path;
    }
    addNames(e.query_params, s.queryNames, MAX_NAMES);
    addNames(e.body_params, s.bodyNames, MAX_NAMES);
    if (s.contentType !== "") addNames(e.content_types, [s.contentType], MAX_TYPES);
    this.#dirty.add(k);
  }

  /** The rows to write and the templates to delete since the last write; undefined: none. */
  changes(): { rows: EndpointRow[]; gone: GoneEndpoint[] } | undefined {
    if (this.#dirty.size === 0 && this.#gone.size === 0) return undefined;
    const rows: EndpointRow[] = [];
    for (const k of this.#dirty) {
      const e = this.#endpoints.get(k);
      if (!e) continue;
      const { site_id, template, ...data } = e;
      rows.push({ site_id, template, data: JSON.stringify(data), last_seen: e.last_seen });
    }
    return { rows, gone: [...this.#gone.values()] };
  }

  /** The last {@link changes} are stored. */
  written(): void {
    this.#dirty.clear();
    this.#gone.clear();
  }

  /** Forgets every endpoint and what the clustering learnt. */
  clear(): void {
    this.#endpoints.clear();
    this.#templates.clear();
    this.#variety.clear();
    this.#variable.clear();
    this.#dirty.clear();
    this.#gone.clear();
  }

  /** {@link #templateOf}, remembered per path (a repeated path teaches clustering nothing new). */
  #cachedTemplate(site: string, path: string): string {
    const k = keyOf(site, path);
    let t = this.#templates.get(k);
    if (t === undefined) {
      t = this.#templateOf(site, path);
      if (this.#templates.size >= TEMPLATE_CACHE_LIMIT) this.#templates.clear();
      this.#templates.set(k, t);
    }
    return t;
  }

  #templateOf(site: string, path: string): string {
    const segs = path.split("/");
    let out = "";
    for (let i = 1; i < segs.length; i++) {
      const seg = segs[i]!;
      const parent = out;
      let t = seg;
      if (seg !== "" && isIdSegment(seg)) t = ID;
      else if (seg !== "" && this.#variable.has(keyOf(site, parent))) t = PARAM;
      else if (seg !== "" && this.#learn(site, parent, seg)) t = PARAM;
      out += `/${t}`;
    }
    return out === "" ? "/" : out;
  }

  /** Counts `seg` as a value under `parent`; true when that makes the position a parameter. */
  #learn(site: string, parent: string, seg: string): boolean {
    const vk = keyOf(site, parent);
    let seen = this.#variety.get(vk);
    if (!seen) {
      if (this.#variety.size >= VARIETY_KEYS_LIMIT) {
        this.#variety.clear();
        this.#templates.clear();
      }
      seen = new Set();
      this.#variety.set(vk, seen);
    }
    if (seen.size <= VARIETY_LIMIT) seen.add(seg);
    if (seen.size <= VARIETY_LIMIT) return false;
    this.#variable.add(vk);
    this.#variety.delete(vk);
    this.#collapse(site, parent);
    return true;
  }

  /** Merges the endpoints under `parent`'s literal children into `parent/{param}/...`. */
  #collapse(site: string, parent: string): void {
    this.#templates.clear();
    const depth = parent === "" ? 1 : parent.split("/").length;
    for (const [k, e] of [...this.#endpoints]) {
      if (e.site_id !== site || !e.template.startsWith(`${parent}/`)) continue;
      const segs = e.template.split("/");
      if (isPlaceholder(segs[depth] ?? PARAM)) continue;
      segs[depth] = PARAM;
      const template = segs.join("/");
      this.#endpoints.delete(k);
      this.#dirty.delete(k);
      this.#gone.set(k, { site_id: site, template: e.template });
      const target = this.#endpoints.get(keyOf(site, template));
      if (target) merge(target, e);
      else this.#endpoints.set(keyOf(site, template), { ...e, template });
      this.#dirty.add(keyOf(site, template));
      this.#gone.delete(keyOf(site, template));
    }
  }
}
