import { assertEquals } from "../../_helpers/assert.ts";
import { compileTrustedProxies } from "../../../mod/data_plane/trusted_proxies.ts";
import {
  clientAddress,
  downstreamHeaders,
  upstreamHeaders,
} from "../../../routes/proxy/forwarding.ts";

const TRUSTED = compileTrustedProxies(["10.0.0.0/8"]);

Deno.test("clientAddress() ignores forwarding headers from an untrusted peer", () => {
  const h = new Headers({ "x-forwarded-for": "203.0.113.9" });
  assertEquals(clientAddress("198.51.100.1", h, TRUSTED), "198.51.100.1");
  assertEquals(clientAddress("10.0.0.1", h, compileTrustedProxies([])), "10.0.0.1");
});

Deno.test("clientAddress() takes the first untrusted hop from the right for a trusted peer", () => {
  const h = new Headers({ "x-forwarded-for": "1.1.1.1, 203.0.113.9, 10.0.0.2" });
  assertEquals(clientAddress("10.0.0.1", h, TRUSTED), "203.0.113.9");
  const all = new Headers({ "x-forwarded-for": "10.0.0.3, 10.0.0.2" });
  assertEquals(clientAddress("10.0.0.1", all, TRUSTED), "10.0.0.3");
});

Deno.test("clientAddress() reads Forwarded for= when there is no X-Forwarded-For", () => {
  const h = new Headers({ forwarded: 'for="[2001:db8::7]:4711";proto=https, for=10.0.0.2' });
  assertEquals(clientAddress("10.0.0.1", h, TRUSTED), "2001:db8::7");
  const port = new Headers({ forwarded: "for=203.0.113.4:5000" });
  assertEquals(clientAddress("10.0.0.1", port, TRUSTED), "203.0.113.4");
});

Deno.test("clientAddress() takes an X-Forwarded-For hop with a port as its address, and no hop that is not an address", () => {
  // Some proxies (Azure Application Gateway) write `address:port`: the address is the client's
  // (an IP list entry for it must match, and X-Real-IP carries an address, as nginx's does).
  const cases: Array<[string, string]> = [
    ["198.51.100.7:5678", "198.51.100.7"],
    ["[2001:db8::7]:443", "2001:db8::7"],
    ["[2001:db8::7]", "2001:db8::7"],
    ["2001:db8::7", "2001:db8::7"],
    ["203.0.113.9, 198.51.100.7:5678", "198.51.100.7"],
    // Not an address: the chain stops there and the peer stays the client (nginx's realip).
    ["not-an-ip", "10.0.0.1"],
    ["203.0.113.9, <script>", "10.0.0.1"],
    ["1.2.3.4 5.6.7.8", "10.0.0.1"],
  ];
  for (const [xff, expected] of cases) {
    const h = new Headers({ "x-forwarded-for": xff });
    assertEquals(clientAddress("10.0.0.1", h, TRUSTED), expected, xff);
  }
  const garbage = new Headers({ forwarded: "for=not-an-ip" });
  assertEquals(clientAddress("10.0.0.1", garbage, TRUSTED), "10.0.0.1");
});

Deno.test("upstreamHeaders() drops hop-by-hop headers, including those named by Connection", () => {
  const incoming = new Headers({
    connection: "keep-alive, x-secret-hop",
    "keep-alive": "timeout=5",
    "x-secret-hop": "1",
    te: "trailers",
    "proxy-authorization": "Basic abc",
    "x-kept": "yes",
    host: "shop.test",
  });
  const out = new Headers(upstreamHeaders([...incoming], {
    peer: "198.51.100.1",
    clientIp: "198.51.100.1",
    trustedPeer: false,
    proto: "http",
    host: "shop.test",
  }));
  for (const name of ["connection", "keep-alive", "x-secret-hop", "te", "proxy-authorization"]) {
    assertEquals(out.has(name), false, name);
  }
  assertEquals(out.get("x-kept"), "yes");
  assertEquals(out.get("host"), "shop.test");
});

Deno.test("upstreamHeaders() replaces forged forwarding headers from an untrusted peer", () => {
  const incoming = new Headers({
    "x-forwarded-for": "6.6.6.6",
    forwarded: "for=6.6.6.6",
    "x-forwarded-proto": "https",
    "x-real-ip": "6.6.6.6",
  });
  const out = new Headers(upstreamHeaders([...incoming], {
    peer: "2001:db8::1",
    clientIp: "2001:db8::1",
    trustedPeer: false,
    proto: "http",
    host: "shop.test:8080",
  }));
  assertEquals(out.get("x-forwarded-for"), "2001:db8::1");
  assertEquals(out.get("x-forwarded-proto"), "http");
  assertEquals(out.get("x-forwarded-host"), "shop.test:8080");
  assertEquals(out.get("forwarded"), 'for="[2001:db8::1]";host="shop.test:8080";proto=http');
  assertEquals(out.get("x-real-ip"), "2001:db8::1");
});

Deno.test("upstreamHeaders() extends the chain a trusted proxy sent", () => {
  const incoming = new Headers({
    "x-forwarded-for": "203.0.113.9",
    forwarded: "for=203.0.113.9",
    "x-forwarded-proto": "https",
    "x-real-ip": "10.9.9.9",
  });
  const out = new Headers(upstreamHeaders([...incoming], {
    peer: "10.0.0.1",
    clientIp: "203.0.113.9",
    trustedPeer: true,
    proto: "http",
    host: "shop.test",
  }));
  assertEquals(out.get("x-forwarded-for"), "203.0.113.9, 10.0.0.1");
  assertEquals(out.get("x-forwarded-proto"), "https");
  assertEquals(out.get("forwarded"), 'for=203.0.113.9, for=10.0.0.1;host="shop.test";proto=http');
  // The address the WAF decided on (trusted proxies walked), not the trusted proxy's copy.
  assertEquals(out.get("x-real-ip"), "203.0.113.9");
});

Deno.test("downstreamHeaders() keeps every Set-Cookie and adds the trace id", () => {
  const upstream = new Headers([
    ["set-cookie", "a=1"],
    ["set-cookie", "b=2"],
    ["connection", "close"],
    ["transfer-encoding", "chunked"],
    ["x-waf-trace-id", "forged"],
  ]);
  const out = new Headers(downstreamHeaders(upstream, "t".repeat(32)));
  assertEquals(out.getSetCookie(), ["a=1", "b=2"]);
  assertEquals(out.has("connection"), false);
  assertEquals(out.has("transfer-encoding"), false);
  assertEquals(out.get("x-waf-trace-id"), "t".repeat(32));
});

Deno.test("downstreamHeaders() drops the fields each Connection line names, keep-alive and close alone naming none", () => {
  const pairs: Array<[string, string]> = [
    ["connection", "keep-alive"],
    ["keep-alive", "timeout=5"],
    ["connection", "X-Hop-A , close"],
    ["connection", "close"],
    ["x-hop-a", "1"],
    ["x-hop-b", "2"],
    ["connection", "x-hop-b"],
    ["x-kept", "3"],
  ];
  assertEquals(downstreamHeaders(pairs, "t".repeat(32)), [
    ["x-kept", "3"],
    ["x-waf-trace-id", "t".repeat(32)],
  ]);
  assertEquals(downstreamHeaders([["connection", "close"], ["x-a", "1"]], "t"), [
    ["x-a", "1"],
    ["x-waf-trace-id", "t"],
  ]);
});
