/**
 * The Prometheus metrics of the process. Each area contributes a collector that reads its own
 * state at scrape time; the data plane's counters are pre-bound per site (see
 * `mod/data_plane/site_counters.ts`), so a scrape costs the data plane nothing. Names follow the
 * Prometheus conventions: `_total` counters, base units (seconds, bytes), a `waf_` prefix, and the
 * standard `process_` names where one exists. docs/monitoring.md lists every metric.
 */
import { Histogram, LAG_BOUNDS_MS } from "../core/histogram.ts";
import { unhandledRejections } from "../core/unhandled.ts";
import type { AccessLogStats } from "../access_log/access_log.ts";
import type { CompiledPolicy } from "../data_plane/policy.ts";
import {
  ACTIONS,
  BLOCK_CLASSES,
  type SiteCounters,
  type SiteCounterSet,
  STATUS_CLASSES,
} from "../data_plane/site_counters.ts";
import { type Collector, Exposition } from "./exposition.ts";
import {
  CLOSE_REASONS,
  type ConnectionStats,
  type ListenerConnections,
  REFUSE_REASONS,
} from "../core/connection_stats.ts";

const US = 1e-6;

export function createMetrics() {
  const collectors: Collector[] = [];
  return {
    register(c: Collector): void {
      collectors.push(c);
    },
    /** One scrape in the text format. */
    scrape(): string {
      const out = new Exposition();
      for (const c of collectors) c(out);
      return out.text();
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** Requests, blocks and latencies per site. */
function siteSamples(out: Exposition, sites: readonly SiteCounters[]): void {
  out.family(
    "waf_requests_total",
    "counter",
    "Data-plane requests by site, action and status class",
  );
  const label = (name: string) => name === "" ? "_unmatched" : name;
  for (const sc of sites) {
    ACTIONS.forEach((action, a) =>
      STATUS_CLASSES.forEach((status, s) => {
        const v = sc.requests[a * STATUS_CLASSES.length + s]!;
        if (v > 0) {
          out.sample(
            "waf_requests_total",
            { site: label(sc.name), action, status_class: status },
            v,
          );
        }
      })
    );
  }
  out.family(
    "waf_blocks_total",
    "counter",
    "Blocked requests by site and class (attack class or the deciding check)",
  );
  for (const sc of sites) {
    BLOCK_CLASSES.forEach((cls, i) => {
      const v = sc.blocks[i]!;
      if (v > 0) out.sample("waf_blocks_total", { site: label(sc.name), class: cls }, v);
    });
  }
  out.family(
    "waf_request_duration_seconds",
    "histogram",
    "Data-plane request latency, first byte in to response handed over",
  );
  for (const sc of sites) {
    if (sc.latency.count > 0) {
      out.histogram("waf_request_duration_seconds", { site: label(sc.name) }, sc.latency, US);
    }
  }
  out.family(
    "waf_upstream_duration_seconds",
    "histogram",
    "Time until the upstream's response head arrived",
  );
  for (const sc of sites) {
    if (sc.upstreamLatency.count > 0) {
      out.histogram(
        "waf_upstream_duration_seconds",
        { site: label(sc.name) },
        sc.upstreamLatency,
        US,
      );
    }
  }
  out.family(
    "waf_inspection_duration_seconds",
    "histogram",
    "Semantic engine inspection time per request",
  );
  for (const sc of sites) {
    if (sc.inspection.count > 0) {
      out.histogram(
        "waf_inspection_duration_seconds",
        { site: label(sc.name) },
        sc.inspection,
        US,
      );
    }
  }
}

/** The policy in force and its swaps. */
function policySamples(out: Exposition, p: CompiledPolicy, swaps: number): void {
  out.family("waf_policy_version", "gauge", "Version of the compiled policy in force");
  out.sample("waf_policy_version", {}, p.version);
  out.family("waf_policy_swaps_total", "counter", "Policy rebuilds swapped in since start");
  out.sample("waf_policy_swaps_total", {}, swaps);
  out.family("waf_sites", "gauge", "Sites in the policy in force");
  out.sample("waf_sites", {}, p.sites.length);
}

/** A site label: the site's name, `_unmatched` for requests no site matched. */
function siteLabel(site: string): string {
  return site === "" ? "_unmatched" : site;
}

/** The access log's queue and writer, and its PostgreSQL sink when there is one. */
export function accessLogSamples(out: Exposition, log: AccessLogStats): void {
  out.family("waf_access_log_queue_depth", "gauge", "Access-log records waiting to be written");
  out.sample("waf_access_log_queue_depth", {}, log.queued);
  out.family(
    "waf_access_log_written_total",
    "counter",
    "Access-log records written to the store",
  );
  out.sample("waf_access_log_written_total", {}, log.written);
  out.family(
    "waf_access_log_dropped_total",
    "counter",
    "Access-log records lost for good (the spill file full or failing, or spilled rows the " +
      "store kept refusing), by site and verdict (pass, block, challenge, log)",
  );
  for (const [site, byAction] of Object.entries(log.dropped_sites)) {
    for (const [verdict, n] of Object.entries(byAction)) {
      out.sample("waf_access_log_dropped_total", { site: siteLabel(site), verdict }, n);
    }
  }
  out.family(
    "waf_access_log_dropped_verdicts_total",
    "counter",
    "Of the lost access-log records, those of blocked, challenged or logged requests (all sites)",
  );
  out.sample("waf_access_log_dropped_verdicts_total", {}, log.dropped_verdicts);
  out.family(
    "waf_access_log_sampled_total",
    "counter",
    "Passed requests' access-log records left out (sampled) while the writer was behind, by site",
  );
  for (const [site, n] of Object.entries(log.sampled_sites)) {
    out.sample("waf_access_log_sampled_total", { site: siteLabel(site) }, n);
  }
  out.family(
    "waf_access_log_sample_every",
    "gauge",
    "The passed records' sampling now: one in this many written (1 all, 0 none)",
  );
  out.sample("waf_access_log_sample_every", {}, log.sample_every);
  out.family(
    "waf_access_log_spilled_total",
    "counter",
    "Access-log records written to the spill file (verdicts past the memory ceiling, refused " +
      "batches), to be written to the store later",
  );
  out.sample("waf_access_log_spilled_total", {}, log.spilled);
  out.family(
    "waf_access_log_spill_rows",
    "gauge",
    "Access-log records waiting in the spill file",
  );
  out.sample("waf_access_log_spill_rows", {}, log.spill_rows);
  out.family(
    "waf_access_log_writer_escalations_total",
    "counter",
    "Times the low-priority access-log writer thread fell behind and was replaced",
  );
  out.sample("waf_access_log_writer_escalations_total", {}, log.writer_escalations);
  out.family(
    "waf_access_log_writer_deescalations_total",
    "counter",
    "Times an escalated access-log writer was calm long enough to return to low priority",
  );
  out.sample("waf_access_log_writer_deescalations_total", {}, log.writer_deescalations);
  const pg = log.sinks.find((s) => s["postgresql"] === true);
  if (pg) {
    const n = (k: string) => Number(pg[k] ?? 0);
    out.family("waf_pg_sink_up", "gauge", "1 while the PostgreSQL access-log sink ships");
    out.sample("waf_pg_sink_up", {}, pg["up"] === true ? 1 : 0);
    out.family(
      "waf_pg_sink_lag_records",
      "gauge",
      "Stored access-log records not shipped to PostgreSQL yet",
    );
    out.sample("waf_pg_sink_lag_records", {}, n("lag_rows"));
    out.family(
      "waf_pg_sink_lag_seconds",
      "gauge",
      "Age of the oldest access-log record not shipped to PostgreSQL yet",
    );
    out.sample("waf_pg_sink_lag_seconds", {}, n("lag_seconds"));
    out.family("waf_pg_sink_shipped_total", "counter", "Records shipped to PostgreSQL");
    out.sample("waf_pg_sink_shipped_total", {}, n("shipped_rows"));
    out.family(
      "waf_pg_sink_skipped_total",
      "counter",
      "Records retention deleted before they were shipped",
    );
    out.sample("waf_pg_sink_skipped_total", {}, n("skipped_rows"));
    out.family(
      "waf_pg_sink_failures_total",
      "counter",
      "Failed PostgreSQL inserts (timeouts included)",
    );
    out.sample("waf_pg_sink_failures_total", {}, n("failures"));
  }
}

/** The data plane: requests, blocks, latencies, inspection time per site; policy; access log. */
export function dataPlaneCollector(deps: {
  readonly counters: SiteCounterSet;
  readonly policy: { readonly current: CompiledPolicy };
  readonly accessLog: { stats(): AccessLogStats };
  /** Policy swaps since start. */
  readonly swaps: () => number;
}): Collector {
  return (out) => {
    siteSamples(out, [...deps.counters.all()]);
    policySamples(out, deps.policy.current, deps.swaps());
    accessLogSamples(out, deps.accessLog.stats());
  };
}

/** The listeners' connection fronts (net/conn_front.ts). */
export function connectionsCollector(stats: ConnectionStats): Collector {
  return (out) => {
    const all = [...stats.all()];
    out.family("waf_connections_open", "gauge", "Open client connections by listener");
    for (const s of all) out.sample("waf_connections_open", { listener: s.listener }, s.open);
    out.family("waf_connections_accepted_total", "counter", "Client connections accepted");
    for (const s of all) {
      out.sample("waf_connections_accepted_total", { listener: s.listener }, s.accepted);
    }
    const byReason = <R extends string>(
      name: string,
      help: string,
      reasons: readonly R[],
      of: (s: ListenerConnections) => Record<R, number>,
    ) => {
      out.family(name, "counter", help);
      for (const s of all) {
        for (const reason of reasons) {
          out.sample(name, { listener: s.listener, reason }, of(s)[reason]);
        }
      }
    };
    byReason(
      "waf_connections_refused_total",
      "Connections closed on arrival: a per-client or total cap, or the descriptor limit",
      REFUSE_REASONS,
      (s) => s.refused,
    );
    byReason(
      "waf_connections_closed_total",
      "Connections the front closed early: a deadline passed or the framing was invalid",
      CLOSE_REASONS,
      (s) => s.closed,
    );
    out.family(
      "waf_accept_errors_total",
      "counter",
      "Failed accepts (descriptor limit and the like), each followed by a back-off",
    );
    for (const s of all) {
      out.sample("waf_accept_errors_total", { listener: s.listener }, s.acceptErrors);
    }
  };
}

/**
 * Event-loop lag: a timer that should fire every `intervalMs` records how late it ran. Every
 * pause of the loop (long synchronous work, garbage collection) shows up here.
 */
export function startLagSampler(intervalMs = 500) {
  const lag = new Histogram(LAG_BOUNDS_MS);
  let max = 0;
  let expected = performance.now() + intervalMs;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = Math.max(0, now - expected);
    lag.observe(late);
    if (late > max) max = late;
    expected = now + intervalMs;
  }, intervalMs);
  Deno.unrefTimer(timer);
  return { lag, max: () => max, stop: () => clearInterval(timer) };
}

/** Memory, event-loop lag, start time and uptime of the process. */
export function processCollector(deps: {
  readonly lag: Histogram;
  readonly startedAt: number;
  readonly version: string;
}): Collector {
  return (out) => {
    const m = Deno.memoryUsage();
    out.family("process_resident_memory_bytes", "gauge", "Resident set size");
    out.sample("process_resident_memory_bytes", {}, m.rss);
    out.family("waf_heap_used_bytes", "gauge", "V8 heap in use");
    out.sample("waf_heap_used_bytes", {}, m.heapUsed);
    out.family("waf_heap_total_bytes", "gauge", "V8 heap reserved");
    out.sample("waf_heap_total_bytes", {}, m.heapTotal);
    out.family(
      "waf_external_memory_bytes",
      "gauge",
      "Memory of objects outside the V8 heap (buffers)",
    );
    out.sample("waf_external_memory_bytes", {}, m.external);
    out.family(
      "waf_event_loop_lag_seconds",
      "histogram",
      "How late a 500 ms timer fired: pauses of the event loop, garbage collection included",
    );
    out.histogram("waf_event_loop_lag_seconds", {}, deps.lag, 1e-3);
    out.family(
      "process_start_time_seconds",
      "gauge",
      "Start time of the process since the Unix epoch",
    );
    out.sample("process_start_time_seconds", {}, Math.floor(deps.startedAt / 1000));
    out.family(
      "waf_unhandled_rejections_total",
      "counter",
      "Promise rejections nobody handled, logged and survived by the server process (bugs)",
    );
    out.sample("waf_unhandled_rejections_total", {}, unhandledRejections());
    out.family("waf_build_info", "gauge", "Always 1; the version in a label");
    out.sample("waf_build_info", { version: deps.version }, 1);
  };
}

/** Management API requests by route pattern, method and status class. */
export class ManagementCounters {
  readonly #counts = new Map<
    string,
    { route: string; method: string; status: string; n: number }
  >();

  count(method: string, route: string, status: number): void {
    const cls = `${Math.min(5, Math.max(1, Math.floor(status / 100)))}xx`;
    const key = `${method} ${route} ${cls}`;
    const c = this.#counts.get(key);
    if (c) c.n++;
    else this.#counts.set(key, { route, method, status: cls, n: 1 });
  }

  readonly collect: Collector = (out) => {
    out.family(
      "waf_management_requests_total",
      "counter",
      "Management API requests by route pattern, method and status class",
    );
    for (const c of this.#counts.values()) {
      out.sample("waf_management_requests_total", {
        route: c.route,
        method: c.method,
        status_class: c.status,
      }, c.n);
    }
  };
}
