/**
 * The HTTP/1.1 upstream client against real peers on loopback: a Deno server, misbehaving
 * raw-socket upstreams, nginx (skipped when it is not installed) and a TLS upstream.
 */
import { ignoreWithout, missing, probe } from "../../_helpers/services.ts";
import { streamOf, upstreamRequest } from "../../_helpers/upstream_request.ts";
import { assertEquals, assertRejects, ok } from "../../_helpers/assert.ts";
import { type RawPeer, startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { FakeTimers, settlesWithin, stillPending } from "../../_helpers/fake_timers.ts";
import { systemClock } from "../../../mod/core/clock.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createUpstreamPool, type Upstream } from "../../../mod/data_plane/upstream_pool.ts";
import { createCa, createLeaf } from "../../../mod/tls/x509.ts";
import { createHttp1Upstream } from "../../../net/upstream/http1_client.ts";
import { UpstreamProtocolError } from "../../../net/upstream/http1_parse.ts";
import type { HeaderPairs } from "../../../net/http1_head.ts";
import { isTimeout, type UpstreamResponse } from "../../../net/upstream/upstream_client.ts";

function upstreamOf(url: string): Upstream {
  return createUpstreamPool([url], systemClock).upstreams[0]!;
}

const request = upstreamRequest;

function header(headers: HeaderPairs, name: string): string | undefined {
  return headers.find(([n]) => n === name)?.[1];
}

async function text(res: UpstreamResponse | Response): Promise<string> {
  if (res instanceof Response) return await res.text();
  return await new Response(res.body).text();
}

/** A script answering every request on a connection with `answer(request, index)`. */
function answering(answer: (req: string, n: number) => string) {
  return async (peer: RawPeer) => {
    for (let n = 0;; n++) {
      const req = await peer.readRequest();
      if (req === null) return;
      await peer.send(answer(req, n));
    }
  };
}

const OK = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

/** Signals from one side of a test to the other, kept until taken (one `next` per `send`). */
function signals() {
  const sent: number[] = [];
  const waiting: Array<() => void> = [];
  let count = 0;
  return {
    send() {
      const w = waiting.shift();
      if (w) w();
      else sent.push(count++);
    },
    next(): Promise<void> {
      if (sent.shift() !== undefined) return Promise.resolve();
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

/**
 * An upstream script answering each request in `pieces`, each sent when the test says
 * (`piece.send()`); `arrived` is signalled when a request has been read.
 */
function stepwise(...pieces: string[]) {
  const arrived = signals();
  const piece = signals();
  const script = async (peer: RawPeer) => {
    for (;;) {
      if ((await peer.readRequest()) === null) return;
      arrived.send();
      for (const p of pieces) {
        await piece.next();
        await peer.send(p);
      }
    }
  };
  return { arrived, piece, script };
}

/** The outcome of `promise`: what it rejected with, or undefined when it resolved. */
function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => undefined, (e) => e);
}

/**
 * An upstream whose first connection answers once, then closes on the next request without
 * answering (the race with an upstream's idle timeout); later connections answer every request.
 */
async function firstDiesOnItsSecondRequest(peer: RawPeer): Promise<void> {
  await peer.readRequest();
  await peer.send(OK);
  if (peer.index === 0) {
    await peer.readRequest();
    return;
  }
  for (;;) {
    if ((await peer.readRequest()) === null) return;
    await peer.send(OK);
  }
}

Deno.test("http1 client: requests and bodies against a Deno server, one pooled connection", async () => {
  await using up = startUpstream();
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    const get = await client.send(u, request({ pathAndQuery: "/a/b?x=1" })) as UpstreamResponse;
    assertEquals(get.status, 200);
    assertEquals(header(get.headers, "x-upstream"), "upstream");
    const echo = JSON.parse(await text(get));
    assertEquals([echo.method, echo.path, echo.query], ["GET", "/a/b", "?x=1"]);
    assertEquals(echo.headers["host"], "shop.test");

    const posted = await client.send(
      u,
      request({
        method: "POST",
        upstreamHeaders: [["host", "shop.test"], ["content-length", "99"]],
        upstreamBody: new TextEncoder().encode("name=value"),
      }),
    );
    const p = JSON.parse(await text(posted));
    assertEquals([p.body, p.headers["content-length"]], ["name=value", "10"]);

    // A streamed body without a declared length goes chunked.
    const streamed = await client.send(
      u,
      request({ method: "PUT", upstreamBody: streamOf("ab", "cd", "e") }),
    );
    const s = JSON.parse(await text(streamed));
    assertEquals([s.body, s.headers["transfer-encoding"]], ["abcde", "chunked"]);

    // A declared length is kept for a streamed body.
    const declared = await client.send(
      u,
      request({
        method: "PUT",
        upstreamHeaders: [["host", "shop.test"], ["content-length", "4"]],
        upstreamBody: streamOf("wx", "yz"),
      }),
    );
    const d = JSON.parse(await text(declared));
    assertEquals([d.body, d.headers["content-length"]], ["wxyz", "4"]);

    // A large body streams through in pieces.
    const big = await client.send(u, request({ pathAndQuery: "/big?n=3000000" }));
    ok(big.body instanceof ReadableStream, "a body larger than one read streams");
    assertEquals((await text(big)).length, 3_000_000);

    const head = await client.send(u, request({ method: "HEAD", pathAndQuery: "/big?n=10" }));
    assertEquals(head.body, null);
    // The connection survives a HEAD answer with a Content-Length and no body.
    assertEquals(await text(await client.send(u, request({ pathAndQuery: "/big?n=5" }))), "aaaaa");
  } finally {
    client.close();
  }
});

Deno.test("http1 client: keep-alive reuses one connection; no body for 204 and 304", async () => {
  await using up = startRawUpstream(answering((req) => {
    if (req.startsWith("GET /204")) return "HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n";
    if (req.startsWith("GET /304")) return "HTTP/1.1 304 Not Modified\r\netag: x\r\n\r\n";
    return OK;
  }));
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    for (const path of ["/", "/204", "/304", "/"]) {
      const res = await client.send(u, request({ pathAndQuery: path }));
      if (path === "/") assertEquals(await text(res), "ok");
      else {assertEquals([res.status, (res as UpstreamResponse).body], [
          Number(path.slice(1)),
          null,
        ]);}
    }
    assertEquals(up.connections, 1);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: chunked with extensions and trailers; 100-continue skipped", async () => {
  await using up = startRawUpstream(
    answering((req) =>
      req.startsWith("GET /continue")
        ? "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n" + OK
        : "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-sum\r\n\r\n" +
          "5;name=value\r\nhello\r\n1 ; ext\r\n \r\n5\r\nworld\r\n0\r\nx-sum: 1\r\nx-more: 2\r\n\r\n"
    ),
  );
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    const res = await client.send(u, request()) as UpstreamResponse;
    assertEquals(await text(res), "hello world");
    assertEquals(header(res.headers, "x-sum"), undefined, "trailers are not headers");
    const cont = await client.send(u, request({ pathAndQuery: "/continue" }));
    assertEquals([cont.status, await text(cont)], [200, "ok"]);
    assertEquals(up.connections, 1, "the connection is reused after the trailers");
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a chunked body arriving slowly streams in order", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nab");
    await new Promise((r) => setTimeout(r, 30));
    await peer.send("c\r\n");
    await new Promise((r) => setTimeout(r, 30));
    await peer.send("4\r");
    await new Promise((r) => setTimeout(r, 30));
    await peer.send("\ndefg\r\n0\r\n\r\n");
    await peer.readRequest();
  });
  const client = createHttp1Upstream();
  try {
    const res = await client.send(upstreamOf(up.url), request());
    assertEquals(await text(res), "abcdefg");
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a close-delimited body ends with the connection", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ");
    await new Promise((r) => setTimeout(r, 20));
    await peer.send("the end");
  });
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    assertEquals(await text(await client.send(u, request())), "until the end");
    assertEquals(await text(await client.send(u, request())), "until the end");
    assertEquals(up.connections, 2, "a close-delimited connection is never reused");
  } finally {
    client.close();
  }
});

const SMUGGLING: Array<[string, string]> = [
  [
    "Content-Length and Transfer-Encoding",
    "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
  ],
  ["a malformed status line", "HTTP/1.1 2OO OK\r\ncontent-length: 2\r\n\r\nok"],
  ["garbage", "SSH-2.0-OpenSSH_9.6\r\n\r\n"],
  [
    "an invalid chunk size",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n",
  ],
  [
    "differing Content-Lengths",
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok!",
  ],
  ["a list of differing lengths", "HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\nok!"],
  ["a signed length", "HTTP/1.1 200 OK\r\ncontent-length: +2\r\n\r\nok"],
  ["obs-fold", "HTTP/1.1 200 OK\r\nx-a: 1\r\n  folded\r\ncontent-length: 2\r\n\r\nok"],
  ["space before the colon", "HTTP/1.1 200 OK\r\ncontent-length : 2\r\n\r\nok"],
  ["a bare CR in a value", "HTTP/1.1 200 OK\r\nx-a: 1\r2\r\ncontent-length: 2\r\n\r\nok"],
  ["gzip transfer coding", "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n0\r\n\r\n"],
  ["a 101 without an upgrade", "HTTP/1.1 101 Switching Protocols\r\n\r\n"],
  ["status 600", "HTTP/1.1 600 Odd\r\ncontent-length: 0\r\n\r\n"],
  ["too many headers", `HTTP/1.1 200 OK\r\n${"x-a: 1\r\n".repeat(300)}content-length: 0\r\n\r\n`],
  ["a head over 64 KiB", `HTTP/1.1 200 OK\r\nx-a: ${"a".repeat(70_000)}\r\n\r\n`],
];

Deno.test("http1 client: response smuggling shapes and garbage are protocol errors", async () => {
  for (const [name, answer] of SMUGGLING) {
    await using up = startRawUpstream(answering(() => answer));
    const client = createHttp1Upstream();
    try {
      await assertRejects(
        async () => {
          const res = await client.send(upstreamOf(up.url), request());
          await text(res);
        },
        UpstreamProtocolError,
        name,
      );
    } finally {
      client.close();
    }
  }
});

Deno.test("http1 client: a response head arriving in pieces ends where its empty line ends, however the reads split it", async () => {
  // Each case: the head's pieces as separate reads (10 ms apart), the empty line split at every
  // place in the three forms a recipient accepts, and one head dripped a byte at a time. The
  // search resumes where the last one stopped, so a split terminator must still be found.
  const cases: string[][] = [];
  for (const end of ["\r\n\r\n", "\n\n", "\n\r\n"]) {
    const head = `HTTP/1.1 200 OK\r\ncontent-length: 2${end}`;
    for (let cut = head.length - end.length - 1; cut < head.length; cut++) {
      cases.push([head.slice(0, cut), head.slice(cut) + "ok"]);
    }
  }
  cases.push([..."HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 2\r\n\r\n", "ok"]);
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      const n = Number(/^GET \/(\d+)/.exec(req)![1]);
      for (const part of cases[n]!) {
        await peer.send(part);
        await new Promise((r) => setTimeout(r, n === cases.length - 1 ? 2 : 10));
      }
    }
  });
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    for (const [n, parts] of cases.entries()) {
      const res = await client.send(u, request({ pathAndQuery: `/${n}` })) as UpstreamResponse;
      assertEquals([res.status, await text(res)], [200, "ok"], JSON.stringify(parts));
    }
  } finally {
    client.close();
  }
});

Deno.test("http1 client: identical repeated Content-Lengths are accepted", async () => {
  await using up = startRawUpstream(
    answering(() => "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 2, 2\r\n\r\nok"),
  );
  const client = createHttp1Upstream();
  try {
    assertEquals(await text(await client.send(upstreamOf(up.url), request())), "ok");
  } finally {
    client.close();
  }
});

Deno.test("http1 client: an upstream closing mid-body errors the stream", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten..");
  });
  const client = createHttp1Upstream();
  try {
    const res = await client.send(upstreamOf(up.url), request());
    assertEquals(res.status, 200);
    await assertRejects(() => text(res), UpstreamProtocolError);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a hanging upstream hits the response deadline", async () => {
  const arrived = signals();
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    arrived.send();
    await peer.readRequest(); // never answers; returns when the client closes
  });
  const timers = new FakeTimers();
  const client = createHttp1Upstream({ timers });
  try {
    const sent = failure(client.send(upstreamOf(up.url), request({ responseTimeoutMs: 150 })));
    await arrived.next();
    await timers.tick(149);
    ok(await stillPending(sent), "no timeout before the deadline");
    // The deadline and the next sweep of the deadlines (every 20 ms).
    await timers.tick(21);
    const err = await settlesWithin(sent);
    ok(isTimeout(err), `a timeout, not ${err}`);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a small streamed body with a declared length goes out with the head in one write", async () => {
  // The upstream reads what arrives first: the head alone when the body follows in a second
  // write (two system calls and two wake-ups of the upstream a request), all of it when gathered.
  const first: string[] = [];
  await using up = startRawUpstream(async (peer) => {
    const buf = new Uint8Array(65536);
    const n = await peer.conn.read(buf);
    if (n === null) return;
    first.push(new TextDecoder().decode(buf.subarray(0, n)));
    await peer.send(OK);
  });
  const client = createHttp1Upstream();
  const bodyGo = signals();
  try {
    const enc = new TextEncoder();
    // The body's bytes come after the request has started (a client still sending).
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        await bodyGo.next();
        c.enqueue(enc.encode("a=1"));
        c.enqueue(enc.encode("&b=2"));
        c.close();
      },
    });
    const sent = client.send(
      upstreamOf(up.url),
      request({
        method: "POST",
        upstreamHeaders: [["host", "shop.test"], ["content-length", "7"]],
        upstreamBody: body,
      }),
    );
    ok(await stillPending(sent, 20), "waits for the body");
    bodyGo.send();
    assertEquals(await text(await sent), "ok");
    assertEquals(first.length, 1);
    ok(first[0]!.startsWith("POST / HTTP/1.1\r\n"), first[0]);
    ok(first[0]!.endsWith("\r\ncontent-length: 7\r\n\r\na=1&b=2"), first[0]);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a head that is not all ASCII keeps its bytes (target as UTF-8, obs-text as one byte)", async () => {
  const heads: Uint8Array[] = [];
  await using up = startRawUpstream(async (peer) => {
    const buf = new Uint8Array(65536);
    for (;;) {
      const n = await peer.conn.read(buf);
      if (n === null) return;
      heads.push(buf.slice(0, n));
      await peer.send(OK);
    }
  });
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    // "é" in a header value is the one byte 0xe9 (header bytes are not UTF-8); in the target
    // it is the two bytes of its UTF-8, as the client sent them.
    for (
      const [path, value] of [["/caf\u00e9?q=1", "ascii"], ["/plain", "caf\u00e9"]] as const
    ) {
      const res = await client.send(
        u,
        request({ pathAndQuery: path, upstreamHeaders: [["host", "shop.test"], ["x-v", value]] }),
      );
      assertEquals(await text(res), "ok");
    }
    const latin1 = (b: Uint8Array) => String.fromCharCode(...b);
    assertEquals(heads.length, 2);
    ok(latin1(heads[0]!).startsWith("GET /caf\xc3\xa9?q=1 HTTP/1.1\r\n"), latin1(heads[0]!));
    ok(latin1(heads[0]!).includes("\r\nx-v: ascii\r\n"), latin1(heads[0]!));
    ok(latin1(heads[1]!).startsWith("GET /plain HTTP/1.1\r\n"), latin1(heads[1]!));
    ok(latin1(heads[1]!).includes("\r\nx-v: caf\xe9\r\n"), latin1(heads[1]!));
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a client stalling in a small declared body hits the response deadline", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
  });
  const timers = new FakeTimers();
  const client = createHttp1Upstream({ timers });
  let cancelled: unknown = undefined;
  try {
    // Two of the five declared bytes, then nothing: the head is never sent, and the wait for
    // the rest ends at the response deadline like a silent upstream's.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("ab"));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    const sent = failure(client.send(
      upstreamOf(up.url),
      request({
        method: "POST",
        upstreamHeaders: [["host", "shop.test"], ["content-length", "5"]],
        upstreamBody: body,
        responseTimeoutMs: 150,
      }),
    ));
    await timers.tick(149);
    ok(await stillPending(sent), "no timeout before the deadline");
    await timers.tick(21);
    const err = await settlesWithin(sent);
    ok(isTimeout(err), `a timeout, not ${err}`);
    ok(cancelled !== undefined, "the client's body stream is cancelled");
    assertEquals(up.connections, 0, "no connection taken for a body still arriving");
  } finally {
    client.close();
  }
});

Deno.test("http1 client: an upstream that falls silent mid-body hits the body idle deadline", async () => {
  let closed: () => void;
  const sawClose = new Promise<void>((r) => closed = r);
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    // A chunked body and a Content-Length one: both stop after their first piece.
    await peer.send("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n");
    assertEquals(await peer.readRequest(), null);
    closed();
  });
  const timers = new FakeTimers();
  const client = createHttp1Upstream({ bodyIdleTimeoutMs: 150, timers });
  try {
    const res = await client.send(upstreamOf(up.url), request({ responseTimeoutMs: 5_000 }));
    const read = failure(text(res));
    ok(await stillPending(read), "the body waits for more");
    await timers.tick(149);
    ok(await stillPending(read), "no timeout before the deadline");
    await timers.tick(21);
    const err = await settlesWithin(read);
    ok(isTimeout(err), `a timeout, not ${err}`);
    await settlesWithin(sawClose);
  } finally {
    client.close();
  }
  await using quiet = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nsome");
    await peer.readRequest();
  });
  const secondTimers = new FakeTimers();
  const second = createHttp1Upstream({ bodyIdleTimeoutMs: 150, timers: secondTimers });
  try {
    const res = await second.send(upstreamOf(quiet.url), request());
    const read = failure(text(res));
    ok(await stillPending(read), "the body waits for more");
    await secondTimers.tick(170);
    const err = await settlesWithin(read);
    ok(isTimeout(err), `a timeout, not ${err}`);
  } finally {
    second.close();
  }
});

Deno.test("http1 client: a refused connection rejects without a timeout", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const client = createHttp1Upstream();
  try {
    const err = await client.send(upstreamOf(`http://127.0.0.1:${port}`), request()).then(
      () => undefined,
      (e) => e,
    );
    ok(err instanceof Deno.errors.ConnectionRefused, String(err));
  } finally {
    client.close();
  }
});

Deno.test("http1 client: an idle connection the upstream closes is dropped from the pool", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send(OK); // keep-alive, then closes while idle
  });
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    assertEquals(await text(await client.send(u, request())), "ok");
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(await text(await client.send(u, request())), "ok");
    assertEquals(up.connections, 2);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a reused connection dying before the answer is retried once when replayable", async () => {
  await using up = startRawUpstream(firstDiesOnItsSecondRequest);
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    assertEquals(await text(await client.send(u, request())), "ok");
    const posted = await client.send(
      u,
      request({ method: "POST", upstreamBody: new TextEncoder().encode("again") }),
    );
    assertEquals(await text(posted), "ok");
    assertEquals(up.connections, 2);
    ok(up.requests.at(-1)!.endsWith("again"), "the body was sent again on the new connection");
    // A streamed body cannot be sent twice: the failure is the caller's to answer.
    await using up2 = startRawUpstream(async (peer) => {
      await peer.readRequest();
      await peer.send(OK);
      await peer.readRequest();
    });
    const u2 = upstreamOf(up2.url);
    assertEquals(await text(await client.send(u2, request())), "ok");
    await assertRejects(() =>
      client.send(u2, request({ method: "POST", upstreamBody: streamOf("once") }))
    );
    assertEquals(up2.connections, 1);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: cancelling the body (the client went away) closes the upstream connection", async () => {
  let closed: () => void;
  const sawClose = new Promise<void>((r) => closed = r);
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\nstart");
    assertEquals(await peer.readRequest(), null);
    closed();
  });
  const client = createHttp1Upstream();
  try {
    const res = await client.send(upstreamOf(up.url), request()) as UpstreamResponse;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.cancel();
    await sawClose;
  } finally {
    client.close();
  }
});

Deno.test("http1 client: the pool keeps at most maxIdle connections per upstream", async () => {
  await using up = startRawUpstream(async (peer) => {
    await new Promise((r) => setTimeout(r, 20));
    await answering(() => OK)(peer);
  });
  const timers = new FakeTimers();
  const client = createHttp1Upstream({ maxIdle: 2, idleTimeoutMs: 200, timers });
  try {
    const u = upstreamOf(up.url);
    await Promise.all([1, 2, 3, 4].map(async () => await text(await client.send(u, request()))));
    assertEquals(up.connections, 4);
    await Promise.all([1, 2].map(async () => await text(await client.send(u, request()))));
    assertEquals(up.connections, 4, "two idle connections were kept and reused");
    // Idle 200 ms: the pool's sweep (every 250 ms for this timeout) closes them.
    await timers.tick(250);
    await text(await client.send(u, request()));
    assertEquals(up.connections, 5, "idle connections expire");
  } finally {
    client.close();
  }
});

Deno.test("http1 client: https upstreams are verified against the trusted CAs", async () => {
  const now = Date.now();
  const ca = await createCa("test ca", now, systemRandom);
  const leaf = await createLeaf(
    ca,
    { commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] },
    now,
    systemRandom,
  );
  const ac = new AbortController();
  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      cert: leaf.cert,
      key: leaf.key,
      signal: ac.signal,
      onListen() {},
    },
    () => new Response("secure"),
  );
  const url = `https://127.0.0.1:${server.addr.port}`;
  const trusting = createHttp1Upstream({ caCerts: [ca.cert] });
  const plain = createHttp1Upstream();
  try {
    assertEquals(await text(await trusting.send(upstreamOf(url), request())), "secure");
    await assertRejects(() => plain.send(upstreamOf(url), request()));
  } finally {
    trusting.close();
    plain.close();
    ac.abort();
    await server.finished;
  }
});

/**
 * nginx on a port it binds itself: a port free a moment ago can be taken by another test's server
 * before nginx binds it (nginx then exits, and a readiness check by connecting alone would talk to
 * that other server), so the port counts only once nginx itself answers on it; else another port.
 */
async function startNginx(dir: string): Promise<{ child: Deno.ChildProcess; port: number }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    await Deno.writeTextFile(
      `${dir}/nginx.conf`,
      `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  gzip on; gzip_min_length 0; gzip_types text/plain;
  server { listen 127.0.0.1:${port}; root ${dir}/www; default_type text/plain; }
}`,
    );
    const child = new Deno.Command("nginx", {
      args: ["-c", `${dir}/nginx.conf`, "-p", dir],
      stdout: "null",
      stderr: "null",
    }).spawn();
    let exited = false;
    child.status.then(() => exited = true);
    for (let i = 0; i < 50 && !exited; i++) {
      const server = await fetch(`http://127.0.0.1:${port}/page.txt`, { method: "HEAD" }).then(
        (r) => r.headers.get("server") ?? "",
        () => "",
      );
      if (server.startsWith("nginx")) return { child, port };
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!exited) child.kill("SIGTERM");
    await child.status;
  }
  throw new Error("nginx did not start on a free port in 5 attempts");
}

const HAS_NGINX = await probe(
  "nginx",
  async () => (await new Deno.Command("nginx", { args: ["-v"], stderr: "null" }).output()).success,
);

Deno.test({
  name: "http1 client: against nginx (static, gzip chunked, keep-alive) (needs nginx)",
  ignore: ignoreWithout(HAS_NGINX),
}, async (t) => {
  if (!HAS_NGINX) throw missing("nginx is not installed");
  const dir = await Deno.makeTempDir({ prefix: "waf-http1-nginx-" });
  const page = "the quick brown fox jumps over the lazy dog\n".repeat(5000);
  await Deno.mkdir(`${dir}/www`);
  // nginx's worker may run as another user: let it read the files.
  await Deno.chmod(dir, 0o755);
  await Deno.writeTextFile(`${dir}/www/page.txt`, page);
  const { child, port } = await startNginx(dir);
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(`http://127.0.0.1:${port}`);
    await t.step("a static file with Content-Length", async () => {
      const res = await client.send(u, request({ pathAndQuery: "/page.txt" })) as UpstreamResponse;
      assertEquals(res.contentLength, page.length);
      assertEquals(await text(res), page);
    });
    await t.step("gzip comes chunked and decodes to the file", async () => {
      const res = await client.send(
        u,
        request({
          pathAndQuery: "/page.txt",
          upstreamHeaders: [["host", "x"], ["accept-encoding", "gzip"]],
        }),
      ) as UpstreamResponse;
      assertEquals(header(res.headers, "transfer-encoding"), "chunked");
      const body = new Response(res.body).body!.pipeThrough(new DecompressionStream("gzip"));
      assertEquals(await new Response(body).text(), page);
    });
    await t.step("HEAD and 404 on the same connection", async () => {
      const head = await client.send(u, request({ method: "HEAD", pathAndQuery: "/page.txt" }));
      assertEquals([head.status, (head as UpstreamResponse).body], [200, null]);
      const missing = await client.send(u, request({ pathAndQuery: "/missing" }));
      assertEquals(missing.status, 404);
      await text(missing);
    });
  } finally {
    client.close();
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("http1 client: a pooled connection the upstream closes while a small body is still arriving is not the client's 502", async () => {
  // An upstream with a short keep-alive timeout (Node's is 5 s) closes an idle connection while
  // the POST's small body is still arriving: the pooled connection must not be held (taken,
  // nothing written) while the body is gathered, or the upstream closes it under the request
  // and the answer is a 502.
  // Like Node's server, the idle timer stops at the first byte of the next request.
  const received: string[] = [];
  // The test says when the first connection's keep-alive timeout passes.
  const idleClose = Promise.withResolvers<"idle">();
  const never = new Promise<"idle">(() => {});
  await using up = startRawUpstream(async (peer) => {
    const buf = new Uint8Array(65536);
    let pending = "";
    for (;;) {
      const first = await Promise.race([
        peer.conn.read(buf),
        peer.index === 0 ? idleClose.promise : never,
      ]);
      if (first === null || first === "idle") return;
      pending += new TextDecoder().decode(buf.subarray(0, first));
      for (;;) {
        const end = pending.indexOf("\r\n\r\n");
        const cl = Number(/\r\ncontent-length: *(\d+)/i.exec(pending)?.[1] ?? 0);
        if (end >= 0 && pending.length >= end + 4 + cl) break;
        const n = await peer.conn.read(buf);
        if (n === null) return;
        pending += new TextDecoder().decode(buf.subarray(0, n));
      }
      received.push(pending);
      pending = "";
      await peer.send(OK);
    }
  });
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    assertEquals(await text(await client.send(u, request())), "ok");
    const bodyGo = signals();
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        await bodyGo.next();
        c.enqueue(new TextEncoder().encode("a=1"));
        c.close();
      },
    });
    const sent = client.send(
      u,
      request({
        method: "POST",
        upstreamHeaders: [["host", "shop.test"], ["content-length", "3"]],
        upstreamBody: body,
      }),
    );
    // While the body is still arriving, the upstream's keep-alive timeout closes the idle
    // connection; then the body comes.
    ok(await stillPending(sent), "waits for the body");
    idleClose.resolve("idle");
    while (!up.ended[0]) await stillPending(sent, 1);
    ok(await stillPending(sent), "still waits for the body");
    bodyGo.send();
    const res = await settlesWithin(sent);
    assertEquals(await text(res), "ok");
    ok(received.at(-1)!.endsWith("\r\ncontent-length: 3\r\n\r\na=1"), received.at(-1));
  } finally {
    client.close();
  }
});

Deno.test("http1 client: streamed bodies of exactly 16 KiB and 16 KiB + 1 keep their framing on one connection", async () => {
  await using up = startRawUpstream(answering(() => OK));
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    for (const size of [16 * 1024, 16 * 1024 + 1, 16 * 1024 - 1]) {
      const data = "x".repeat(size - 1) + "!";
      // In two pieces, the second crossing the gathering limit for 16 KiB + 1.
      const res = await client.send(
        u,
        request({
          method: "POST",
          upstreamHeaders: [["host", "shop.test"], ["content-length", String(size)]],
          upstreamBody: streamOf(data.slice(0, 1000), data.slice(1000)),
        }),
      );
      assertEquals(await text(res), "ok");
      const got = up.requests.at(-1)!;
      ok(got.includes(`\r\ncontent-length: ${size}\r\n\r\n`), got.slice(0, 200));
      assertEquals(got.slice(got.indexOf("\r\n\r\n") + 4), data);
    }
    // A following GET on the same connection is its own request (no byte of a body left over).
    assertEquals(await text(await client.send(u, request({ pathAndQuery: "/next" }))), "ok");
    ok(up.requests.at(-1)!.startsWith("GET /next HTTP/1.1\r\n"), up.requests.at(-1));
    assertEquals(up.connections, 1);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a short response deadline from one request never reaches the next on the same connection", async () => {
  // Each answer takes 400 ms against a 640 ms response deadline; the connection is reused and
  // each request is still waiting when the one before's deadline would have passed.
  const { arrived, piece: answer, script } = stepwise(OK);
  await using up = startRawUpstream(script);
  const timers = new FakeTimers();
  const client = createHttp1Upstream({ timers });
  try {
    const u = upstreamOf(up.url);
    for (let i = 0; i < 3; i++) {
      const sent = client.send(u, request({ responseTimeoutMs: 640 }));
      await arrived.next();
      await timers.tick(400);
      ok(await stillPending(sent), `request ${i} still waits for its answer`);
      answer.send();
      const res = await settlesWithin(sent);
      assertEquals(await text(res), "ok");
    }
    assertEquals(up.connections, 1);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a small streamed body longer or shorter than declared never reaches the upstream", async () => {
  await using up = startRawUpstream(answering(() => OK));
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    for (const parts of [["abc", "def"], ["ab"]]) {
      const err = await client.send(
        u,
        request({
          method: "POST",
          upstreamHeaders: [["host", "shop.test"], ["content-length", "4"]],
          upstreamBody: streamOf(...parts),
        }),
      ).then(() => undefined, (e) => e);
      ok(err instanceof Error, `refused: ${parts}`);
    }
    assertEquals(up.requests.length, 0);
  } finally {
    client.close();
  }
});

Deno.test("http1 client: a small declared streamed body is sent again when a reused connection dies before the answer", async () => {
  await using up = startRawUpstream(firstDiesOnItsSecondRequest);
  const client = createHttp1Upstream();
  try {
    const u = upstreamOf(up.url);
    assertEquals(await text(await client.send(u, request())), "ok");
    const posted = await client.send(
      u,
      request({
        method: "POST",
        upstreamHeaders: [["host", "shop.test"], ["content-length", "5"]],
        upstreamBody: streamOf("ag", "ain"),
      }),
    );
    assertEquals(await text(posted), "ok");
    assertEquals(up.connections, 2);
    ok(up.requests.at(-1)!.endsWith("\r\ncontent-length: 5\r\n\r\nagain"), up.requests.at(-1));
  } finally {
    client.close();
  }
});

Deno.test("http1 client: body-idle and response deadlines re-arm per read and per request on one connection, never crossing", async () => {
  // Each answer's head and body come in four pieces 150 ms apart (600 ms in all, the body's
  // three silences 450 ms, longer than both 400 ms deadlines, each silence shorter), then the
  // next request on the same connection.
  const { arrived, piece, script } = stepwise(
    "HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\nab",
    "cd",
    "ef",
    "gh",
  );
  await using up = startRawUpstream(script);
  const timers = new FakeTimers();
  const client = createHttp1Upstream({ bodyIdleTimeoutMs: 400, timers });
  try {
    const u = upstreamOf(up.url);
    for (let i = 0; i < 3; i++) {
      const sent = client.send(u, request({ responseTimeoutMs: 400 }));
      await arrived.next();
      await timers.tick(150);
      piece.send();
      const read = text(await settlesWithin(sent));
      for (let p = 0; p < 3; p++) {
        ok(await stillPending(read), `request ${i}: the body waits for piece ${p + 2}`);
        await timers.tick(150);
        piece.send();
      }
      assertEquals(await settlesWithin(read), "abcdefgh");
    }
    assertEquals(up.connections, 1);
  } finally {
    client.close();
  }
});
