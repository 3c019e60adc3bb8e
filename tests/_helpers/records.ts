/** Access-log record fixtures. */
import type { AccessRecord } from "../../mod/access_log/record.ts";

let n = 0;

export function record(overrides: Partial<AccessRecord> = {}): AccessRecord {
  n++;
  // The fields in the data plane's order (ArrivingRecord), which the stored JSON keeps.
  return {
    trace_id: n.toString(16).padStart(32, "0"),
    time: Date.UTC(2026, 0, 1),
    peer_ip: "192.0.2.1",
    proto: "http",
    method: "GET",
    host: "shop.test",
    path: "/",
    query: "",
    user_agent: null,
    site_id: "s1",
    site: "shop",
    client_ip: "192.0.2.1",
    status: 200,
    action: "pass",
    chain: [{ check: "site", result: "match", us: 1 }],
    finding: null,
    findings: 0,
    upstream: null,
    bytes_in: 0,
    bytes_out: 0,
    latency_us: { total: 10, waf: 5, upstream: 5 },
    ...overrides,
  };
}
