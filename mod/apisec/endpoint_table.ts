/**
 * The discovered endpoints in memory, and the clustering of sampled paths into their templates.
 * Identifier-shaped segments become `{id}` (see `path_template.ts`); a position under one parent
 * whose distinct values pass {@link VARIETY_LIMIT} is a parameter, becomes `{param}`, and the
 * endpoints already seen under it are merged. Memory is bounded: at most `maxEndpoints`
 * endpoints (new templates beyond it are counted, not kept), a few dozen names per endpoint, and
 * a bounded table of distinct values.
 *
 * The table holds two things per endpoint: its view (the deployment's statistics as last read
 * from the store, plus what was counted here since) and what was counted here since the last
 * write (the delta). A write adds the deltas to the stored rows (`combineStats`) and first folds
 * the stored rows of merged-away templates into their new ones, so controllers sharing one store
 * add up instead of overwriting each other; a failed write keeps the deltas for the next one.
 */
import type { EndpointRow } from "../../db/apisec_endpoints_repo.ts";
import { ID, isIdSegment, isPlaceholder, PARAM } from "./path_template.ts";
import {
  blankEndpoint,
  copyEndpoint,
  countSample,
  type Endpoint,
  mergeStats,
  parseStats,
  type Sample,
  statsJson,
} from "./endpoint_stats.ts";

export type { Endpoint, Sample };

/** Distinct values at one position beyond which the position is a parameter. */
export const VARIETY_LIMIT = 50;
const VARIETY_KEYS_LIMIT = 50_000;
/** Paths whose template is remembered (cleared whole when full or when clustering changes). */
const TEMPLATE_CACHE_LIMIT = 4096;

/**
 * A template merged into another: its stored row is folded into `into`'s and deleted. Folding is
 * idempotent (the row is gone after the first time), so a retried write counts it once.
 */
export interface GoneEndpoint {
  readonly site_id: string;
  readonly template: string;
  readonly into: string;
}

const keyOf = (site: string, template: string) => `${site}\u0000${template}`;

/** Moves `e` (keyed `k` in `map`) to `template`, adding it to an endpoint already there. */
function rekey(map: Map<string, Endpoint>, k: string, e: Endpoint, template: string): void {
  map.delete(k);
  const nk = keyOf(e.site_id, template);
  const target = map.get(nk);
  if (target) mergeStats(target, e);
  else map.set(nk, { ...e, template });
}

/** The endpoints by site and template, what was counted since the last write, the clustering. */
export class EndpointTable {
  readonly #max: number;
  /** The view: the stored statistics as last read, plus what was counted here since. */
  readonly #endpoints = new Map<string, Endpoint>();
  /** What was counted here since the last successful write (no objects shared with the view). */
  readonly #pending = new Map<string, Endpoint>();
  /** Templates merged away since the last successful write, in the order it happened. */
  readonly #gone = new Map<string, GoneEndpoint>();
  /** `site \0 parent template` -> distinct literal child segments seen. */
  readonly #variety = new Map<string, Set<string>>();
  /** Parents whose child position is a parameter. */
  readonly #variable = new Set<string>();
  /** `site \0 path` -> its template under the clustering in force. */
  readonly #templates = new Map<string, string>();
  #overflow = 0;

  /** A table of at most `maxEndpoints`, holding the stored `rows` to begin with. */
  constructor(maxEndpoints: number, rows: Iterable<EndpointRow>) {
    this.#max = maxEndpoints;
    this.refresh(rows);
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
      e = blankEndpoint(s, template);
      this.#endpoints.set(k, e);
    }
    countSample(e, s);
    let d = this.#pending.get(k);
    if (!d) {
      d = blankEndpoint(s, template);
      this.#pending.set(k, d);
    }
    countSample(d, s);
  }

  /**
   * What to write since the last write: `gone`, the merged-away templates to fold first (in
   * order), and `rows`, the deltas to add to the stored rows; undefined: nothing.
   */
  changes(): { rows: EndpointRow[]; gone: GoneEndpoint[] } | undefined {
    if (this.#pending.size === 0 && this.#gone.size === 0) return undefined;
    const rows: EndpointRow[] = [];
    for (const d of this.#pending.values()) {
      rows.push({
        site_id: d.site_id,
        template: d.template,
        data: statsJson(d),
        last_seen: d.last_seen,
      });
    }
    return { rows, gone: [...this.#gone.values()] };
  }

  /** The last {@link changes} are stored. */
  written(): void {
    this.#pending.clear();
    this.#gone.clear();
  }

  /**
   * Replaces the view with the stored `rows` (the deployment's inventory) plus what was counted
   * here and not yet written. Positions the rows hold as `{param}` are parameters here too, and
   * rows with a literal under one (another controller's older clustering) merge into their
   * template here, and in the store at the next write.
   */
  refresh(rows: Iterable<EndpointRow>): void {
    this.#endpoints.clear();
    let learnt = false;
    for (const row of rows) {
      const stats = parseStats(row.data);
      if (stats === undefined) continue;
      const k = keyOf(row.site_id, row.template);
      this.#endpoints.set(k, { site_id: row.site_id, template: row.template, ...stats });
      const segs = row.template.split("/");
      for (let i = 1; i < segs.length; i++) {
        if (segs[i] !== PARAM) continue;
        const parent = keyOf(row.site_id, segs.slice(0, i).join("/"));
        if (this.#variable.has(parent)) continue;
        this.#variable.add(parent);
        learnt = true;
      }
    }
    if (learnt) this.#templates.clear();
    this.#settle(undefined, "");
    for (const [k, d] of this.#pending) {
      const e = this.#endpoints.get(k);
      if (e) mergeStats(e, d);
      else this.#endpoints.set(k, copyEndpoint(d));
    }
  }

  /** Forgets every endpoint and what the clustering learnt. */
  clear(): void {
    this.#endpoints.clear();
    this.#pending.clear();
    this.#gone.clear();
    this.#templates.clear();
    this.#variety.clear();
    this.#variable.clear();
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

  /** A template under the clustering in force: literals under a parameter parent become one. */
  #canonical(site: string, template: string): string {
    const segs = template.split("/");
    let out = "";
    for (let i = 1; i < segs.length; i++) {
      const seg = segs[i]!;
      const literal = seg !== "" && !isPlaceholder(seg);
      out += `/${literal && this.#variable.has(keyOf(site, out)) ? PARAM : seg}`;
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
    this.#templates.clear();
    this.#settle(site, parent);
    return true;
  }

  /**
   * Merges every endpoint (of `site`, under `parent`; undefined: all) whose template the
   * clustering in force no longer gives into the one it gives, in the view and in the deltas,
   * and remembers the merge for the store.
   */
  #settle(site: string | undefined, parent: string): void {
    const prefix = `${parent}/`;
    for (const map of [this.#endpoints, this.#pending]) {
      for (const [k, e] of [...map]) {
        if (site !== undefined && (e.site_id !== site || !e.template.startsWith(prefix))) continue;
        const template = this.#canonical(e.site_id, e.template);
        if (template === e.template) continue;
        rekey(map, k, e, template);
        const gk = `${k}\u0000${template}`;
        if (!this.#gone.has(gk)) {
          this.#gone.set(gk, { site_id: e.site_id, template: e.template, into: template });
        }
      }
    }
  }
}
