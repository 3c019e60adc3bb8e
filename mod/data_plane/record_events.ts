/**
 * The data plane's part of the runtime log: every access record passes here on its way to the
 * access log, and blocks and upstream failures become rate-limited `info` lines
 * (`event_log.ts`), so an operator watching `waf.log` sees attacks and broken upstreams without
 * an attack being able to flood the log. Two field reads per record on the request path.
 */
import type { EventLog } from "../core/event_log.ts";
import type { AccessRecord } from "../access_log/record.ts";

const UPSTREAM_FAILED = new Set(["timeout", "unreachable", "invalid"]);

/**
 * Whether a record is one the runtime log's events or the realtime feed look at (blocked,
 * challenged, a failed upstream): a data-plane worker sends the main thread these records
 * whole, and only the access-log row and its counters for the others.
 */
export function isEventRecord(r: AccessRecord): boolean {
  if (r.action === "block" || r.action === "challenge") return true;
  const last = r.chain[r.chain.length - 1];
  return last?.check === "upstream" && UPSTREAM_FAILED.has(last.result);
}

export function recordEvents(events: EventLog): (record: AccessRecord) => void {
  return (r) => {
    if (r.action === "block") {
      const last = r.chain[r.chain.length - 1];
      events.event("block", "request blocked", {
        trace_id: r.trace_id,
        site: r.site,
        client_ip: r.client_ip,
        method: r.method,
        path: r.path,
        status: r.status,
        check: last?.check,
        rule: last?.rule ?? r.finding?.rule,
        class: r.finding?.class,
      });
      return;
    }
    const last = r.chain[r.chain.length - 1];
    if (last?.check === "upstream" && UPSTREAM_FAILED.has(last.result)) {
      events.event("upstream_failure", "upstream failed", {
        trace_id: r.trace_id,
        site: r.site,
        upstream: r.upstream,
        result: last.result,
        cause: last.rule,
        status: r.status,
      });
    }
  };
}
