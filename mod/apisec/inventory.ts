/**
 * The discovered API inventory. The data plane hands sampled requests to {@link Inventory.sample}
 * (a bounded buffer, nothing else on the request path); a timer drains the buffer into endpoint
 * templates and writes changed endpoints to the store in one batch, so the inventory survives
 * restarts without any SQLite work per request.
 *
 * Clustering: identifier-shaped segments become `{id}` (see `path_template.ts`); a position under
 * one parent whose distinct values pass {@link VARIETY_LIMIT} is a parameter, becomes `{param}`,
 * and the endpoints already seen under it are merged. Memory is bounded: at most `maxEndpoints`
 * endpoints (new templates beyond it are counted, not kept), a few dozen names per endpoint, and
 * a bounded table of distinct values.
 */
import type { ApiSecEndpointsRepo, EndpointRow } from "../../db/apisec_endpoints_repo.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { ID, isIdSegment, isPlaceholder, PARAM } from "./path_template.ts";

/** Distinct values at one position beyond which the position is a parameter. */
export const VARIETY_LIMIT = 50;
const MAX_NAMES = 50;
const MAX_TYPES = 10;
const BUFFER_LIMIT = 10_000;
const VARIETY_KEYS_LIMIT = 50_000;
const FLUSH_EVERY_MS = 30_000;
const DRAIN_EVERY_MS = 2_000;
/**
 * Buffered samples that bring the drain forward (to the next macrotask, still off the request
 * path): samples then die young instead of surviving into the old generation under heavy traffic.
 */
const EAGER_DRAIN = 512;
/** Paths whose template is remembered (cleared whole when full or when clustering changes). */
const TEMPLATE_CACHE_LIMIT = 4096;

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

export interface InventoryOptions {
  readonly repo: ApiSecEndpointsRepo;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxEndpoints?: number;
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

export function createInventory(o: InventoryOptions) {
  const maxEndpoints = o.maxEndpoints ?? 10_000;
  const endpoints = new Map<string, Endpoint>();
  /** `site \0 parent template` -> distinct literal child segments seen. */
  const variety = new Map<string, Set<string>>();
  /** Parents whose child position is a parameter. */
  const variable = new Set<string>();
  let buffer: Sample[] = [];
  const dirty = new Set<string>();
  const gone = new Map<string, { site_id: string; template: string }>();
  let overflow = 0;
  let dropped = 0;
  let lastFlush = o.clock.now();
  let timer: ReturnType<typeof setInterval> | undefined;
  let eager: ReturnType<typeof setTimeout> | undefined;
  /** `site \0 path` -> its template under the clustering in force. */
  const templates = new Map<string, string>();

  for (const row of o.repo.load(maxEndpoints)) {
    const e = { ...JSON.parse(row.data) as Endpoint, site_id: row.site_id, template: row.template };
    endpoints.set(keyOf(row.site_id, row.template), e);
    const segs = row.template.split("/");
    for (let i = 1; i < segs.length; i++) {
      if (segs[i] === PARAM) variable.add(keyOf(row.site_id, segs.slice(0, i).join("/")));
    }
  }

  /** Merges the endpoints under `parent`'s literal children into `parent/{param}/...`. */
  function collapse(site: string, parent: string): void {
    templates.clear();
    const depth = parent === "" ? 1 : parent.split("/").length;
    for (const [k, e] of [...endpoints]) {
      if (e.site_id !== site || !e.template.startsWith(`${parent}/`)) continue;
      const segs = e.template.split("/");
      if (isPlaceholder(segs[depth] ?? PARAM)) continue;
      segs[depth] = PARAM;
      const template = segs.join("/");
      endpoints.delete(k);
      dirty.delete(k);
      gone.set(k, { site_id: site, template: e.template });
      const target = endpoints.get(keyOf(site, template));
      if (target) merge(target, e);
      else endpoints.set(keyOf(site, template), { ...e, template });
      dirty.add(keyOf(site, template));
      gone.delete(keyOf(site, template));
    }
  }

  function templateOf(site: string, path: string): string {
    const segs = path.split("/");
    let out = "";
    for (let i = 1; i < segs.length; i++) {
      const seg = segs[i]!;
      const parent = out;
      let t = seg;
      if (seg !== "" && isIdSegment(seg)) t = ID;
      else if (seg !== "" && variable.has(keyOf(site, parent))) t = PARAM;
      else if (seg !== "") {
        const vk = keyOf(site, parent);
        let seen = variety.get(vk);
        if (!seen) {
          if (variety.size >= VARIETY_KEYS_LIMIT) {
            variety.clear();
            templates.clear();
          }
          seen = new Set();
          variety.set(vk, seen);
        }
        if (seen.size <= VARIETY_LIMIT) seen.add(seg);
        if (seen.size > VARIETY_LIMIT) {
          variable.add(vk);
          variety.delete(vk);
          collapse(site, parent);
          t = PARAM;
        }
      }
      out += `/${t}`;
    }
    return out === "" ? "/" : out;
  }

  /** {@link templateOf}, remembered per path (a repeated path teaches clustering nothing new). */
  function cachedTemplate(site: string, path: string): string {
    const k = keyOf(site, path);
    let t = templates.get(k);
    if (t === undefined) {
      t = templateOf(site, path);
      if (templates.size >= TEMPLATE_CACHE_LIMIT) templates.clear();
      templates.set(k, t);
    }
    return t;
  }

  function add(s: Sample): void {
    const template = cachedTemplate(s.siteId, s.path);
    const k = keyOf(s.siteId, template);
    let e = endpoints.get(k);
    if (!e) {
      if (endpoints.size >= maxEndpoints) {
        overflow++;
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
      endpoints.set(k, e);
      gone.delete(k);
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
    dirty.add(k);
  }

  const inventory = {
    /** Called by the data plane per sampled request: a bounded push, nothing more. */
    sample(s: Sample): void {
      if (buffer.length >= BUFFER_LIMIT) {
        dropped++;
        return;
      }
      buffer.push(s);
      if (buffer.length >= EAGER_DRAIN && timer !== undefined && eager === undefined) {
        eager = setTimeout(() => {
          eager = undefined;
          inventory.drain();
        }, 0);
      }
    },

    /** Clusters the buffered samples into the endpoints. */
    drain(): void {
      const batch = buffer;
      buffer = [];
      for (const s of batch) add(s);
    },

    /** Writes the changed endpoints in one transaction. */
    flush(): void {
      inventory.drain();
      lastFlush = o.clock.now();
      if (dirty.size === 0 && gone.size === 0) return;
      const rows: EndpointRow[] = [];
      for (const k of dirty) {
        const e = endpoints.get(k);
        if (!e) continue;
        const { site_id, template, ...data } = e;
        rows.push({ site_id, template, data: JSON.stringify(data), last_seen: e.last_seen });
      }
      try {
        o.repo.write(rows, [...gone.values()]);
        dirty.clear();
        gone.clear();
      } catch (err) {
        o.logger.error("API inventory not stored; it is retried at the next flush", {
          error: err as Error,
        });
      }
    },

    /** Every endpoint (after draining the buffer). */
    endpoints(): readonly Endpoint[] {
      inventory.drain();
      return [...endpoints.values()];
    },

    /** Counters of what the bounds left out. */
    stats: () => ({ endpoints: endpoints.size, overflow, dropped, buffered: buffer.length }),

    /** Forgets every endpoint, in memory and in the store. */
    clear(): void {
      buffer = [];
      endpoints.clear();
      templates.clear();
      variety.clear();
      variable.clear();
      dirty.clear();
      gone.clear();
      o.repo.clear();
    },

    start(): void {
      timer ??= setInterval(() => {
        inventory.drain();
        if (o.clock.now() - lastFlush >= FLUSH_EVERY_MS) inventory.flush();
      }, DRAIN_EVERY_MS);
    },

    stop(): void {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      if (eager !== undefined) clearTimeout(eager);
      eager = undefined;
      inventory.flush();
    },
  };
  return inventory;
}

export type Inventory = ReturnType<typeof createInventory>;
