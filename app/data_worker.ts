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
import { createSecretBox, TOTP_KEY_FILE } from "../mod/core/secret_box.ts";
import { type AccessRecord, recordLines } from "../mod/data_plane/access_record.ts";
import { isEventRecord } from "../mod/data_plane/record_events.ts";
import { SiteCounterSet, takeCounts } from "../mod/data_plane/site_counters.ts";
import { createPolicy } from "../mod/data_plane/policy.ts";
import {
  applyDelta,
  type PolicySnapshot,
  replaySnapshot,
} from "../mod/data_plane/policy_snapshot.ts";
import { openSharedState } from "../mod/data_plane/shared_state.ts";
import { createAcmeChallenges } from "../mod/data_plane/acme_challenges.ts";
import { createApiSecRuntime } from "../mod/apisec/apisec_runtime.ts";
import { SECRET_OWNER } from "../mod/apisec/apisec_settings.ts";
import { createEdgeCache } from "../mod/protection/edge_cache.ts";
import { createGoodBotVerifier, denoResolver } from "../mod/protection/good_bots.ts";
import { createProtectionRuntime } from "../mod/protection/protection_runtime.ts";
import { listen, type Listener } from "../net/listen.ts";
import { limitsFromConfig } from "./connection_limits.ts";
import { createConnectionStats } from "../mod/core/connection_stats.ts";
import { createProxyApp } from "../routes/proxy/data_app.ts";
import { createEdgeResponder } from "../routes/proxy/edge_response.ts";
import { startTlsFront, type TlsFront } from "../routes/proxy/tls_front.ts";
import { openApiSecStore } from "./apisec.ts";
import { protectionCompiler } from "./protection.ts";
import type { AlapArgs, FromWorker, ToWorker, UpstreamOk, WorkerInit } from "./data_workers.ts";
import { useHealthOrder } from "../mod/data_plane/upstream_pool.ts";
import { createOkReports } from "../mod/data_plane/upstream_mirror.ts";
import type { Sample } from "../mod/apisec/inventory.ts";
import { shortenThreadSlice } from "../mod/core/thread_slice.ts";

/**
 * Records are sent in batches: at most this many, or {@link FLUSH_MS} after the first. Each
 * batch wakes the main thread once (and the writer thread once): at 20 ms the wake-ups cost the
 * main thread about as much as the records themselves; reads through the API flush at once.
 */
const BATCH = 256;
const FLUSH_MS = 50;
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

  let snapshot: PolicySnapshot = init.snapshot;
  const replay = replaySnapshot(() => snapshot);
  const compiler = protectionCompiler(config);
  const apisec = openApiSecStore(replay.repo);
  const counters = new SiteCounterSet();
  const policy = createPolicy({
    listSites: replay.listSites,
    clock,
    counters,
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

  // Records go in batches (one message, one wake-up of the main thread, per FLUSH_MS at most),
  // already serialised here as the access log's rows (one string: `db/access_log_lines.ts`),
  // with what the requests added to the site counters (this thread counts them as the
  // transaction's exit does anywhere) and, whole, only the records the main thread's events and
  // realtime feed look at; ALAP observations and API-discovery samples ride along. A read
  // through the management API asks for them at once (`flush`), so a trace id just answered is
  // found.
  let lines: string[] = [];
  let events: AccessRecord[] = [];
  let alap: AlapArgs[] = [];
  let samples: Sample[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (lines.length === 0 && alap.length === 0 && samples.length === 0) return;
    post({
      t: "records",
      lines: lines.join(""),
      count: lines.length,
      events,
      counts: lines.length === 0 ? [] : takeCounts(counters),
      alap,
      samples,
    });
    lines = [];
    events = [];
    alap = [];
    samples = [];
  };
  const later = () => timer ??= setTimeout(flush, FLUSH_MS);
  const accessLog = {
    push(record: AccessRecord): boolean {
      lines.push(recordLines(record));
      if (isEventRecord(record)) events.push(record);
      if (lines.length >= BATCH) flush();
      else later();
      return true;
    },
  };

  const cache = createEdgeCache();
  const box = createSecretBox(`${init.dataDir}/${TOTP_KEY_FILE}`, random);
  const acme = createAcmeChallenges();
  for (const [host, token, answer] of init.acme) acme.add(host, token, answer);
  const { proxy, data } = createProxyApp({
    acme,
    policy,
    accessLog,
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
      edge: createEdgeResponder({ cache, clock }),
      goodBots: createGoodBotVerifier({ resolver: denoResolver, clock }),
      alap: {
        observe: (siteId, clientIp, traceId, inspection, alapPolicy) => {
          alap.push([siteId, clientIp, traceId, inspection, alapPolicy]);
          later();
        },
      },
    },
    apisec: createApiSecRuntime({
      clock,
      logger,
      openSecret: (sealed) => box.open(sealed, SECRET_OWNER),
      inventory: {
        sample: (s) => {
          samples.push(s);
          later();
        },
      },
      limiter: shared.limiter,
      timeOffsetMs: shared.offsetMs,
      // Each worker samples its share of `sample_limit`: the process stays within the limit.
      sampleShares: init.workers,
    }),
  });
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
  let https: TlsFront | undefined;
  // Each upstream's last success, reported when it moved (the health route reads the main
  // thread's pools; a failure is reported at once, as an "upstream" event).
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
  const stats = setInterval(() => {
    post({ t: "cache", stats: cache.stats() });
    post({ t: "connections", stats: connections });
    const oks = upstreamOks();
    if (oks.length > 0) post({ t: "upstream_ok", oks });
  }, STATS_MS);

  self.onmessage = async (e: MessageEvent<ToWorker>) => {
    const m = e.data;
    switch (m.t) {
      case "policy":
        snapshot = applyDelta(snapshot, m.delta);
        policy.rebuild();
        post({ t: "ack", version: snapshot.version });
        return;
      case "acme":
        if (m.answer === null) acme.remove(m.host, m.token);
        else acme.add(m.host, m.token, m.answer);
        return;
      case "flush":
        flush();
        post({ t: "flushed", id: m.id });
        return;
      case "purge":
        post({ t: "purged", id: m.id, count: cache.purge(m.siteId, m.pathPrefix) });
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
        clearInterval(stats);
        post({ t: "connections", stats: connections });
        await http.shutdown();
        await https?.shutdown();
        flush();
        proxy.close();
        post({ t: "drained" });
        return;
    }
  };
  if (init.https) {
    https = await startTlsFront({
      hostname: init.https.hostname,
      port: init.https.port,
      policy,
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
    });
  }
  post({ t: "ack", version: snapshot.version });
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
