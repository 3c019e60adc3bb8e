/**
 * The data listener's own HTTP/1.1 server (`net/http1_server.ts`): compared with
 * `Deno.serve` on the same edge-case requests, and driven over raw sockets for what a `fetch`
 * client does not do (pipelining, keep-alive, chunked bodies in pieces, 100-continue, bodies
 * that break off, smuggling shapes), alone and through the real data plane.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { PROBE_CASES, probeAll, type ProbeResult } from "../_helpers/http1_probe_cases.ts";
import { serveHttp1 } from "../../net/http1_server.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { addSite } from "../_helpers/protection.ts";
import { AnswerReader } from "../_helpers/raw_socket.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the echo handler saw, as JSON (the probe's and these tests' server). */
async function echo(req: Request): Promise<Response> {
  const path = req.url.slice(req.url.indexOf("/", 8));
  const url = { pathname: path };
  if (url.pathname === "/nobody") return new Response(null, { status: 204 });
  if (url.pathname === "/notmod") return new Response(null, { status: 304 });
  if (url.pathname === "/refuse") return new Response("too large", { status: 413 });
  if (url.pathname === "/stream") {
    let n = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(c) {
          if (n === 3) return c.close();
          if (n > 0) await sleep(5);
          c.enqueue(enc.encode(`part${++n};`));
        },
      }),
    );
  }
  let body = -1;
  let error = "";
  if (req.body !== null) {
    try {
      body = (await req.bytes()).length;
    } catch (err) {
      error = (err as Error).message;
    }
  }
  const headers: string[] = [];
  req.headers.forEach((v, k) => headers.push(`${k}=${v}`));
  return Response.json({ method: req.method, url: req.url, headers, body, error });
}

async function withOwn<T>(fn: (port: number) => Promise<T>): Promise<T> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const server = serveHttp1(listener, (req) => echo(req));
  try {
    return await fn((listener.addr as Deno.NetAddr).port);
  } finally {
    await server.close();
  }
}

async function connect(port: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  return {
    conn,
    responses: new AnswerReader(conn, { decoding: "utf-8", lowerCase: true }),
    send: (s: string) => conn.write(enc.encode(s)),
  };
}

/**
 * The answers that differ on purpose: chunked framing checked as the connection front did, and
 * what a server behind could read differently (a fragment, a Host that is not a host, a target
 * naming another host, HTTP/1.1 without Host; docs/data-plane.md, "Request parsing rules").
 */
const STRICTER = new Set([
  "chunk size leading space",
  "chunk size 0x",
  "chunk size bare lf",
  "chunk data bare lf",
  "chunk data too long",
  "chunk size long",
  "chunk size overflow",
  "chunk last bare lf",
  "target byte 23",
  "query byte 23",
  "fragment",
  "HTTP/1.1 no host",
  "absolute form other host",
  "host with path",
  "host with userinfo",
  "host bad port",
  "host space",
]);

/** A `host byte` case whose byte is not one of a reg-name's (refused by the own server). */
function badHostByte(name: string): boolean {
  const m = /^host byte (..)$/.exec(name);
  return m !== null &&
    !/[A-Za-z0-9\-._~!$&'()*+,;=%]/.test(String.fromCharCode(parseInt(m[1]!, 16)));
}

function normal(r: ProbeResult): string {
  return `${r.status} ${
    r.echo.replace(/"body":0\b/, '"body":-1').replace(/localhost:\d+/, "localhost")
  }`;
}

Deno.test("the own server answers edge-case requests as Deno.serve (hyper) does", async () => {
  const deno = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = req.body ? (await req.bytes()).length : -1;
    const headers: string[] = [];
    req.headers.forEach((v, k) => headers.push(`${k}=${v}`));
    return Response.json({ method: req.method, url: req.url, headers, body, error: "" });
  });
  const theirs = await probeAll(deno.addr.port, PROBE_CASES);
  await deno.shutdown();
  const ours = await withOwn((port) => probeAll(port, PROBE_CASES));
  const differ: string[] = [];
  for (let i = 0; i < PROBE_CASES.length; i++) {
    const a = theirs[i]!;
    const b = ours[i]!;
    if (a.name === "expect continue") {
      // hyper sends 100 first; the body came with the head, so the answer here is final.
      assertEquals([a.status, b.status], [100, 200]);
      continue;
    }
    if (STRICTER.has(a.name) || badHostByte(a.name)) {
      assertEquals(b.status, 400, a.name);
      continue;
    }
    if (normal(a) !== normal(b)) differ.push(`${a.name}: ${normal(a)} / ${normal(b)}`);
  }
  assertEquals(differ, []);
  ok(ours.filter((r) => r.status === 400).length > 500, "the refusals were exercised");
});

Deno.test("pipelined requests are answered in order on one connection, bodies framed each way", async () => {
  await withOwn(async (port) => {
    const { conn, responses, send } = await connect(port);
    await send(
      "GET /one HTTP/1.1\r\nHost: a.test\r\n\r\n" +
        "POST /two HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello" +
        "POST /three HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
        "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n" +
        "HEAD /four HTTP/1.1\r\nHost: a.test\r\n\r\n" +
        "GET /nobody HTTP/1.1\r\nHost: a.test\r\n\r\n" +
        "GET /notmod HTTP/1.1\r\nHost: a.test\r\n\r\n" +
        "GET /five HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    const one = await responses.next();
    assertEquals(JSON.parse(one!.body).url, "http://a.test/one");
    const two = await responses.next();
    assertEquals([JSON.parse(two!.body).url, JSON.parse(two!.body).body], ["http://a.test/two", 5]);
    const three = await responses.next();
    assertEquals(JSON.parse(three!.body).body, 5);
    const four = await responses.next(true);
    assertEquals(four!.status, 200);
    ok(/content-length: \d+/.test(four!.head), "HEAD keeps the length, sends no body");
    assertEquals((await responses.next())!.status, 204);
    assertEquals((await responses.next())!.status, 304);
    const five = await responses.next();
    assertEquals(JSON.parse(five!.body).url, "http://a.test/five");
    ok(five!.head.includes("connection: close"));
    ok(await responses.closed(), "closed after Connection: close");
    conn.close();
  });
});

Deno.test("a body sent in pieces (chunked, split anywhere) arrives whole; keep-alive goes on", async () => {
  await withOwn(async (port) => {
    const { conn, responses, send } = await connect(port);
    const raw = "POST /up HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
      "5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n";
    for (const ch of raw) {
      await send(ch);
      await sleep(1);
    }
    const r = await responses.next();
    assertEquals(JSON.parse(r!.body).body, 12);
    await send("GET /again HTTP/1.1\r\nHost: a.test\r\n\r\n");
    assertEquals(JSON.parse((await responses.next())!.body).url, "http://a.test/again");
    conn.close();
  });
});

Deno.test("Expect: 100-continue gets 100 when the body is read, and none when it is refused", async () => {
  await withOwn(async (port) => {
    const { conn, responses, send } = await connect(port);
    await send(
      "POST /up HTTP/1.1\r\nHost: a.test\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n",
    );
    const interim = await responses.next();
    assertEquals(interim!.status, 100);
    await send("data");
    assertEquals(JSON.parse((await responses.next())!.body).body, 4);
    // Refused without reading: the final answer comes at once and the connection closes
    // (the client would wait for a 100 before sending its body).
    await send(
      "POST /refuse HTTP/1.1\r\nHost: a.test\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n",
    );
    const refused = await responses.next();
    assertEquals(refused!.status, 413);
    ok(refused!.head.includes("connection: close"));
    ok(await responses.closed());
    conn.close();
  });
});

Deno.test("a body that breaks off fails the handler's read; the server keeps serving", async () => {
  await withOwn(async (port) => {
    const half = await connect(port);
    await half.send("POST /up HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\n\r\nshort");
    await half.conn.closeWrite();
    const r = await half.responses.next();
    assertEquals(JSON.parse(r!.body).error, "the request body ended early");
    half.conn.close();
    // A client that closes entirely mid-chunk.
    const gone = await connect(port);
    await gone.send(
      "POST /up HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
    );
    gone.conn.close();
    const after = await connect(port);
    await after.send("GET /after HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assertEquals(JSON.parse((await after.responses.next())!.body).url, "http://a.test/after");
    after.conn.close();
  });
});

Deno.test("a GET body is dropped, never read as the next request (no smuggling)", async () => {
  await withOwn(async (port) => {
    const { conn, responses, send } = await connect(port);
    const inner = "GET /smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n";
    await send(
      `GET /first HTTP/1.1\r\nHost: a.test\r\nContent-Length: ${inner.length}\r\n\r\n${inner}` +
        "GET /second HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    const first = JSON.parse((await responses.next())!.body);
    assertEquals([first.url, first.body], ["http://a.test/first", -1]);
    assertEquals(JSON.parse((await responses.next())!.body).url, "http://a.test/second");
    ok(await responses.closed());
    conn.close();
    // Content-Length with Transfer-Encoding is refused outright, and the connection closed.
    const both = await connect(port);
    await both.send(
      "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n",
    );
    assertEquals((await both.responses.next())!.status, 400);
    ok(await both.responses.closed());
    both.conn.close();
  });
});

Deno.test("a stream without a length goes out chunked (HTTP/1.1) or close-delimited (HTTP/1.0)", async () => {
  await withOwn(async (port) => {
    const a = await connect(port);
    await a.send("GET /stream HTTP/1.1\r\nHost: a.test\r\n\r\n");
    const r = await a.responses.next();
    ok(r!.head.includes("transfer-encoding: chunked"), r!.head);
    assertEquals(r!.body, "part1;part2;part3;");
    a.conn.close();
    const b = await connect(port);
    await b.send("GET /stream HTTP/1.0\r\nHost: a.test\r\n\r\n");
    const old = await b.responses.next();
    ok(!old!.head.includes("transfer-encoding"), old!.head);
    assertEquals(old!.body, "part1;part2;part3;");
    b.conn.close();
  });
});

Deno.test("an HTTP/1.0 client keeps its connection only when it asks, and is told so", async () => {
  await withOwn(async (port) => {
    const { conn, responses, send } = await connect(port);
    await send("GET /k1 HTTP/1.0\r\nHost: a.test\r\nConnection: keep-alive\r\n\r\n");
    const kept = await responses.next();
    ok(kept!.head.includes("connection: keep-alive"), kept!.head);
    await send("GET /k2 HTTP/1.0\r\nHost: a.test\r\n\r\n");
    const last = await responses.next();
    assertEquals(JSON.parse(last!.body).url, "http://a.test/k2");
    ok(last!.head.includes("connection: close"), last!.head);
    ok(await responses.closed());
    conn.close();
  });
});

Deno.test("an answer given before a large body is read reaches the client (lingering close)", async () => {
  await withOwn(async (port) => {
    const { conn, responses, send } = await connect(port);
    await send("POST /refuse HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10000000\r\n\r\n");
    // Keep sending while the answer is on its way: a reset would destroy it.
    const writing = (async () => {
      const block = new Uint8Array(64 * 1024);
      for (let i = 0; i < 8; i++) if (await conn.write(block).catch(() => null) === null) return;
    })();
    const r = await responses.next();
    assertEquals([r!.status, r!.body], [413, "too large"]);
    await writing;
    conn.close();
  });
});

Deno.test("through the data plane: keep-alive and pipelining, each answer with its trace id and record; a refused head is recorded", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { mode: "off" });
  const port = Number(new URL(s.dataUrl).port);
  const { conn, responses, send } = await connect(port);
  await send(
    "GET /a HTTP/1.1\r\nHost: shop.test\r\n\r\n" +
      "POST /b HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
  );
  const traces: string[] = [];
  for (const path of ["/a", "/b"]) {
    const r = await responses.next();
    assertEquals(r!.status, 200);
    assertEquals(JSON.parse(r!.body).path, path);
    traces.push(/x-waf-trace-id: (\w+)/.exec(r!.head)![1]!);
  }
  assertEquals(up.seen.at(-1)?.body, "body");
  await send("GET /c HTTP/1.1\r\nHost: shop.test\r\nX-Bad: a\u0001b\r\n\r\n");
  assertEquals((await responses.next())!.status, 400);
  ok(await responses.closed());
  conn.close();
  for (const t of traces) ok(await s.dataPlane.accessLog.get(t), `record for ${t}`);
  const rows = await s.dataPlane.accessLog.list({ limit: 10 });
  const refused = rows.map((r) => JSON.parse(r.record)).find((r) => r.path === "/c");
  assertEquals(
    [refused?.status, refused?.site, refused?.chain.at(-1).check, refused?.chain.at(-1).result],
    [400, "shop", "framing", "invalid header value"],
  );
});

Deno.test("through the data plane: HTTP/2 with prior knowledge and a WebSocket are handed to Deno.serve", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { mode: "off", hosts: ["127.0.0.1"] });
  // The upgrade request is handed over with the bytes already read; frames then go both ways.
  const ws = new WebSocket(`${s.dataUrl.replace("http", "ws")}/ws`);
  const echoed = await new Promise<string>((resolve, reject) => {
    ws.onopen = () => ws.send("x");
    ws.onmessage = (e) => resolve(e.data);
    ws.onerror = () => reject(new Error("WebSocket failed"));
  });
  assertEquals(echoed, "echo:x");
  const closed = new Promise<void>((resolve) => ws.onclose = () => resolve());
  ws.close();
  await closed;
  const out = await new Deno.Command("curl", {
    args: [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_version} %{http_code}",
      "--http2-prior-knowledge",
      `${s.dataUrl}/h2`,
    ],
    stdout: "piped",
    stderr: "null",
  }).output().catch(() => undefined);
  // curl is on the development and CI machines; without it only the WebSocket is checked.
  if (out) assertEquals(dec.decode(out.stdout), "2 200");
});
