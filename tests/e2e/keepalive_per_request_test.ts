/**
 * The front's own HTTP/1.1 server builds a connection's handler once (dd7f130): what belongs to
 * one request must still be read per request on a keep-alive connection, whether the requests
 * come one after the other or pipelined. Behind a trusted proxy the client address is each
 * request's X-Forwarded-For, the upstream gets each request's own chain, and each access-log
 * record has its own trace id, client, method, path and HTTP version.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite } from "../_helpers/protection.ts";
import { AnswerReader, bytes } from "../_helpers/raw_socket.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const UA = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0";

function request(method: string, path: string, client: string, version = "1.1"): string {
  return `${method} ${path} HTTP/${version}\r\nHost: shop.test\r\nUser-Agent: ${UA}\r\n` +
    `X-Forwarded-For: ${client}\r\n${method === "POST" ? "Content-Length: 2\r\n\r\nab" : "\r\n"}`;
}

interface Stored {
  client_ip: string;
  method: string;
  path: string;
  status: number;
  latency_us: { total: number; waf: number; upstream: number | null };
  chain: { check: string; us: number }[];
}

async function recordOf(s: TestServer, traceId: string): Promise<Stored> {
  const row = await s.dataPlane.accessLog.get(traceId);
  return JSON.parse(row!.record);
}

for (
  const [where, config] of [
    ["on the main thread", {}],
    ["in a data worker", { server: { data: { workers: 2 } } }],
  ] as const
) {
  Deno.test(`${where}, on one keep-alive connection every request keeps its own client, trace id and record`, () =>
    keepAlive(config));
}

async function keepAlive(config: Record<string, unknown>) {
  await using up = startUpstream();
  await using s = await startTestServer({ config });
  addSite(s, up.url);
  const url = new URL(s.dataUrl);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(url.port) });
  const reader = new AnswerReader(conn, { lowerCase: true });
  const enc = new TextEncoder();
  const traces: string[] = [];
  const trace = (head: string) => /x-waf-trace-id: (\w+)/.exec(head)?.[1] ?? "";
  // One after the other.
  const sequential: [string, string, string][] = [
    ["GET", "/one", "203.0.113.1"],
    ["POST", "/two", "203.0.113.2"],
  ];
  for (const [method, path, client] of sequential) {
    await conn.write(enc.encode(request(method, path, client)));
    const a = await reader.next();
    assertEquals(a?.status, 200);
    traces.push(trace(a!.head));
  }
  // Pipelined: three requests in one write.
  await conn.write(bytes(
    request("GET", "/three", "203.0.113.3"),
    request("DELETE", "/four", "2001:db8::4"),
    request("GET", "/five", "198.51.100.5"),
  ));
  for (let i = 0; i < 3; i++) {
    const a = await reader.next();
    assertEquals(a?.status, 200);
    traces.push(trace(a!.head));
  }
  conn.close();
  assertEquals(new Set(traces).size, 5, `five trace ids: ${traces}`);
  assertEquals(up.seen.map((e) => [e.method, e.path, e.headers["x-forwarded-for"]]), [
    ["GET", "/one", "203.0.113.1, 127.0.0.1"],
    ["POST", "/two", "203.0.113.2, 127.0.0.1"],
    ["GET", "/three", "203.0.113.3, 127.0.0.1"],
    ["DELETE", "/four", "2001:db8::4, 127.0.0.1"],
    ["GET", "/five", "198.51.100.5, 127.0.0.1"],
  ]);
  const records: Stored[] = [];
  for (const t of traces) records.push(await recordOf(s, t));
  assertEquals(records.map((r) => [r.client_ip, r.method, r.path, r.status]), [
    ["203.0.113.1", "GET", "/one", 200],
    ["203.0.113.2", "POST", "/two", 200],
    ["203.0.113.3", "GET", "/three", 200],
    ["2001:db8::4", "DELETE", "/four", 200],
    ["198.51.100.5", "GET", "/five", 200],
  ]);
  // The upstream's latency and its chain entry end at the same instant: the entry (from the
  // check before the upstream was asked) is never shorter than the latency, which is part of
  // the total.
  for (const r of records) {
    const upstream = r.latency_us.upstream!;
    const entry = r.chain.find((c) => c.check === "upstream")!;
    ok(upstream >= 0 && entry.us >= upstream - 1, `chain ${entry.us} us, upstream ${upstream} us`);
    ok(r.latency_us.total >= upstream, `total ${r.latency_us.total} us, upstream ${upstream} us`);
    assertEquals(r.latency_us.waf, r.latency_us.total - upstream);
  }
}
