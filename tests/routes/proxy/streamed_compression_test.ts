/**
 * A streamed answer the edge compresses still flows as it comes: the compressor is flushed after
 * each upstream chunk (zlib's Z_SYNC_FLUSH, Brotli's FLUSH), so a `text/plain` progress stream
 * or long poll is not held until the compressor has gathered enough bytes (often the end). The
 * upstream sends its head and a first part, then waits, without any timer, until the client has
 * decoded that part; an answer held back never reaches it and the test fails on its time-out.
 */
import * as net from "node:net";
import zlib from "node:zlib";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { apiFor } from "../../_helpers/protection.ts";
import { startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";

const ONE = "progress: 10%\n";
const TWO = "progress: 100%\n";
/** Only for a test that fails: how long the client waits for the first part. */
const FAIL_AFTER_MS = 10_000;
const dec = new TextDecoder();

/** Bytes of a chunked body, decoded as they arrive (`push`), handed on chunk by chunk. */
function dechunker(onData: (b: Uint8Array) => void) {
  let buf = new Uint8Array(0);
  return (more: Uint8Array) => {
    const joined = new Uint8Array(buf.length + more.length);
    joined.set(buf);
    joined.set(more, buf.length);
    buf = joined;
    for (;;) {
      let cr = -1;
      for (let i = 0; i + 1 < buf.length; i++) {
        if (buf[i] === 13 && buf[i + 1] === 10) {
          cr = i;
          break;
        }
      }
      if (cr < 0) return;
      const size = parseInt(dec.decode(buf.subarray(0, cr)), 16);
      if (size === 0 || buf.length < cr + 2 + size + 2) return;
      onData(buf.slice(cr + 2, cr + 2 + size));
      buf = buf.slice(cr + 2 + size + 2);
    }
  };
}

Deno.test("a streamed text/plain answer the edge compresses reaches the client part by part (gzip and Brotli)", async () => {
  const waiting: Array<() => void> = [];
  let wake = () => {};
  let over = false;
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      await peer.send(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n",
        `${ONE.length.toString(16)}\r\n${ONE}\r\n`,
      );
      await new Promise<void>((resolve) => {
        if (over) return resolve();
        waiting.push(resolve);
        wake();
      });
      await peer.send(`${TWO.length.toString(16)}\r\n${TWO}\r\n0\r\n\r\n`);
    }
  });
  const release = async () => {
    while (waiting.length === 0) await new Promise<void>((r) => wake = r);
    waiting.shift()!();
  };
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url], mode: "block" }), SYSTEM);
  const res = await apiFor(s)("PUT", "/api/edge/settings", {
    compression: { gzip: true, brotli: true, min_bytes: 1 },
  });
  assertEquals(res.status, 200);
  const port = Number(new URL(s.dataUrl).port);
  for (const encoding of ["gzip", "br"] as const) {
    const decoder = encoding === "gzip" ? zlib.createGunzip() : zlib.createBrotliDecompress();
    let body = "";
    let head = "";
    let headBytes = new Uint8Array(0);
    const waiters = new Set<() => void>();
    const poke = () => {
      for (const w of [...waiters]) w();
    };
    decoder.on("data", (b: Uint8Array) => {
      body += dec.decode(b);
      poke();
    });
    decoder.on("end", poke);
    const dechunk = dechunker((b) => decoder.write(b));
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.on("connect", () => {
      socket.write(
        `GET /stream HTTP/1.1\r\nhost: shop.test\r\naccept-encoding: ${encoding}\r\nconnection: close\r\n\r\n`,
      );
    });
    socket.on("data", (d: Uint8Array) => {
      if (head === "") {
        const joined = new Uint8Array(headBytes.length + d.length);
        joined.set(headBytes);
        joined.set(d, headBytes.length);
        const text = new TextDecoder("latin1").decode(joined);
        const at = text.indexOf("\r\n\r\n");
        if (at < 0) {
          headBytes = joined;
          return;
        }
        head = text.slice(0, at);
        dechunk(joined.subarray(at + 4));
      } else dechunk(d);
    });
    let closed = false;
    socket.on("close", () => {
      closed = true;
      decoder.end();
      poke();
    });
    socket.on("error", () => {});
    const until = (want: string) =>
      new Promise<void>((resolve, fail) => {
        const check = (late = false) => {
          if (body.includes(want)) resolve();
          else if (late || closed) {
            fail(new Error(`${encoding}: ${JSON.stringify(want)} not decoded, got ${body}`));
          } else return;
          clearTimeout(timer);
          waiters.delete(check);
        };
        const timer = setTimeout(() => check(true), FAIL_AFTER_MS);
        waiters.add(check);
        check();
      });
    try {
      // The first part, decoded, while the upstream still holds the second.
      await until(ONE);
      ok(head.toLowerCase().includes(`content-encoding: ${encoding}`), head);
      ok(!body.includes(TWO), encoding);
      await release();
      await until(TWO);
      assertEquals(body, ONE + TWO, encoding);
    } catch (err) {
      over = true;
      for (const w of waiting.splice(0)) w();
      throw err;
    } finally {
      socket.destroy();
    }
  }
});
