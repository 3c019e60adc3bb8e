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
import type { Logger } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import type { SiteUpstreamHealth } from "../mod/data_plane/policy.ts";
import { deltaOf, type PolicySnapshot } from "../mod/data_plane/policy_snapshot.ts";
import type { SiteCounterSet } from "../mod/data_plane/site_counters.ts";
import { withoutSiteKeys } from "../mod/data_plane/site_keys.ts";
import {
  allocateSharedState,
  openSharedState,
  type SharedState,
} from "../mod/data_plane/shared_state.ts";
import { healthOrderBuffer } from "../mod/data_plane/upstream_pool.ts";
import type { EdgeCache } from "../mod/protection/edge_cache.ts";
import type { DataPlane } from "./data_plane.ts";
import type { FromWorker, ToWorker, WorkerInit } from "./data_worker_protocol.ts";
import type { AcmeChallenges } from "../mod/data_plane/acme_challenges.ts";
import type { Exposition } from "../mod/monitor/exposition.ts";
import { dataWorkerCount, parseListen } from "../mod/config/config_schema.ts";
import { type Listener, listenerError } from "../net/listen.ts";
import type { ListenerConnections } from "../mod/core/connection_stats.ts";
import { type SlotHost, WORKER_URL, WorkerSlot } from "./data_worker_slot.ts";
import { WorkerQuestions } from "./data_worker_questions.ts";
import { WorkerInbox } from "./data_worker_inbox.ts";
import { WorkersAcme, workersEdgeCache } from "./data_worker_mirrors.ts";
import {
  addConnections,
  collectWorkers,
  type WorkerStatus,
  workerStatus,
} from "./data_worker_stats.ts";

export interface DataWorkersOptions {
  readonly count: number;
  readonly config: Config;
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
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
  status(): WorkerStatus[];
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

/**
 * The snapshot as workers get it: without the sites' private keys unless they serve the HTTPS
 * port (the only reader of a key is the HTTPS listener's certificate callback).
 */
function forWorkers(snapshot: PolicySnapshot, w: PoolWiring): PolicySnapshot {
  return w.https ? snapshot : { ...snapshot, sites: withoutSiteKeys(snapshot.sites) };
}

/** The workers once started: their wiring and what reads their messages. */
interface Started {
  readonly wiring: PoolWiring;
  readonly inbox: WorkerInbox;
}

/**
 * The pool: its slots, the policy each swap sends them, the questions asked of all of them, and
 * their shutdown. The members outside {@link DataWorkerPool} (`slots`, `questions`,
 * `workerModule`) are what the tests' handle reaches (`tests/_helpers/data_workers.ts`).
 */
export class WorkerPool implements DataWorkerPool, SlotHost {
  readonly count: number;
  readonly logger: Logger;
  readonly edgeCache: EdgeCache;
  readonly acmeChallenges: WorkersAcme;
  readonly slots: WorkerSlot[] = [];
  readonly questions = new WorkerQuestions();
  /** The module a new thread runs. */
  workerModule: () => URL | string = () => WORKER_URL;
  readonly #options: DataWorkersOptions;
  readonly #buffers = allocateSharedState();
  readonly #shared: SharedState = openSharedState(this.#buffers, 0);
  readonly #challengeSecret: Uint8Array;
  #started: Started | undefined;
  #stopping = false;
  #publishing: ReturnType<typeof setInterval> | undefined;
  #draining: Promise<void> | undefined;

  constructor(options: DataWorkersOptions) {
    this.#options = options;
    this.count = options.count;
    this.logger = options.logger;
    this.#challengeSecret = options.random.bytes(32);
    this.edgeCache = workersEdgeCache(this.slots, this.questions);
    this.acmeChallenges = new WorkersAcme(this.slots);
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  get connections(): ListenerConnections | undefined {
    return this.#started?.wiring.connections;
  }

  /** Bound: the data plane's access log calls it before each read. */
  readonly flush = async (): Promise<void> => {
    await this.questions.ask(this.slots, (id) => ({ t: "flush", id }));
  };

  async start(w: PoolWiring): Promise<void> {
    this.#started = {
      wiring: w,
      inbox: new WorkerInbox(w.dataPlane, w.counters, w.upstreamHealth),
    };
    for (let i = 1; i <= this.count; i++) this.slots.push(new WorkerSlot(this, i));
    const offset = this.#options.timeOffsetMs;
    if (offset) {
      this.#shared.setOffsetMs(offset());
      this.#publishing = setInterval(() => this.#shared.setOffsetMs(offset()), 1000);
    }
    // Each swap sends what changed since the last one (a restarted worker starts from the
    // full snapshot, which is what the last one sent adds up to).
    const first = w.dataPlane.snapshot();
    let sent = first && forWorkers(first, w);
    w.dataPlane.onSwap(() => {
      const snapshot = forWorkers(w.dataPlane.snapshot()!, w);
      const delta = deltaOf(sent, snapshot);
      sent = snapshot;
      for (const s of this.slots) s.post({ t: "policy", delta } satisfies ToWorker);
    });
    try {
      await Promise.all(this.slots.map((s) => s.start()));
    } catch (err) {
      this.#stopping = true;
      for (const s of this.slots) s.worker?.terminate();
      throw err;
    }
  }

  current(): boolean {
    const version = this.#started?.wiring.dataPlane.policy.current.version ?? 0;
    // A worker being restarted serves nothing, so it cannot enforce an old policy.
    const live = this.slots.filter((s) => s.live);
    return live.length > 0 && live.every((s) => s.version >= version);
  }

  status(): WorkerStatus[] {
    return workerStatus(this.slots);
  }

  collect(out: Exposition): void {
    collectWorkers(out, this.slots);
  }

  terminate(): void {
    this.#stopping = true;
    clearInterval(this.#publishing);
    for (const s of this.slots) s.terminate();
  }

  drain(): Promise<void> {
    // Once: a second drain would ask threads already ended, and wait for them forever.
    return this.#draining ??= (async () => {
      this.#stopping = true;
      clearInterval(this.#publishing);
      await Promise.all(this.slots.map((s) => s.drain()));
      // Let the last record batches (sent just before "drained") arrive, then end the threads.
      await new Promise((r) => setTimeout(r, 0));
      for (const s of this.slots) s.worker?.terminate();
    })();
  }

  init(index: number): WorkerInit {
    const w = this.#started!.wiring;
    return {
      index,
      config: this.#options.config,
      dataDir: this.#options.dataDir,
      keys: this.#options.keys,
      shared: this.#buffers,
      healthOrder: healthOrderBuffer(),
      challengeSecret: this.#challengeSecret,
      snapshot: forWorkers(w.dataPlane.snapshot()!, w),
      acme: this.acmeChallenges.all(),
      http: w.http,
      https: w.https,
      workers: this.count,
    };
  }

  receive(slot: WorkerSlot, m: FromWorker, started: (err?: Error) => void): void {
    const { wiring, inbox } = this.#started!;
    switch (m.t) {
      case "ack":
        slot.version = Math.max(slot.version, m.version);
        slot.live = true;
        started();
        return;
      case "records":
        slot.requests += m.count + m.passCount;
        inbox.records(m);
        return;
      case "upstream":
        inbox.upstream(slot.index, m);
        return;
      case "upstream_ok":
        inbox.upstreamOks(m);
        return;
      case "log":
        this.logger[m.level](m.message, m.fields);
        return;
      case "cache":
        slot.cache = m.stats;
        return;
      case "connections":
        if (wiring.connections) addConnections(wiring.connections, slot.connections, m.stats);
        slot.connections = m.stats;
        return;
      case "failed":
        started(new Error(m.error));
        return;
      case "drained":
        slot.drained();
        return;
      case "flushed":
        this.questions.answer(m.id, slot, 0);
        return;
      case "purged":
        this.questions.answer(m.id, slot, m.count);
        return;
    }
  }

  ended(slot: WorkerSlot): void {
    this.questions.endFor(slot);
  }

  releaseLocks(index: number): number {
    return this.#shared.clearLocksOf(index);
  }
}

export function createDataWorkerPool(options: DataWorkersOptions): DataWorkerPool {
  return new WorkerPool(options);
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
