/**
 * One data-plane worker thread (`server.data.workers` > 1): the data-plane Hono app on the
 * process's HTTP (and HTTPS) port, shared with the other workers through `reusePort`, on a
 * policy compiled here from the main thread's snapshot. Exact shared state (rate-limit
 * counters, used puzzle nonces) is in the shared memory the main thread allocated; what needs
 * the store or the process's single services (access-log writer, ALAP, API discovery,
 * monitoring, the runtime log) goes to the main thread as messages, never awaited by a request.
 * See `app/data_workers.ts` for the main thread's side and the message protocol.
 */
/// <reference lib="deno.worker" />
import { systemClock } from "../mod/core/clock.ts";
import type { LogFields, Logger, LogLevel } from "../mod/core/logger.ts";
import { systemRandom } from "../mod/core/random.ts";
import { guardUnhandledRejections } from "../mod/core/unhandled.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Random } from "../mod/core/random.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import { SiteCounterSet } from "../mod/data_plane/site_counters.ts";
import { RecordBatch } from "./data_worker_records.ts";
import { createPolicy, type Policy } from "../mod/data_plane/policy.ts";
import {
  applyDelta,
  type PolicySnapshot,
  replaySnapshot,
  type SnapshotDelta,
} from "../mod/data_plane/policy_snapshot.ts";
import { openSharedState, type SharedState } from "../mod/data_plane/shared_state.ts";
import { type AcmeChallenges, createAcmeChallenges } from "../mod/data_plane/acme_challenges.ts";
import { createApiSecRuntime } from "../mod/apisec/apisec_runtime.ts";
import { SECRET_OWNER } from "../mod/apisec/apisec_settings.ts";
import { createEdgeCache, type EdgeCache } from "../mod/protection/edge_cache.ts";
import { createGoodBotVerifier, denoResolver } from "../mod/protection/good_bots.ts";
import { createProtectionRuntime } from "../mod/protection/protection_runtime.ts";
import { listen, type Listener } from "../net/listen.ts";
import { limitsFromConfig } from "./connection_limits.ts";
import { createConnectionStats, type ListenerConnections } from "../mod/core/connection_stats.ts";
import { createProxyApp, type DataApp } from "../routes/proxy/data_app.ts";
import type { Proxy } from "../routes/proxy/proxy.ts";
import { createEdgeResponder } from "../routes/proxy/edge_response.ts";
import { startTlsFront, type TlsFront } from "../routes/proxy/tls_front.ts";
import { openApiSecStore } from "./apisec.ts";
import { protectionCompiler } from "./protection.ts";
import type { FromWorker, ToWorker, UpstreamOk, WorkerInit } from "./data_worker_protocol.ts";
import { useHealthOrder } from "../mod/data_plane/upstream_pool.ts";
import { createOkReports } from "../mod/data_plane/upstream_mirror.ts";
import { shortenThreadSlice } from "../mod/core/thread_slice.ts";

/** How often a worker reports its cache's and front's counters and its upstreams' successes. */
const STATS_MS = 1000;

function post(message: FromWorker): void {
  self.postMessage(message);
}

function forwardingLogger(worker: number): Logger {
  const send = (level: LogLevel) => (message: string, fields?: LogFields) => {
    const f = { ...fields, worker };
    try {
      post({ t: "log", level, message, fields: f });
    } catch {
      // A field that cannot be cloned: send its text.
      post({
        t: "log",
        level,
        message,
        fields: JSON.parse(JSON.stringify(f, (_k, v) => v ?? null)),
      });
    }
  };
  return { debug: send("debug"), info: send("info"), warn: send("warn"), error: send("error") };
}

/** The policy this worker enforces: compiled from the main thread's snapshot, then each delta. */
class WorkerPolicy {
  readonly policy: Policy;
  readonly counters = new SiteCounterSet();
  #snapshot: PolicySnapshot;

  constructor(init: WorkerInit, clock: Clock) {
    this.#snapshot = init.snapshot;
    const replay = replaySnapshot(() => this.#snapshot);
    const compiler = protectionCompiler(init.config);
    const apisec = openApiSecStore(replay.repo);
    this.policy = createPolicy({
      listSites: replay.listSites,
      clock,
      counters: this.counters,
      compileProtection: () => compiler.compile(replay.source),
      compileApiSec: apisec.compile,
      upstreamHealth: (site, upstream, event) =>
        post({
          t: "upstream",
          site: { id: site.id, name: site.name },
          upstream: {
            origin: upstream.origin,
            failures: upstream.failures,
            downUntil: upstream.downUntil,
          },
          event,
          seq: event === "up" ? upstream.okSeq : upstream.failedSeq,
        }),
    });
  }

  /** The snapshot's version, which the worker acknowledges. */
  get version(): number {
    return this.#snapshot.version;
  }

  /** Applies a swap's delta and compiles the policy again. */
  apply(delta: SnapshotDelta): void {
    this.#snapshot = applyDelta(this.#snapshot, delta);
    this.policy.rebuild();
  }
}

/** The per-thread services the data-plane app of a worker runs on. */
interface WorkerServices {
  readonly init: WorkerInit;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly shared: SharedState;
  readonly policy: Policy;
  readonly batch: RecordBatch;
  readonly cache: EdgeCache;
  readonly acme: AcmeChallenges;
}

/** The data-plane Hono app on this worker's policy, protection controls and API security. */
function workerApp(on: WorkerServices): { proxy: Proxy; data: DataApp } {
  const { init, clock, random, logger, shared, batch } = on;
  const box = createSecretBox(init.keys.sealing, random);
  return createProxyApp({
    acme: on.acme,
    policy: on.policy,
    accessLog: batch.accessLog,
    clock,
    random,
    logger,
    protection: {
      runtime: createProtectionRuntime({
        clock,
        random,
        challengeSecret: init.challengeSecret,
        usedNonces: shared.nonces,
        limiter: shared.limiter,
      }),
      clock,
      random,
      edge: createEdgeResponder({ cache: on.cache, clock }),
      goodBots: createGoodBotVerifier({ resolver: denoResolver, clock }),
      alap: { observe: batch.observe },
    },
    apisec: createApiSecRuntime({
      clock,
      logger,
      openSecret: (sealed) => box.open(sealed, SECRET_OWNER),
      inventory: { sample: batch.sample },
      limiter: shared.limiter,
      timeOffsetMs: shared.offsetMs,
      // Each worker samples its share of `sample_limit`: the process stays within the limit.
      sampleShares: init.workers,
    }),
  });
}

/**
 * Reports every {@link STATS_MS} its cache's and connection front's counters, and each
 * upstream's last success when it moved (the health route reads the main thread's pools; a
 * failure is reported at once, as an "upstream" event).
 */
function startStatsReports(
  policy: Policy,
  cache: EdgeCache,
  connections: ListenerConnections,
): ReturnType<typeof setInterval> {
  const okReports = createOkReports();
  const upstreamOks = () => {
    const oks: UpstreamOk[] = [];
    for (const site of policy.current.sites) {
      for (const u of site.pool.upstreams) {
        if (okReports.moved(u)) oks.push([site.id, u.origin, u.lastOkAt, u.okSeq]);
      }
    }
    return oks;
  };
  return setInterval(() => {
    post({ t: "cache", stats: cache.stats() });
    post({ t: "connections", stats: connections });
    const oks = upstreamOks();
    if (oks.length > 0) post({ t: "upstream_ok", oks });
  }, STATS_MS);
}

/** One running worker: its policy, app, listeners and what the main thread tells it. */
class DataWorker {
  readonly #policy: WorkerPolicy;
  readonly #batch: RecordBatch;
  readonly #cache: EdgeCache;
  readonly #acme: AcmeChallenges;
  readonly #proxy: Proxy;
  readonly #http: Listener;
  /** The HTTPS front once started (messages are handled while it starts). */
  #https: TlsFront | undefined;
  readonly #connections: ListenerConnections;
  readonly #stats: ReturnType<typeof setInterval>;

  constructor(
    parts: {
      readonly policy: WorkerPolicy;
      readonly services: WorkerServices;
      readonly proxy: Proxy;
      readonly http: Listener;
      readonly connections: ListenerConnections;
    },
  ) {
    this.#policy = parts.policy;
    this.#batch = parts.services.batch;
    this.#cache = parts.services.cache;
    this.#acme = parts.services.acme;
    this.#proxy = parts.proxy;
    this.#http = parts.http;
    this.#connections = parts.connections;
    this.#stats = startStatsReports(parts.policy.policy, this.#cache, parts.connections);
  }

  /** Its HTTPS front started: a drain ends it too. */
  servesHttps(front: TlsFront): void {
    this.#https = front;
  }

  /** The policy version it enforces (its answer to each swap, and to its start). */
  get version(): number {
    return this.#policy.version;
  }

  async handle(m: ToWorker): Promise<void> {
    switch (m.t) {
      case "policy":
        this.#policy.apply(m.delta);
        post({ t: "ack", version: this.version });
        return;
      case "acme":
        if (m.answer === null) this.#acme.remove(m.host, m.token);
        else this.#acme.add(m.host, m.token, m.answer);
        return;
      case "flush":
        this.#batch.flush();
        post({ t: "flushed", id: m.id });
        return;
      case "purge":
        post({ t: "purged", id: m.id, count: this.#cache.purge(m.siteId, m.pathPrefix) });
        return;
      case "crash":
        // The test hook: an uncaught error, as a bug would raise.
        setTimeout(() => {
          throw new Error("data-plane worker crash requested (test hook)");
        });
        return;
      case "stall": {
        // The test hook: a blocked event loop; messages after this one wait.
        const end = Date.now() + m.ms;
        while (Date.now() < end) { /* busy */ }
        return;
      }
      case "drain":
        clearInterval(this.#stats);
        post({ t: "connections", stats: this.#connections });
        await this.#http.shutdown();
        await this.#https?.shutdown();
        this.#batch.flush();
        this.#proxy.close();
        post({ t: "drained" });
        return;
    }
  }
}

async function start(init: WorkerInit): Promise<void> {
  const { config, index } = init;
  const clock = systemClock;
  const random = systemRandom;
  const logger = forwardingLogger(index);
  // As on the main thread of `waf serve`: a rejection nobody handled is logged, not a crash
  // that drops this worker's connections (docs/reliability.md). Counted on this thread only.
  guardUnhandledRejections(logger);
  const shared = openSharedState(init.shared, index);
  useHealthOrder(init.healthOrder);
  const policy = new WorkerPolicy(init, clock);
  const acme = createAcmeChallenges();
  for (const [host, token, answer] of init.acme) acme.add(host, token, answer);
  const services: WorkerServices = {
    init,
    clock,
    random,
    logger,
    shared,
    policy: policy.policy,
    batch: new RecordBatch(policy.counters, post),
    cache: createEdgeCache(),
    acme,
  };
  const { proxy, data } = workerApp(services);
  // The front's counters; the main thread adds every worker's up (`waf_connections_*`).
  const connections = createConnectionStats().listener("data");
  const http: Listener = listen({
    name: "data",
    hostname: init.http.hostname,
    port: init.http.port,
    reusePort: true,
    handler: (req, info) => data.handle(req, info.remoteAddr.hostname, "http"),
    front: config.server.data.limits.enabled
      ? {
        limits: limitsFromConfig(config.server.data.limits, init.workers),
        stats: connections,
        logger,
        onBadFraming: (client, request) => proxy.refused(client, request),
      }
      : undefined,
  });
  const worker = new DataWorker({ policy, services, proxy, http, connections });
  // The real handler from here on: messages that come while the HTTPS front starts are handled.
  self.onmessage = (e: MessageEvent<ToWorker>) => void worker.handle(e.data);
  if (init.https) {
    worker.servesHttps(
      await startTlsFront({
        hostname: init.https.hostname,
        port: init.https.port,
        policy: policy.policy,
        handle: data.handle,
        logger,
        reusePort: true,
        front: config.server.data.limits.enabled
          ? {
            limits: limitsFromConfig(config.server.data.limits, init.workers),
            stats: connections,
            onBadFraming: (client, request) => proxy.refused(client, request, "https"),
          }
          : undefined,
      }),
    );
  }
  post({ t: "ack", version: worker.version });
}

self.onmessage = (e: MessageEvent<ToWorker>) => {
  if (e.data.t !== "init") return;
  // This worker's event loop, like the main thread's (mod/core/thread_slice.ts).
  shortenThreadSlice();
  start(e.data.init).catch((err) => {
    post({
      t: "failed",
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  });
};
