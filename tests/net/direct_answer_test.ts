/**
 * The own HTTP/1.1 server writing the transaction's proxied answers itself (direct_answer.ts):
 * what reaches the client, byte for byte, for what that path does differently from a
 * `Response` (field lines as the upstream sent them, bytes above 0x7f, bodyless answers on a
 * kept connection, bodies whole, streamed or gathered), and the `Response` everyone else gets.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { bytes } from "../_helpers/raw_socket.ts";
import { startRawUpstream } from "../_helpers/raw_upstream.ts";
import { startTestServer } from "../_helpers/server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { DirectAnswer, HEADER_PAIRS } from "../../net/direct_answer.ts";
import { rateLimitedPage } from "../../routes/proxy/status_page.ts";

/** One response as received: the head as latin1 text (one char a byte) and the body bytes. */
interface Raw {
  readonly status: number;
  readonly head: string;
  readonly lines: string[];
  readonly body: Uint8Array;
}

const latin1 = (b: Uint8Array) => String.fromCharCode(...b);

/** The data plane's answer to a `Request` (Deno.serve's paths), which must be a `Response`. */
async function handleRequest(
  s: Awaited<ReturnType<typeof startTestServer>>,
  url: string,
): Promise<Response> {
  const res = await s.dataPlane.proxy.handle(
    new Request(url, { headers: { host: new URL(url).host } }),
    "127.0.0.1",
    "http",
  );
  ok(res instanceof Response);
  return res;
}

/** Reads `count` responses from `conn`; `bodyless[i]` says the i-th has no body (HEAD, 204, 304). */
async function readResponses(conn: Deno.Conn, bodyless: boolean[]): Promise<Raw[]> {
  let buf = new Uint8Array(0);
  const more = async () => {
    const chunk = new Uint8Array(64 * 1024);
    const n = await conn.read(chunk);
    if (n === null) throw new Error("the server closed the connection");
    const grown = new Uint8Array(buf.length + n);
    grown.set(buf);
    grown.set(chunk.subarray(0, n), buf.length);
    buf = grown;
  };
  const out: Raw[] = [];
  for (const noBody of bodyless) {
    let end: number;
    while ((end = latin1(buf.subarray(0, Math.min(buf.length, 65536))).indexOf("\r\n\r\n")) < 0) {
      await more();
    }
    const head = latin1(buf.subarray(0, end + 4));
    buf = buf.subarray(end + 4);
    const lines = head.split("\r\n").slice(1, -2);
    const cl = lines.find((l) => l.startsWith("content-length: "));
    let body = new Uint8Array(0);
    if (!noBody && cl !== undefined) {
      const n = Number(cl.slice(16));
      while (buf.length < n) await more();
      body = buf.slice(0, n);
      buf = buf.subarray(n);
    } else if (!noBody && lines.includes("transfer-encoding: chunked")) {
      const parts: number[] = [];
      for (;;) {
        let lf: number;
        while ((lf = buf.indexOf(10)) < 0) await more();
        const size = parseInt(latin1(buf.subarray(0, lf)), 16);
        while (buf.length < lf + 1 + size + 2) await more();
        parts.push(...buf.subarray(lf + 1, lf + 1 + size));
        buf = buf.subarray(lf + 1 + size + 2);
        if (size === 0) break;
      }
      body = new Uint8Array(parts);
    }
    out.push({ status: Number(head.slice(9, 12)), head, lines, body });
  }
  return out;
}

Deno.test("a proxied answer keeps the upstream's field lines: repeats, set-cookie and bytes above 0x7f", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send(
      "HTTP/1.1 200 Fine\r\nset-cookie: a=1\r\nx-dup: 1\r\nSet-Cookie: b=2; Path=/\r\n",
      "x-dup: 2, 3\r\nx-latin: caf",
      new Uint8Array([0xe9, 0xff]),
      "\r\ndate: Mon, 01 Jan 2001 00:00:00 GMT\r\ncontent-length: 2\r\n\r\nok",
    );
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  try {
    await conn.write(bytes("GET / HTTP/1.1\r\nhost: shop.test\r\n\r\n"));
    const [r] = await readResponses(conn, [false]);
    assertEquals(r!.head.split("\r\n")[0], "HTTP/1.1 200 Fine");
    const fields = r!.lines.filter((l) => /^(set-cookie|x-dup|x-latin):/.test(l));
    assertEquals(fields, [
      "set-cookie: a=1",
      "x-dup: 1",
      "set-cookie: b=2; Path=/",
      "x-dup: 2, 3",
      "x-latin: caf\xe9\xff",
    ]);
    assertMatch(r!.lines.find((l) => l.startsWith("x-waf-trace-id: ")) ?? "", /: [0-9a-f]{32}$/);
    // Framing and the date are the server's own, once each.
    assertEquals(r!.lines.filter((l) => l.startsWith("content-length:")), ["content-length: 2"]);
    const dates = r!.lines.filter((l) => l.startsWith("date:"));
    assertEquals(dates.length, 1);
    ok(!dates[0]!.includes("2001"));
    assertEquals(latin1(r!.body), "ok");
  } finally {
    conn.close();
  }
});

Deno.test("HEAD, 204 and 304 answers carry no body and the connection serves the next request", async () => {
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      const line = req.slice(0, req.indexOf("\r\n"));
      if (line.startsWith("HEAD")) {
        await peer.send('HTTP/1.1 200 OK\r\ncontent-length: 5\r\netag: "h"\r\n\r\n');
      } else if (line.includes("/204")) {
        await peer.send("HTTP/1.1 204 No Content\r\nx-n: 204\r\n\r\n");
      } else if (line.includes("/304")) {
        await peer.send('HTTP/1.1 304 Not Modified\r\netag: "e"\r\ncontent-length: 9\r\n\r\n');
      } else await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nlast");
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  try {
    const rs: Raw[] = [];
    for (
      const [target, method, bodyless] of [
        ["/head", "HEAD", true],
        ["/204", "GET", true],
        ["/304", "GET", true],
        ["/", "GET", false],
      ] as const
    ) {
      await conn.write(bytes(`${method} ${target} HTTP/1.1\r\nhost: shop.test\r\n\r\n`));
      rs.push(...await readResponses(conn, [bodyless]));
    }
    assertEquals(rs.map((r) => r.status), [200, 204, 304, 200]);
    // HEAD keeps the length the GET would have; 304 its validators and length.
    ok(rs[0]!.lines.includes("content-length: 5"));
    ok(rs[0]!.lines.includes('etag: "h"'));
    assertEquals(rs[1]!.lines.filter((l) => /^(content-length|transfer-encoding):/.test(l)), []);
    ok(rs[1]!.lines.includes("x-n: 204"));
    ok(rs[2]!.lines.includes('etag: "e"'));
    // The last answer comes right after the bodyless ones: no stray bytes in between.
    assertEquals(latin1(rs[3]!.body), "last");
  } finally {
    conn.close();
  }
});

Deno.test("large bodies stream through whole, with their length or chunked; a small one in pieces is gathered", async () => {
  const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      if (req.startsWith("GET /length")) {
        await peer.send(`HTTP/1.1 200 OK\r\ncontent-length: ${big.length}\r\n\r\n`, big);
      } else if (req.startsWith("GET /chunked")) {
        await peer.send("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
        for (let at = 0; at < big.length; at += 1024 * 1024) {
          const part = big.subarray(at, at + 1024 * 1024);
          await peer.send(`${part.length.toString(16)}\r\n`, part, "\r\n");
        }
        await peer.send("0\r\n\r\n");
      } else {
        // 3,000 bytes in three writes with pauses: more than the first read holds.
        await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 3000\r\n\r\n", big.subarray(0, 1000));
        for (const at of [1000, 2000]) {
          await new Promise((r) => setTimeout(r, 20));
          await peer.send(big.subarray(at, at + 1000));
        }
      }
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  try {
    const rs: Raw[] = [];
    for (const target of ["/length", "/chunked", "/pieces"]) {
      await conn.write(bytes(`GET ${target} HTTP/1.1\r\nhost: shop.test\r\n\r\n`));
      rs.push(...await readResponses(conn, [false]));
    }
    ok(rs[0]!.lines.includes(`content-length: ${big.length}`));
    assertEquals(rs[0]!.body, big);
    ok(rs[1]!.lines.includes("transfer-encoding: chunked"));
    assertEquals(rs[1]!.body, big);
    ok(rs[2]!.lines.includes("content-length: 3000"));
    assertEquals(rs[2]!.body, big.subarray(0, 3000));
  } finally {
    conn.close();
  }
});

Deno.test("a reason phrase with a control byte is a 502, never written to the client", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 O\x01K\r\ncontent-length: 2\r\nx-leak: 1\r\n\r\nok");
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const r = await hostFetch(`${s.dataUrl}/`, "shop.test");
  assertEquals(r.status, 502);
  assertEquals(r.headers.has("x-leak"), false);
  await r.body?.cancel();
});

Deno.test("a Request (Deno.serve's paths) still gets a Response", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send(
      "HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nset-cookie: b=2\r\ncontent-length: 2\r\n\r\nok",
    );
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const res = await handleRequest(s, "http://shop.test/");
  assertEquals(res.status, 200);
  assertEquals(res.headers.getSetCookie(), ["a=1", "b=2"]);
  assertMatch(res.headers.get("x-waf-trace-id") ?? "", /^[0-9a-f]{32}$/);
  assertEquals(await res.text(), "ok");
});

Deno.test("pages of the own server are written whole: block, no-site and JSON, on one connection", async () => {
  await using s = await startTestServer();
  // No request here reaches the upstream: every one is answered by a page.
  s.dataPlane.sites.create(siteInput({ upstreams: ["http://127.0.0.1:9"] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  try {
    await conn.write(bytes(
      "GET /?id=1%27%20OR%201=1-- HTTP/1.1\r\nhost: shop.test\r\naccept: text/html\r\n\r\n" +
        "GET / HTTP/1.1\r\nhost: nobody.test\r\n\r\n" +
        "GET /?id=1%27%20OR%201=1-- HTTP/1.1\r\nhost: shop.test\r\naccept: application/json\r\n\r\n",
    ));
    const [blocked, noSite, json] = await readResponses(conn, [false, false, false]);
    for (const [r, status] of [[blocked!, 403], [noSite!, 404], [json!, 403]] as const) {
      assertEquals(r.status, status);
      assertEquals(r.lines.filter((l) => l === "cache-control: no-store").length, 1);
      const id = r.lines.find((l) => l.startsWith("x-waf-trace-id: "))?.slice(16) ?? "";
      assertMatch(id, /^[0-9a-f]{32}$/);
      assertEquals(r.lines.filter((l) => l.startsWith("content-length: ")).length, 1);
      ok(latin1(r.body).includes(id), "the page shows its trace id");
      assertEquals(r.lines.filter((l) => l.startsWith("date: ")).length, 1);
    }
    ok(blocked!.lines.includes("content-type: text/html; charset=utf-8"));
    assertMatch(new TextDecoder().decode(blocked!.body), /^<!doctype html>.*traceId: <code>/s);
    ok(json!.lines.includes("content-type: application/json; charset=utf-8"));
    const doc = JSON.parse(new TextDecoder().decode(json!.body));
    assertEquals(doc.code, "BLOCKED");
    assertEquals(doc.traceId, json!.lines.find((l) => l.startsWith("x-waf-trace-id: "))!.slice(16));
  } finally {
    conn.close();
  }
  // The same block through a `Request` is a `Response` with the same page.
  const res = await handleRequest(s, "http://shop.test/?id=1%27%20OR%201=1--");
  assertEquals(res.status, 403);
  assertEquals(res.headers.get("cache-control"), "no-store");
  ok((await res.text()).includes(res.headers.get("x-waf-trace-id")!));
});

Deno.test("a page for a request of the own server is a DirectAnswer holding its body whole", async () => {
  const own = Object.assign(new Request("http://shop.test/"), {
    [HEADER_PAIRS]: [["accept", "text/html"], ["host", "shop.test"]],
  });
  const page = rateLimitedPage(own, "ab".repeat(16), 7);
  ok(page instanceof DirectAnswer);
  ok(page.body instanceof Uint8Array);
  assertEquals(page.status, 429);
  assertEquals(page.headers.find(([k]) => k === "retry-after"), ["retry-after", "7"]);
  // Everyone else gets a Response with the same fields and body.
  const res = rateLimitedPage(new Request("http://shop.test/"), "ab".repeat(16), 7);
  ok(res instanceof Response);
  assertEquals(res.headers.get("retry-after"), "7");
  assertEquals(new TextDecoder().decode(page.body as Uint8Array), await res.text());
});
