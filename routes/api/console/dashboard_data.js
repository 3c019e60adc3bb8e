// Where the dashboard's figures come from, in one module so the source can change without
// touching the page: today the access-log summary (`GET /api/logs/summary`), the upstream
// health, the access-log pipeline counters and the pending ALAP decisions, polled every
// `POLL_MS`. When the monitoring API and the realtime feed exist, this module switches to them.
import { get } from "./api.js";
import { can } from "./session.js";

export const POLL_MS = 10_000;

/** Whatever the user may read, each part independent so one failure does not blank the rest. */
export async function loadDashboard(minutes) {
  const part = (permission, path, query) =>
    can(permission)
      ? get(path, query).then((data) => ({ data }), (error) => ({ error }))
      : Promise.resolve({ hidden: true });
  const [summary, health, stats, alap, sites] = await Promise.all([
    part("read:logs", "/api/logs/summary", { minutes, buckets: 60, top: 8 }),
    part("read:sites", "/api/sites/health"),
    part("read:logs", "/api/logs/stats"),
    part("read:logs", "/api/alap/decisions", { status: "proposed" }),
    part("read:sites", "/api/sites"),
  ]);
  const names = new Map((sites.data?.items ?? []).map((s) => [s.id, s.name]));
  return { summary, health, stats, alap, siteName: (id) => names.get(id) ?? id ?? "-" };
}

/** Calls `onData` now and every POLL_MS until the returned function is called. */
export function watchDashboard(minutes, onData) {
  let stopped = false;
  let timer;
  const tick = async () => {
    const data = await loadDashboard(minutes);
    if (stopped) return;
    onData(data);
    timer = setTimeout(tick, POLL_MS);
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
