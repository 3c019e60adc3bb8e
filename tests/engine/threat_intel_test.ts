import { assertEquals, ok } from "../_helpers/assert.ts";
import { formatCidr } from "../../engine/ip_address.ts";
import { type FeedFormat, parseFeed } from "../../engine/threat_intel.ts";

const LIMITS = { maxEntries: 100, maxBytes: 10_000 };

function nets(text: string, format: FeedFormat): string[] {
  const r = parseFeed(text, format, LIMITS);
  ok(r.ok, r.ok ? "" : r.error);
  return r.networks.map(formatCidr);
}

Deno.test("parseFeed() reads a plain list with comments and trailing notes", () => {
  const text =
    "# header\n1.2.3.4\n\n10.0.0.0/8 ; SBL123\n2001:db8::/32\n; another comment\nnot-an-ip\n";
  assertEquals(nets(text, { kind: "plain" }), [
    "1.2.3.4/32",
    "10.0.0.0/8",
    "2001:db8:0:0:0:0:0:0/32",
  ]);
  const r = parseFeed(text, { kind: "plain" }, LIMITS);
  ok(r.ok);
  assertEquals(r.invalid, 1);
});

Deno.test("parseFeed() reads a CSV column by index or by header name, with quotes", () => {
  const csv =
    'first_seen,ip,"note, with comma"\n2026-01-01,5.6.7.8,"a, b"\n2026-01-02,"9.9.9.0/24",c\n';
  assertEquals(nets(csv, { kind: "csv", column: "ip" }), ["5.6.7.8/32", "9.9.9.0/24"]);
  assertEquals(nets(csv, { kind: "csv", column: 1 }), ["5.6.7.8/32", "9.9.9.0/24"]);
  assertEquals(nets("a;1.1.1.1\n", { kind: "csv", column: 1, delimiter: ";" }), ["1.1.1.1/32"]);
  const missing = parseFeed(csv, { kind: "csv", column: "address" }, LIMITS);
  assertEquals(missing, { ok: false, error: 'CSV header has no column "address"' });
});

Deno.test("parseFeed() reads JSON lists of strings or objects", () => {
  assertEquals(nets('["1.1.1.1", "2.2.0.0/16"]', { kind: "json" }), ["1.1.1.1/32", "2.2.0.0/16"]);
  assertEquals(nets('[{"ip":"3.3.3.3"},{"x":1},null]', { kind: "json", field: "ip" }), [
    "3.3.3.3/32",
  ]);
  assertEquals(parseFeed('{"a":1}', { kind: "json" }, LIMITS), {
    ok: false,
    error: "JSON feed must be a list",
  });
  const bad = parseFeed("[", { kind: "json" }, LIMITS);
  ok(!bad.ok && bad.error.startsWith("Feed is not valid JSON"));
});

Deno.test("parseFeed() refuses a feed over the byte or entry limit as a whole", () => {
  const big = Array.from({ length: 101 }, (_, i) => `10.0.0.${i}`).join("\n");
  assertEquals(parseFeed(big, { kind: "plain" }, LIMITS), {
    ok: false,
    error: "Feed has more than the limit of 100 entries",
  });
  assertEquals(parseFeed("x".repeat(10_001), { kind: "plain" }, LIMITS), {
    ok: false,
    error: "Feed is larger than the limit of 10000 bytes",
  });
});
