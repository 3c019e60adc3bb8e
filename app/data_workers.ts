/**
 * The data plane on every core (`server.data.workers` > 1): the main thread keeps the
 * management plane, the store and its writer, the scheduler and the single services, and runs N
 * worker threads (`app/data_worker.ts`) that each serve the data-plane Hono app on the same
 * HTTP and HTTPS ports (`reusePort`: the kernel spreads connections over them).
 *
 * - Policy: every swap on the main thread sends the build's snapshot to each worker, which
 *   compiles and swaps it, then acknowledges the version. The data plane is ready only while
 *   every live worker has acknowledged the main thread's current version.
 * - Exact shared state: rate-limit counters and used puzzle nonces in `SharedArrayBuffer`
 *   tables (`mod/data_plane/shared_state.ts`); one challenge secret for all workers.
 * - One owner on the main thread, fed by messages a request never waits for: access-log
 *   records (the one writer; monitoring counts them here), ALAP observations, API discovery
 *   samples, upstream health, log lines. The edge cache is per worker (purges go to all).
 * - A worker that crashes is logged and restarted (its shared-memory locks released first);
 *   shutdown drains every worker.
 */
import { type Config, ConfigProblemError } from "../mod/config/config.ts";
import type { LogFields, Logger, LogLevel } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import type { AccessRecord } from "../mod/data_plane/access_record.ts";
import { type SiteUpstreamHealth, upstreamOf } from "../mod/data_plane/policy.ts";
import {
  deltaOf,
  type PolicySnapshot,
  type SnapshotDelta,
} from "../mod/data_plane/policy_snapshot.ts";
import {
  addCounts,
  type CountsDelta,
  type SiteCounterSet,
} from "../mod/data_plane/site_counters.ts";
import { withoutSiteKeys } from "../mod/data_plane/site_keys.ts";
import {
  allocateSharedState,
  openSharedState,
  type SharedState,
  type SharedStateBuffers,
} from "../mod/data_plane/shared_state.ts";
import { healthOrderBuffer, type Upstream } from "../mod/data_plane/upstream_pool.ts";
import { createUpstreamMirror } from "../mod/data_plane/upstream_mirror.ts";
import type { Inspection } from "../engine/types.ts";
import type { AlapPolicyDoc } from "../mod/protection/protection_schema.ts";
import type { Sample } from "../mod/apisec/inventory.ts";
import { createEdgeCache, type EdgeCache } from "../mod/protection/edge_cache.ts";
import type { DataPlane } from "./data_plane.ts";
import type { AcmeChallenges } from "../mod/data_plane/acme_challenges.ts";
import type { Exposition } from "../mod/monitor/exposition.ts";
import { dataWorkerCount, parseListen } from "../mod/config/config_schema.ts";
import { type Listener, listenerError } from "../routes/listen.ts";
import {
  CLOSE_REASONS,
  type ListenerConnections,
  REFUSE_REASONS,
} from "../mod/core/connection_stats.ts";

/** What a worker needs to start. */
export interface WorkerInit {
  /** 1..N; also the owner id of the shared-memory locks it holds. */
  readonly index: number;
  readonly config: Config;
  readonly dataDir: string;
  readonly shared: SharedStateBuffers;
  /** The process's order of upstream health events (`healthOrderBuffer`). */
  readonly healthOrder: SharedArrayBuffer;
  readonly challengeSecret: Uint8Array;
  readonly snapshot: PolicySnapshot;
  /** Pending ACME HTTP-01 answers: [host, token, key authorisation]. */
  readonly acme: ReadonlyArray<readonly [string, string, string]>;
  readonly http: { readonly hostname: string; readonly port: number };
  readonly https?: { readonly hostname: string; readonly port: number };
  /** Workers sharing the ports: each front takes its share of the connection caps. */
  readonly workers: number;
}

export type ToWorker =
  | { readonly t: "init"; readonly init: WorkerInit }
  | { readonly t: "policy"; readonly delta: SnapshotDelta }
  | {
    readonly t: "purge";
    /** Answered with `purged` and this id (0: nobody waits for the answer). */
    readonly id: number;
    readonly siteId: string | null;
    readonly pathPrefix: string | null;
  }
  | { readonly t: "drain" }
  | { readonly t: "flush"; readonly id: number }
  | { readonly t: "crash" }
  | { readonly t: "stall"; readonly ms: number }
  | {
    readonly t: "acme";
    readonly host: string;
    readonly token: string;
    /** The key authorisation to answer, or null when the token is withdrawn. */
    readonly answer: string | null;
  };

type CacheStats = ReturnType<EdgeCache["stats"]>;
export type UpstreamOk = readonly [
  siteId: string,
  origin: string,
  lastOkAt: number,
  /** Its stamp in the process's order of health events (`healthOrder`). */
  okSeq: number,
];
export type AlapArgs = [string, string, string, Inspection, AlapPolicyDoc];

export type FromWorker =
  | { readonly t: "ack"; readonly version: number }
  | {
    readonly t: "records";
    /** The batch's access-log rows as text (`db/access_log_lines.ts`). */
    readonly lines: string;
    readonly count: number;
    /** The records the main thread's events and realtime feed see (`isEventRecord`). */
    readonly events: AccessRecord[];
    /** What the batch's requests added to the site counters. */
    readonly counts: CountsDelta[];
    /** ALAP observations (requests with findings) and API-discovery samples, in order. */
    readonly alap: AlapArgs[];
    readonly samples: Sample[];
  }
  | {
    readonly t: "upstream";
    readonly site: { readonly id: string; readonly name: string };
    readonly upstream: {
      readonly origin: string;
      readonly failures: number;
      readonly downUntil: number;
    };
    readonly event: "down" | "failure" | "up";
    /**
     * Where it falls in the process's order of health events, not the wall clock
     * (`healthOrder`; the main thread merges reports by it, `upstream_mirror.ts`).
     */
    readonly seq: number;
  }
  /** Upstreams that answered since the last report: the last answer's time and stamp. */
  | { readonly t: "upstream_ok"; readonly oks: readonly UpstreamOk[] }
  | { readonly t: "log"; readonly level: LogLevel; readonly message: string; fields: LogFields }
  | { readonly t: "cache"; readonly stats: CacheStats }
  | { readonly t: "connections"; readonly stats: ListenerConnections }
  | { readonly t: "failed"; readonly error: string }
  | { readonly t: "flushed"; readonly id: number }
  | { readonly t: "purged"; readonly id: number; readonly count: number }
  | { readonly t: "drained" };

/** One worker slot: its thread (replaced on restart) and what it acknowledged. */
interface Slot {
  readonly index: number;
  worker: Worker;
  /** Policy version the worker enforces (0 until it listens). */
  version: number;
  /** Serving: listening and not crashed. */
  live: boolean;
  cache: CacheStats | undefined;
  /** Its connection front's counters as last reported (added to the process's). */
  connections: ListenerConnections | undefined;
  /** Requests it finished (from the records it sent); tests and measurements read it. */
  requests: number;
  restarts: number;
  /** Failed attempts to start it again after a crash (each one logged). */
  restartFailures: number;
  /** The timer of the next attempt while a restart failed (the slot serves nothing meanwhile). */
  retry?: ReturnType<typeof setTimeout>;
  drained?: () => void;
}

export interface DataWorkersOptions {
  readonly count: number;
  readonly config: Config;
  readonly dataDir: string;
  readonly logger: Logger;
  readonly random: Random;
  /** The measured clock offset (`time.apply_offset`), published to the workers every second. */
  readonly timeOffsetMs?: () => number;
}

export interface DataWorkerPool {
  readonly count: number;
  /** The edge cache the management routes see: purges reach every worker. */
  readonly edgeCache: EdgeCache;
  /** The ACME HTTP-01 answers the issuer adds and removes: every worker serves them. */
  readonly acmeChallenges: AcmeChallenges;
  /** Resolves once every serving worker has sent the records it holds (at most 1 s). */
  flush(): Promise<void>;
  /** Starts the workers on the given ports (resolved by the caller); resolves once all listen. */
  start(wiring: PoolWiring): Promise<void>;
  /** True while every worker enforces the main thread's current policy. */
  current(): boolean;
  /** Per worker: index, serving or not, policy version, requests served, restarts. */
  status(): Array<
    { index: number; live: boolean; version: number; requests: number; restarts: number }
  >;
  /** Test hook: makes worker `index` (1..N) throw an uncaught error. */
  crash(index: number): void;
  /** Test hook: terminates worker `index`'s thread outright (it is restarted like a crash). */
  kill(index: number): void;
  /** Test hook: the next `n` worker starts fail (their module does not load); 0 ends it. */
  failStarts(n: number): void;
  /** Test hook: keeps worker `index` busy for `ms` (a blocked event loop, as long work is). */
  stall(index: number, ms: number): void;
  /** Stops accepting on every worker and lets their requests finish, then ends the threads. */
  drain(): Promise<void>;
  /** Ends every thread now (after the shutdown deadline, whatever is still in flight). */
  terminate(): void;
  /** Prometheus: requests, restarts and state per worker (how evenly the kernel spreads). */
  collect(out: Exposition): void;
}

export interface PoolWiring {
  readonly dataPlane: DataPlane;
  readonly counters: SiteCounterSet;
  readonly upstreamHealth?: SiteUpstreamHealth;
  /** The process's counters of the data listener's connections (the workers' fronts add up). */
  readonly connections?: ListenerConnections;
  readonly http: { readonly hostname: string; readonly port: number };
  readonly https?: { readonly hostname: string; readonly port: number };
}

const WORKER_URL = new URL("./data_worker.ts", import.meta.url);
const START_TIMEOUT_MS = 120_000;
/** A worker module that fails to load: what {@link DataWorkerPool.failStarts} starts. */
const FAILING_URL = "data:text/javascript,throw new Error('failed to load (test hook)')";
/** Back-off between attempts to start a crashed worker again: doubles from the first to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 10_000;
/** How long a question to every worker (a purge, a record flush) waits for their answers. */
let askTimeoutMs = 1000;

/**
 * Test hook: sets how long a question to every worker waits, returning the one before. A test
 * that expects every worker to answer sets it long: on a loaded machine a worker's answer (or
 * the main thread's turn to read it, after a blocking worker start) can take past 1 s.
 */
export function setAskTimeout(ms: number): number {
  const before = askTimeoutMs;
  askTimeoutMs = ms;
  return before;
}

/** Adds what a worker's front counted since its last report (`before`) to the process's. */
function addConnections(
  into: ListenerConnections,
  before: ListenerConnections | undefined,
  now: ListenerConnections,
): void {
  into.open += now.open - (before?.open ?? 0);
  into.accepted += now.accepted - (before?.accepted ?? 0);
  into.acceptErrors += now.acceptErrors - (before?.acceptErrors ?? 0);
  for (const r of REFUSE_REASONS) into.refused[r] += now.refused[r] - (before?.refused[r] ?? 0);
  for (const r of CLOSE_REASONS) into.closed[r] += now.closed[r] - (before?.closed[r] ?? 0);
}

/**
 * The snapshot as workers get it: without the sites' private keys unless they serve the HTTPS
 * port (the only reader of a key is the HTTPS listener's certificate callback).
 */
function forWorkers(snapshot: PolicySnapshot, w: PoolWiring): PolicySnapshot {
  return w.https ? snapshot : { ...snapshot, sites: withoutSiteKeys(snapshot.sites) };
}

export function createDataWorkerPool(options: DataWorkersOptions): DataWorkerPool {
  const { count, logger } = options;
  const buffers = allocateSharedState();
  const shared: SharedState = openSharedState(buffers, 0);
  const challengeSecret = options.random.bytes(32);
  const slots: Slot[] = [];
  let wiring: PoolWiring | undefined;
  let stopping = false;
  let publishing: ReturnType<typeof setInterval> | undefined;
  let draining: Promise<void> | undefined;
  let failingStarts = 0;

  // The routes' edge cache: purges go to every worker (the API's count adds up their answers);
  // stats add up their last reports.
  const local = createEdgeCache();
  const edgeCache: EdgeCache = {
    ...local,
    purge(siteId, pathPrefix) {
      for (const s of slots) s.worker.postMessage({ t: "purge", id: 0, siteId, pathPrefix });
      return local.purge(siteId, pathPrefix);
    },
    async purgeAll(siteId, pathPrefix) {
      const asked = await askWorkers((id) => ({ t: "purge", id, siteId, pathPrefix }));
      // A worker that did not answer in time still purges when it reads the message; only its
      // count is unknown, and the answer says so instead of being silently smaller.
      return {
        purged: asked.answers.reduce((a, b) => a + b, local.purge(siteId, pathPrefix)),
        unanswered: asked.unanswered,
      };
    },
    stats() {
      const sum = { ...local.stats() };
      for (const s of slots) {
        if (!s.cache) continue;
        sum.entries += s.cache.entries;
        sum.bytes += s.cache.bytes;
        sum.hits += s.cache.hits;
        sum.misses += s.cache.misses;
        sum.max_bytes = Math.max(sum.max_bytes, s.cache.max_bytes);
      }
      return sum;
    },
  };

  // ACME answers: kept here (a restarted worker gets them) and sent to every worker.
  const acme = new Map<string, readonly [string, string, string]>();
  const acmeKey = (host: string, token: string) => `${host} ${token}`;
  const acmeTell = (host: string, token: string, answer: string | null) => {
    for (const s of slots) {
      s.worker.postMessage({ t: "acme", host, token, answer } satisfies ToWorker);
    }
  };
  const acmeChallenges: AcmeChallenges = {
    answer: (host, token) => acme.get(acmeKey(host, token))?.[2],
    add(host, token, keyAuthorization) {
      acme.set(acmeKey(host, token), [host, token, keyAuthorization]);
      acmeTell(host, token, keyAuthorization);
    },
    remove(host, token) {
      acme.delete(acmeKey(host, token));
      acmeTell(host, token, null);
    },
    get size() {
      return acme.size;
    },
  };

  // Questions the management plane asks every worker (record flushes, cache purges): id -> a
  // worker answered (with a count, or 0).
  const answers = new Map<number, (slot: Slot, value: number) => void>();
  let askId = 0;
  /**
   * Sends `message(id)` to every worker, a starting one too: it may listen (and cache) before
   * its "listening" answer is read here, so a purge that skipped it left its entries. Resolves
   * with the answers given once every worker has answered, a starting one too (it reads every
   * message after its start message, with its real handler: a purge's answer that did not wait
   * for it said `complete` while it could still serve what the purge removed), or after 1 s with
   * the number that had not (busy). A worker ended meanwhile counts as answered with 0: its
   * cache ended with it, and its successor starts empty (`endAsks`).
   */
  function askWorkers(
    message: (id: number) => ToWorker,
  ): Promise<{ answers: number[]; unanswered: number }> {
    // A slot waiting to be started again has no thread to answer (nor a cache: its successor
    // starts empty); waiting for it made every flush and purge wait out the timeout.
    const waiting = new Set(slots.filter((s) => s.retry === undefined));
    if (waiting.size === 0) return Promise.resolve({ answers: [], unanswered: 0 });
    const id = ++askId;
    const got: number[] = [];
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        answers.delete(id);
        resolve({ answers: got, unanswered: waiting.size });
      };
      const timer = setTimeout(done, askTimeoutMs);
      answers.set(id, (slot, value) => {
        if (!waiting.delete(slot)) return;
        got.push(value);
        if (waiting.size === 0) done();
      });
      for (const s of slots) s.worker.postMessage(message(id));
      if (waiting.size === 0) done();
    });
  }

  async function flush(): Promise<void> {
    await askWorkers((id) => ({ t: "flush", id }));
  }

  function init(index: number, w: PoolWiring): WorkerInit {
    return {
      index,
      config: options.config,
      dataDir: options.dataDir,
      shared: buffers,
      healthOrder: healthOrderBuffer(),
      challengeSecret,
      snapshot: forWorkers(w.dataPlane.snapshot()!, w),
      acme: [...acme.values()],
      http: w.http,
      https: w.https,
      workers: options.count,
    };
  }

  /** The workers' upstream health, merged by the time of each report. */
  const mirror = createUpstreamMirror();

  function onMessage(slot: Slot, m: FromWorker, w: PoolWiring, started: (err?: Error) => void) {
    const dp = w.dataPlane;
    switch (m.t) {
      case "ack":
        slot.version = Math.max(slot.version, m.version);
        slot.live = true;
        started();
        return;
      case "records":
        slot.requests += m.count;
        addCounts(w.counters, m.counts);
        dp.accessLog.pushLines(m.lines, m.count, m.events);
        for (const args of m.alap) dp.protection.alap.observe(...args);
        for (const sample of m.samples) dp.apisec.inventory.sample(sample);
        return;
      case "upstream": {
        // Mirrored into the main thread's pool, which `waf_upstream_up` reads, merged with the
        // other workers' reports by when they happened (`upstream_mirror.ts`).
        const upstream = upstreamOf(dp.policy.current, m.site.id, m.upstream.origin);
        if (upstream === undefined) {
          w.upstreamHealth?.(m.site, m.upstream as Upstream, m.event);
        } else if (m.event === "up") {
          // Only when no other worker's later failure keeps it down.
          if (mirror.up(upstream, m.seq)) w.upstreamHealth?.(m.site, upstream, "up");
        } else {
          const { failures, downUntil } = m.upstream;
          const applied = mirror.down(upstream, slot.index, { failures, downUntil, seq: m.seq });
          // A stale failure (the upstream answered since) still counts as a failure.
          w.upstreamHealth?.(m.site, upstream, applied ? m.event : "failure");
        }
        return;
      }
      case "upstream_ok":
        for (const [siteId, origin, at, seq] of m.oks) {
          const upstream = upstreamOf(dp.policy.current, siteId, origin);
          if (upstream === undefined) continue;
          // Answered after a failure: up. The worker that failed may be gone (a restart starts
          // with a healthy pool and has no failure to recover from) or see no traffic for it,
          // and only it would have said "up".
          if (mirror.answered(upstream, at, seq)) {
            const site = dp.policy.current.sites.find((x) => x.id === siteId)!;
            w.upstreamHealth?.(site, upstream, "up");
          }
        }
        return;
      case "log":
        logger[m.level](m.message, m.fields);
        return;
      case "cache":
        slot.cache = m.stats;
        return;
      case "connections":
        if (w.connections) addConnections(w.connections, slot.connections, m.stats);
        slot.connections = m.stats;
        return;
      case "failed":
        started(new Error(m.error));
        return;
      case "drained":
        slot.drained?.();
        return;
      case "flushed":
        answers.get(m.id)?.(slot, 0);
        return;
      case "purged":
        answers.get(m.id)?.(slot, m.count);
        return;
    }
  }

  /** Starts (or restarts) the thread of `slot`; resolves when it listens. */
  function spawn(slot: Slot, w: PoolWiring): Promise<void> {
    const url = failingStarts > 0 ? (failingStarts--, FAILING_URL) : WORKER_URL;
    const worker = new Worker(url, { type: "module", name: `data-${slot.index}` });
    slot.worker = worker;
    slot.version = 0;
    slot.cache = undefined;
    // A replaced worker's connections went with it; what it counted stays counted.
    if (slot.connections && w.connections) w.connections.open -= slot.connections.open;
    slot.connections = undefined;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(
        () => started(new Error(`data-plane worker ${slot.index} did not start in time`)),
        START_TIMEOUT_MS,
      );
      function started(err?: Error) {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      }
      worker.onmessage = (e: MessageEvent<FromWorker>) => onMessage(slot, e.data, w, started);
      worker.onerror = (e: ErrorEvent) => {
        e.preventDefault();
        if (!settled) {
          started(new Error(e.message));
          return;
        }
        crashed(slot, w, e.message);
      };
      worker.postMessage({ t: "init", init: init(slot.index, w) } satisfies ToWorker);
    });
  }

  /** A worker ended: the questions it was asked get their answer (0) from it now. */
  function endAsks(slot: Slot): void {
    for (const answer of [...answers.values()]) answer(slot, 0);
  }

  function crashed(slot: Slot, w: PoolWiring, reason: string): void {
    // Ended again while waiting to be started again: one restart, not two.
    clearTimeout(slot.retry);
    slot.retry = undefined;
    slot.worker.terminate();
    slot.live = false;
    endAsks(slot);
    // Shutting down: not restarted, and a drain waiting for it is done (its connections and
    // the records it held ended with it); it would otherwise wait for the shutdown deadline.
    if (stopping) return slot.drained?.();
    // Locks it held mid-update would stop the others: release them before anyone waits long.
    const released = shared.clearLocksOf(slot.index);
    slot.restarts++;
    logger.error("data-plane worker crashed; restarting it", {
      worker: slot.index,
      reason,
      restarts: slot.restarts,
      locks_released: released,
    });
    restart(slot, w, 1);
  }

  /**
   * Starts a crashed worker's thread again; a start that fails is tried again after a back-off
   * (0.1 s doubling to 10 s) until one succeeds or the pool stops: a slot left dead after one
   * failed start ran the data plane on one core fewer (none, with every slot dead) for the life
   * of the process.
   */
  function restart(slot: Slot, w: PoolWiring, attempt: number): void {
    spawn(slot, w).then(
      () => logger.info("data-plane worker restarted", { worker: slot.index, attempt }),
      (err) => {
        slot.worker.terminate();
        // Asked while the attempt was under way (a flush, a purge): its thread ended without an
        // answer and holds no cache; waiting for it made the question wait out its timeout
        // and report the slot unanswered.
        endAsks(slot);
        slot.restartFailures++;
        if (stopping) return slot.drained?.();
        const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (attempt - 1));
        logger.error("data-plane worker failed to restart", {
          worker: slot.index,
          attempt,
          retry_in_ms: delay,
          error: err,
        });
        slot.retry = setTimeout(() => {
          slot.retry = undefined;
          if (!stopping) restart(slot, w, attempt + 1);
        }, delay);
        Deno.unrefTimer(slot.retry);
      },
    );
  }

  return {
    count,
    edgeCache,
    acmeChallenges,
    flush,
    async start(w) {
      wiring = w;
      for (let i = 1; i <= count; i++) {
        slots.push({
          index: i,
          worker: undefined as unknown as Worker,
          version: 0,
          live: false,
          cache: undefined,
          connections: undefined,
          requests: 0,
          restarts: 0,
          restartFailures: 0,
        });
      }
      const offset = options.timeOffsetMs;
      if (offset) {
        shared.setOffsetMs(offset());
        publishing = setInterval(() => shared.setOffsetMs(offset()), 1000);
      }
      // Each swap sends what changed since the last one (a restarted worker starts from the
      // full snapshot, which is what the last one sent adds up to).
      const first = w.dataPlane.snapshot();
      let sent = first && forWorkers(first, w);
      w.dataPlane.onSwap(() => {
        const snapshot = forWorkers(w.dataPlane.snapshot()!, w);
        const delta = deltaOf(sent, snapshot);
        sent = snapshot;
        for (const s of slots) s.worker.postMessage({ t: "policy", delta } satisfies ToWorker);
      });
      try {
        await Promise.all(slots.map((s) => spawn(s, w)));
      } catch (err) {
        stopping = true;
        for (const s of slots) s.worker?.terminate();
        throw err;
      }
    },
    current() {
      const version = wiring?.dataPlane.policy.current.version ?? 0;
      // A worker being restarted serves nothing, so it cannot enforce an old policy.
      const live = slots.filter((s) => s.live);
      return live.length > 0 && live.every((s) => s.version >= version);
    },
    status: () =>
      slots.map((s) => ({
        index: s.index,
        live: s.live,
        version: s.version,
        requests: s.requests,
        restarts: s.restarts,
      })),
    crash(index) {
      slots[index - 1]?.worker.postMessage({ t: "crash" } satisfies ToWorker);
    },
    kill(index) {
      const slot = slots[index - 1];
      if (slot && wiring) crashed(slot, wiring, "terminated (test hook)");
    },
    failStarts(n) {
      failingStarts = n;
    },
    stall(index, ms) {
      slots[index - 1]?.worker.postMessage({ t: "stall", ms } satisfies ToWorker);
    },
    collect(out) {
      const metric = (
        name: string,
        type: "counter" | "gauge",
        help: string,
        of: (s: Slot) => number,
      ) => {
        out.family(name, type, help);
        for (const s of slots) out.sample(name, { worker: String(s.index) }, of(s));
      };
      metric(
        "waf_data_worker_requests_total",
        "counter",
        "Requests each data-plane worker finished",
        (s) => s.requests,
      );
      metric(
        "waf_data_worker_restarts_total",
        "counter",
        "Restarts of each data-plane worker after a crash",
        (s) => s.restarts,
      );
      metric(
        "waf_data_worker_restart_failures_total",
        "counter",
        "Failed attempts to start a crashed data-plane worker again (each is retried)",
        (s) => s.restartFailures,
      );
      metric(
        "waf_data_worker_up",
        "gauge",
        "1 while the data-plane worker serves",
        (s) => Number(s.live),
      );
      metric(
        "waf_data_worker_policy_version",
        "gauge",
        "Policy version the data-plane worker enforces",
        (s) => s.version,
      );
    },
    terminate() {
      stopping = true;
      clearInterval(publishing);
      for (const s of slots) {
        clearTimeout(s.retry);
        s.worker?.terminate();
      }
    },
    drain() {
      // Once: a second drain would ask threads already ended, and wait for them forever.
      return draining ??= (async () => {
        stopping = true;
        clearInterval(publishing);
        await Promise.all(slots.map((s) =>
          new Promise<void>((resolve) => {
            // Waiting to be started again: no thread, nothing in flight, no records held.
            if (s.retry !== undefined) {
              clearTimeout(s.retry);
              return resolve();
            }
            s.drained = resolve;
            s.worker.postMessage({ t: "drain" } satisfies ToWorker);
          })
        ));
        // Let the last record batches (sent just before "drained") arrive, then end the threads.
        await new Promise((r) => setTimeout(r, 0));
        for (const s of slots) s.worker.terminate();
      })();
    },
  };
}

const NEEDS_FLAG =
  'workers share the data ports with reusePort, which needs Deno\'s --unstable-net flag ("deno task start" and the waf binary pass it)';

/**
 * False when this process was started without `--unstable-net`. Asking for `reusePort` then does
 * not throw: Deno prints a message and ends the process. The flag's other APIs are only present
 * with it, so their presence tells.
 */
function reusePortAvailable(): boolean {
  return typeof (Deno as unknown as { listenDatagram?: unknown }).listenDatagram === "function";
}

/**
 * How many data-plane workers to run: `server.data.workers` on this machine's cores. Without
 * `--unstable-net`, `auto` falls back to the main thread with a warning, and an explicit number
 * above 1 stops start-up naming the key.
 */
export function dataWorkersFor(setting: "auto" | number, cores: number, logger: Logger): number {
  const n = dataWorkerCount(setting, cores);
  if (n === 1 || reusePortAvailable()) return n;
  if (setting === "auto") {
    logger.warn(`server.data.workers: auto runs the data plane on the main thread: ${NEEDS_FLAG}`);
    return 1;
  }
  throw new ConfigProblemError([{
    path: "server.data.workers",
    message: `${n} ${NEEDS_FLAG}; set 1, or start with the flag`,
  }]);
}

/**
 * Binds the data ports for the workers and starts them: a port of 0 is resolved first by a
 * probe socket on the main thread (with `reusePort`, so the workers can join it; closed once
 * they listen), and a fixed port is checked the same way, so a port in use fails start-up with
 * the listener's name as the single-thread shape does.
 */
export async function startDataWorkers(
  pool: DataWorkerPool,
  wiring: Omit<PoolWiring, "http" | "https"> & { readonly config: Config },
): Promise<
  {
    data: Listener;
    https: { hostname: string; port: number; shutdown(): Promise<void> } | undefined;
  }
> {
  const probes: Deno.Listener[] = [];
  const probe = (name: string, listenAt: string) => {
    const addr = parseListen(listenAt)!;
    try {
      const l = Deno.listen({ hostname: addr.hostname, port: addr.port, reusePort: true });
      if (addr.port === 0) probes.push(l);
      else l.close();
      return { hostname: addr.hostname, port: (l.addr as Deno.NetAddr).port };
    } catch (err) {
      throw listenerError(name, listenAt, err);
    }
  };
  try {
    const data = wiring.config.server.data;
    const http = probe("data", data.listen);
    const https = data.https_listen === undefined
      ? undefined
      : probe("data HTTPS", data.https_listen);
    await pool.start({ ...wiring, http, https });
    let finished!: () => void;
    const done = new Promise<void>((resolve) => finished = resolve);
    let draining: Promise<void> | undefined;
    const shutdown = () => draining ??= pool.drain().then(finished);
    return {
      data: { ...http, tls: false, shutdown, finished: done },
      https: https && { ...https, shutdown },
    };
  } finally {
    for (const p of probes) p.close();
  }
}
