/**
 * Adversarial framing of the answers the own HTTP/1.1 server writes for the proxy (review of
 * issue 13's direct answers): an upstream that frames its answer oddly must never make the
 * client read a different number of bytes than the server sent, and a client that goes away
 * must release the upstream connection. The oracle is what a client reading RFC 9112 framing
 * gets on one kept connection: each answer, then the next one intact.
 */
import * as zlib from "node:zlib";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { AnswerReader, bytes } from "../../_helpers/raw_socket.ts";
import { apiFor } from "../../_helpers/protection.ts";
import { startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";

Deno.test("a 205 answer with a body upstream reaches the client with no body and a zero length, and the next answer follows intact", async () => {
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      if (req.startsWith("GET /205-length ")) {
        await peer.send("HTTP/1.1 205 Reset Content\r\ncontent-length: 9\r\n\r\n123456789");
      } else if (req.startsWith("GET /205-chunked ")) {
        await peer.send("HTTP/1.1 205 Reset Content\r\ntransfer-encoding: chunked\r\n\r\n");
        await peer.send("3\r\nabc\r\n0\r\n\r\n");
      } else if (req.startsWith("GET /205-empty ")) {
        await peer.send("HTTP/1.1 205 Reset Content\r\ncontent-length: 0\r\n\r\n");
      } else if (req.startsWith("GET /204 ")) {
        await peer.send("HTTP/1.1 204 No Content\r\ncontent-length: 7\r\n\r\n");
      } else await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nnext");
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  const reader = new AnswerReader(conn);
  try {
    for (const target of ["/205-length", "/205-chunked", "/205-empty", "/204"]) {
      await conn.write(bytes(`GET ${target} HTTP/1.1\r\nhost: shop.test\r\n\r\n`));
      await conn.write(bytes("GET /next HTTP/1.1\r\nhost: shop.test\r\n\r\n"));
      const first = await reader.next();
      const next = await reader.next();
      assertEquals(first?.status, target === "/204" ? 204 : 205, target);
      assertEquals(first?.body, "", target);
      const lengths = first!.lines.filter((l) => /^(content-length|transfer-encoding):/i.test(l));
      // RFC 9110 §15.3.6: no content in a 205, and framing that says so; §8.6: no length on 204.
      assertEquals(lengths, target === "/204" ? [] : ["content-length: 0"], target);
      assertEquals(next?.status, 200, target);
      assertEquals(next?.body, "next", target);
    }
  } finally {
    conn.close();
  }
});

Deno.test("an upstream body longer than its Content-Length never reaches the client past the declared length", async () => {
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      if (req.startsWith("GET /small ")) {
        await peer.send(
          "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nsafeHTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nforged",
        );
      } else if (req.startsWith("GET /big ")) {
        const declared = 200_000;
        await peer.send(`HTTP/1.1 200 OK\r\ncontent-length: ${declared}\r\n\r\n`);
        await peer.send("a".repeat(declared));
        await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nforged");
      } else await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nnext");
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  const reader = new AnswerReader(conn);
  try {
    for (const [target, body] of [["/small", "safe"], ["/big", "a".repeat(200_000)]] as const) {
      await conn.write(bytes(`GET ${target} HTTP/1.1\r\nhost: shop.test\r\n\r\n`));
      const first = await reader.next();
      assertEquals(first?.status, 200);
      assertEquals(first?.body, body);
      await conn.write(bytes("GET /next HTTP/1.1\r\nhost: shop.test\r\n\r\n"));
      const next = await reader.next();
      assertEquals(next?.body, "next", target);
    }
  } finally {
    conn.close();
  }
});

Deno.test("an upstream body shorter than its Content-Length ends the client's connection, never a complete-looking answer", async () => {
  await using up = startRawUpstream(async (peer) => {
    const req = await peer.readRequest();
    if (req === null) return;
    const declared = req.startsWith("GET /big ") ? 300_000 : 40;
    await peer.send(`HTTP/1.1 200 OK\r\ncontent-length: ${declared}\r\n\r\n`, "x".repeat(20));
    // The upstream closes with the body unfinished.
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  for (const target of ["/small", "/big"]) {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: Number(new URL(s.dataUrl).port),
    });
    try {
      await conn.write(bytes(`GET ${target} HTTP/1.1\r\nhost: shop.test\r\n\r\n`));
      const got = await new AnswerReader(conn).next();
      // Either no answer at all or a head whose declared length is never completed.
      if (got !== null) assertEquals(got.status, 502, target);
    } finally {
      conn.close();
    }
  }
});

Deno.test("a client that goes away mid-body releases the upstream connection (it is closed, not left streaming)", async () => {
  let upstreamSawClose!: () => void;
  const closed = new Promise<void>((r) => upstreamSawClose = r);
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 10000000\r\n\r\n", "y".repeat(70_000));
    // Keeps the body coming slowly; the WAF closing the connection ends the writes.
    for (let i = 0; i < 500; i++) {
      try {
        await peer.send("z".repeat(1000));
      } catch {
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    upstreamSawClose();
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  await conn.write(bytes("GET /stream HTTP/1.1\r\nhost: shop.test\r\n\r\n"));
  const buf = new Uint8Array(65536);
  let got = 0;
  while (got < 1000) got += (await conn.read(buf)) ?? 0;
  conn.close();
  const t0 = performance.now();
  await closed;
  // 500 writes 10 ms apart take 5 s when nobody closes; a release takes a few writes.
  ok(performance.now() - t0 < 3000, "the upstream connection stayed open");
});

Deno.test("CR, LF or NUL inside an upstream field value, or a field name with a space or byte above 0x7f, is a 502: nothing of it reaches the client", async () => {
  const answers = [
    "HTTP/1.1 200 OK\r\nx-a: 1\rset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nx-a: 1\0set-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nx-a : 1\r\nset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nx-\xe9: 1\r\nset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nx-a: 1\r\n folded\r\nset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\n: empty\r\nset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nx-a: 1\r\r\nset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\nset-cookie: evil=1\r\n\r\nok",
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\nset-cookie: evil=1\r\n\r\nok",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\nset-cookie: evil=1\r\n\r\n2\r\nok\r\n0\r\n\r\n",
  ];
  let i = 0;
  await using up = startRawUpstream(async (peer) => {
    if ((await peer.readRequest()) === null) return;
    await peer.send(new Uint8Array([...answers[i++]!].map((c) => c.charCodeAt(0))));
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  for (const answer of answers) {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: Number(new URL(s.dataUrl).port),
    });
    try {
      await conn.write(bytes("GET / HTTP/1.1\r\nhost: shop.test\r\n\r\n"));
      const got = await new AnswerReader(conn).next();
      assertEquals(got?.status, 502, JSON.stringify(answer));
      ok(!got!.lines.some((l) => /evil/.test(l)), JSON.stringify(answer));
    } finally {
      conn.close();
    }
  }
});

/** An upstream answering by path: the framing cases of the 204, 205 and HEAD tests below. */
function framingUpstream() {
  return startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      const target = req.slice(req.indexOf(" ") + 1, req.indexOf(" HTTP/"));
      if (target === "/205-length") {
        await peer.send("HTTP/1.1 205 Reset Content\r\ncontent-length: 9\r\n\r\n123456789");
      } else if (target === "/204") {
        await peer.send("HTTP/1.1 204 No Content\r\ncontent-length: 7\r\n\r\n");
      } else if (target === "/list") {
        const body = req.startsWith("HEAD ") ? "" : "hello";
        await peer.send(`HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\n${body}`);
      } else if (target === "/repeat") {
        await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 05\r\n\r\n");
      } else if (target === "/differ") {
        await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 5, 6\r\n\r\n");
      } else await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nnext");
    }
  });
}

/** The content-length and transfer-encoding lines of an answer's head. */
const framing = (lines: string[]) =>
  lines.filter((l) => /^(content-length|transfer-encoding):/i.test(l)).map((l) => l.toLowerCase());

for (const limits of [true, false]) {
  const server = limits ? "the own server" : "Deno.serve (limits off)";
  Deno.test(`${server}: a HEAD answer's Content-Length list or repeats reach the client as one value, differing ones are a 502; a 204 has no length; the next answer follows intact`, async () => {
    await using up = framingUpstream();
    await using s = await startTestServer(
      limits ? {} : { config: { server: { data: { limits: { enabled: false } } } } },
    );
    s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: Number(new URL(s.dataUrl).port),
    });
    const reader = new AnswerReader(conn);
    try {
      const cases: [string, string, number, string[]][] = [
        ["HEAD", "/list", 200, ["content-length: 5"]],
        ["HEAD", "/repeat", 200, ["content-length: 5"]],
        ["GET", "/list", 200, ["content-length: 5"]],
        ["GET", "/204", 204, []],
        ["HEAD", "/differ", 502, []],
      ];
      for (const [method, target, status, lengths] of cases) {
        await conn.write(bytes(`${method} ${target} HTTP/1.1\r\nhost: shop.test\r\n\r\n`));
        await conn.write(bytes("GET /next HTTP/1.1\r\nhost: shop.test\r\n\r\n"));
        const first = await reader.next(method === "HEAD");
        const next = await reader.next();
        const what = `${method} ${target}`;
        assertEquals(first?.status, status, what);
        if (status !== 502) {
          assertEquals(framing(first!.lines), lengths, what);
          assertEquals(first?.body, method === "GET" && status === 200 ? "hello" : "", what);
        }
        assertEquals(next?.status, 200, what);
        assertEquals(next?.body, "next", what);
      }
    } finally {
      conn.close();
    }
  });
}

Deno.test("a Request (Deno.serve's paths) gets a 205 with content-length 0, a 204 without one, a HEAD with one value", async () => {
  await using up = framingUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const ask = async (method: string, target: string) => {
    const res = await s.dataPlane.proxy.handle(
      new Request(`http://shop.test${target}`, { method, headers: { host: "shop.test" } }),
      "127.0.0.1",
      "http",
    );
    ok(res instanceof Response);
    return res;
  };
  const r205 = await ask("GET", "/205-length");
  assertEquals([r205.status, r205.headers.get("content-length"), r205.body], [205, "0", null]);
  const r204 = await ask("GET", "/204");
  assertEquals([r204.status, r204.headers.has("content-length"), r204.body], [204, false, null]);
  for (const target of ["/list", "/repeat"]) {
    const head = await ask("HEAD", target);
    assertEquals([head.status, head.headers.get("content-length")], [200, "5"], target);
    await head.body?.cancel();
  }
});

Deno.test("a whole answer through the edge (cache capture, a cache hit, gzip) goes out with Content-Length, brotli chunked, the bytes intact", async () => {
  const page = "<p>hello from the upstream</p>".repeat(40);
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      await peer.send(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncache-control: max-age=60\r\n" +
          `content-length: ${page.length}\r\n\r\n${page}`,
      );
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const edge = await apiFor(s)("PUT", "/api/edge/settings", {
    cache: { enabled: true, paths: [{ path_prefix: "/cached" }] },
    compression: { gzip: true, brotli: true, min_bytes: 1 },
  });
  assertEquals(edge.status, 200, await edge.text());
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  const reader = new AnswerReader(conn);
  try {
    for (
      const [target, coding] of [
        ["/cached", "identity"],
        ["/cached", "identity"],
        ["/plain", "gzip"],
        ["/plain", "br"],
        ["/cached", "gzip"],
        ["/cached", "br"],
      ]
    ) {
      const label = `${target} ${coding}`;
      await conn.write(
        bytes(`GET ${target} HTTP/1.1\r\nhost: shop.test\r\naccept-encoding: ${coding}\r\n\r\n`),
      );
      const answer = await reader.next();
      assertEquals(answer?.status, 200, label);
      const framing = answer!.lines.filter((l) => /^(content-length|transfer-encoding):/i.test(l));
      const raw = Uint8Array.from(answer!.body, (c) => c.charCodeAt(0));
      const decoded = coding === "gzip"
        ? zlib.gunzipSync(raw)
        : coding === "br"
        ? zlib.brotliDecompressSync(raw)
        : raw;
      assertEquals(new TextDecoder().decode(decoded), page, label);
      // Brotli goes through node:zlib, whose output comes from its thread pool, never within
      // microtasks: the server cannot tell it whole, and writes it chunked (correct, one more
      // write). Everything else is whole in what the stream holds.
      const expected = coding === "br"
        ? "transfer-encoding: chunked"
        : `content-length: ${raw.length}`;
      assertEquals(framing, [expected], label);
    }
  } finally {
    conn.close();
  }
});
