/**
 * The data plane's per-site counters: requests by action and status class, blocks by class,
 * request, upstream and inspection latency histograms. Each compiled site holds its counters
 * (resolved once when the policy is compiled, by site id, so they survive policy swaps), and the
 * transaction's one exit adds to them: a few typed-array increments, no label string and no
 * allocation per request. Monitoring (Prometheus, the per-minute rollups) reads them off the
 * request path.
 */
import { Histogram, INSPECTION_BOUNDS_US, LATENCY_BOUNDS_US } from "../core/histogram.ts";
import type { AccessRecord, Action } from "../access_log/record.ts";
import { recordClass } from "../access_log/record_class.ts";

export const ACTIONS: readonly Action[] = ["pass", "block", "log", "challenge"];
/** `1xx` .. `5xx`; index = first digit - 1 (other statuses count as 5xx). */
export const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;
const NSTATUS = STATUS_CLASSES.length;
const BLOCK = 1;

/**
 * Names of what blocked a request: the check (`ip_list`, `acl`, `bot`, `rate_limit`, ...) or,
 * for the semantic engine, the attack class (`sqli`, `xss`, ...). Names come from the code, not
 * from requests, so the table stays small; past its size everything counts as `other`.
 */
const MAX_BLOCK_CLASSES = 64;
const blockClassIndex = new Map<string, number>();
export const BLOCK_CLASSES: string[] = [];

export function blockClassId(name: string): number {
  let i = blockClassIndex.get(name);
  if (i !== undefined) return i;
  if (BLOCK_CLASSES.length >= MAX_BLOCK_CLASSES - 1) return blockClassId("other");
  i = BLOCK_CLASSES.length;
  BLOCK_CLASSES.push(name);
  blockClassIndex.set(name, i);
  return i;
}
blockClassId("other");

/**
 * The class of a blocked request: the engine's attack class, otherwise the deciding check; the
 * attack log names it by the same function (`recordClass`).
 */
export function blockClassOf(record: AccessRecord): string {
  return recordClass(record) ?? "other";
}

function actionIndex(action: Action): number {
  switch (action) {
    case "pass":
      return 0;
    case "block":
      return 1;
    case "log":
      return 2;
    default:
      return 3;
  }
}

export class SiteCounters {
  readonly id: string;
  name: string;
  /** `ACTIONS.length` x `STATUS_CLASSES.length`, row per action. */
  readonly requests = new Float64Array(ACTIONS.length * NSTATUS);
  /** Indexed by {@link blockClassId}. */
  readonly blocks = new Float64Array(MAX_BLOCK_CLASSES);
  readonly latency = new Histogram(LATENCY_BOUNDS_US);
  readonly upstreamLatency = new Histogram(LATENCY_BOUNDS_US);
  readonly inspection = new Histogram(INSPECTION_BOUNDS_US);

  constructor(id: string, name: string) {
    this.id = id;
    this.name = name;
  }

  /** Counts one finished request (the transaction's exit). */
  count(record: AccessRecord, totalUs: number, upstreamUs: number | null): void {
    const a = actionIndex(record.action);
    let sc = ((record.status / 100) | 0) - 1;
    if (sc < 0 || sc >= NSTATUS) sc = NSTATUS - 1;
    this.requests[a * NSTATUS + sc]!++;
    this.latency.observe(totalUs);
    if (upstreamUs !== null) this.upstreamLatency.observe(upstreamUs);
    if (a === BLOCK) this.blocks[blockClassId(blockClassOf(record))]!++;
  }
}

/** Counters of every site seen, by id, plus those of requests that matched no site. */
export class SiteCounterSet {
  readonly #byId = new Map<string, SiteCounters>();
  /** Requests whose host matched no site. */
  readonly none = new SiteCounters("", "");

  /** The counters of a site (created at its first compile; the name follows renames). */
  forSite(id: string, name: string): SiteCounters {
    let c = this.#byId.get(id);
    if (c === undefined) {
      c = new SiteCounters(id, name);
      this.#byId.set(id, c);
    }
    c.name = name;
    return c;
  }

  /** Every site's counters, then those of unmatched requests. */
  *all(): Iterable<SiteCounters> {
    yield* this.#byId.values();
    yield this.none;
  }
}

/**
 * What one site's counters gained since the last {@link takeCounts}: a data-plane worker counts
 * in its own set (the transaction's exit, as on the main thread) and sends these with its
 * access-log records, so the main thread adds a few arrays per site and batch instead of
 * counting every record again. Block classes go by name: their numbers are per thread.
 */
export interface CountsDelta {
  readonly id: string;
  readonly name: string;
  readonly requests: Float64Array;
  readonly blocks: ReadonlyArray<readonly [string, number]>;
  readonly latency: Float64Array;
  readonly upstreamLatency: Float64Array;
  readonly inspection: Float64Array;
}

/** Takes what every site counted since the last call, and zeroes it (a worker's side). */
export function takeCounts(set: SiteCounterSet): CountsDelta[] {
  const out: CountsDelta[] = [];
  for (const c of set.all()) {
    // Every counted request observes its latency; inspection alone comes from the engine.
    if (c.latency.count === 0 && c.inspection.count === 0) continue;
    const blocks: Array<readonly [string, number]> = [];
    for (let i = 0; i < c.blocks.length; i++) {
      if (c.blocks[i]! > 0) blocks.push([BLOCK_CLASSES[i]!, c.blocks[i]!]);
    }
    out.push({
      id: c.id,
      name: c.name,
      requests: c.requests.slice(),
      blocks,
      latency: c.latency.values.slice(),
      upstreamLatency: c.upstreamLatency.values.slice(),
      inspection: c.inspection.values.slice(),
    });
    c.requests.fill(0);
    c.blocks.fill(0);
    c.latency.values.fill(0);
    c.upstreamLatency.values.fill(0);
    c.inspection.values.fill(0);
  }
  return out;
}

function addInto(into: Float64Array, from: Float64Array): void {
  for (let i = 0; i < into.length && i < from.length; i++) into[i]! += from[i]!;
}

/** Adds a worker's {@link takeCounts} to the process's counters (the main thread's side). */
export function addCounts(set: SiteCounterSet, deltas: readonly CountsDelta[]): void {
  for (const d of deltas) {
    const c = d.id === "" ? set.none : set.forSite(d.id, d.name);
    addInto(c.requests, d.requests);
    for (const [name, n] of d.blocks) c.blocks[blockClassId(name)]! += n;
    addInto(c.latency.values, d.latency);
    addInto(c.upstreamLatency.values, d.upstreamLatency);
    addInto(c.inspection.values, d.inspection);
  }
}
