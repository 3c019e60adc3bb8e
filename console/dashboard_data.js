// Where the dashboard's figures come from, in one module so the page does not care: the
// monitoring rollups (`GET /api/monitor/summary` and `/series`, kept as counters, never a scan of
// the access log), the upstream health, the access-log pipeline counters and the pending ALAP
// decisions and the cluster nodes' counters (a controller's), reloaded every `POLL_MS`; and the realtime feed (`GET /api/realtime/events`, Server-
// Sent Events read by the browser's EventSource) for blocked and challenged requests as they
// happen, each of which also asks for a reload (at most one a second).
import { get, withQuery } from "./api.js";
import { can } from "./session.js";

export const POLL_MS = 10_000;
/** A live event reloads the figures after this long (several events, one reload). */
const SETTLE_MS = 1_000;
/** The kinds the live list shows. */
export const LIVE_KINDS = ["access.blocked", "access.challenged"];

/** The API's period for a range in minutes, and the series' step (minutes up to a day). */
function periodOf(minutes) {
  return {
    period: minutes % 1440 === 0 ? `${minutes / 1440}d` : `${minutes}m`,
    step: minutes <= 1440 ? "minute" : "hour",
  };
}

/** Whatever the user may read, each part independent so one failure does not blank the rest. */
export async function loadDashboard(minutes) {
  const part = (permission, path, query) =>
    can(permission)
      ? get(path, query).then((data) => ({ data }), (error) => ({ error }))
      : Promise.resolve({ hidden: true });
  const { period, step } = periodOf(minutes);
  const [summary, series, health, stats, alap, cluster] = await Promise.all([
    part("read:monitor", "/api/monitor/summary", { period, top: 8 }),
    part("read:monitor", "/api/monitor/series", { period, step }),
    part("read:sites", "/api/sites/health"),
    part("read:logs", "/api/logs/stats"),
    part("read:logs", "/api/alap/decisions", { status: "proposed" }),
    part("read:cluster", "/api/cluster/nodes"),
  ]);
  // A cluster node has no nodes of its own (its controller has): nothing to show.
  if (cluster.error?.code === "CLUSTER_ROLE") cluster.hidden = true;
  return { summary, series, health, stats, alap, cluster };
}

/**
 * Calls `onData` now, every POLL_MS and soon after `refresh()`, until `stop()`.
 */
export function watchDashboard(minutes, onData) {
  let stopped = false;
  let timer;
  let running = false;
  const tick = async () => {
    clearTimeout(timer);
    if (running) return;
    running = true;
    const data = await loadDashboard(minutes).finally(() => (running = false));
    if (stopped) return;
    onData(data);
    timer = setTimeout(tick, POLL_MS);
  };
  tick();
  return {
    refresh() {
      if (stopped) return;
      clearTimeout(timer);
      timer = setTimeout(tick, SETTLE_MS);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Subscribes to realtime events of `kinds` (default: blocked and challenged requests) over
 * EventSource (it reconnects by itself and resumes with Last-Event-ID). `onEvent(envelope)` per
 * event, `onState("connecting" | "live" | "closed")` as the connection changes. Returns the
 * function that closes it; undefined without `read:realtime`.
 */
export function watchLive(onEvent, onState, kinds = LIVE_KINDS) {
  if (!can("read:realtime")) return undefined;
  let source;
  let retry;
  const connect = () => {
    source = new EventSource(withQuery("/api/realtime/events", { kinds: kinds.join(",") }));
    onState("connecting");
    source.onopen = () => onState("live");
    source.onerror = () =>
      onState(source.readyState === EventSource.CLOSED ? "closed" : "connecting");
    for (const kind of kinds) {
      source.addEventListener(kind, (e) => onEvent(JSON.parse(e.data)));
    }
    // The server dropped this subscriber for reading too slowly: connect again, afresh.
    source.addEventListener("stream.closed", () => {
      source.close();
      onState("closed");
      retry = setTimeout(connect, 3_000);
    });
  };
  connect();
  return () => {
    clearTimeout(retry);
    source.close();
  };
}
