/**
 * A streamed answer is passed on as it comes (Server-Sent Events, long polls, progress streams):
 * the own HTTP/1.1 server's read-ahead, which sends a body that is already whole with
 * Content-Length in one write, must never wait on the upstream for its next bytes. The upstream
 * here sends its head and a first event, then waits, without any timer, until the client has
 * read that first event before it sends the second: an answer held back until the second event
 * arrives never reaches the client, and the test fails on its time-out instead of hanging.
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { testCertificate } from "../../_helpers/certificates.ts";
import { apiFor } from "../../_helpers/protection.ts";
import { startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";

const ONE = "data: one\n\n";
const TWO = "data: two\n\n";
const FRAMINGS = ["chunked", "close", "length"] as const;
/** `late`: a chunked answer whose head comes alone, its events only after the pause. */
type Framing = typeof FRAMINGS[number] | "late";
/** Only for a test that fails: how long the client waits for the first event. */
const FAIL_AFTER_MS = 10_000;

/** What the upstream sends before and after its pause, by framing. */
function parts(framing: Framing): [string, string] {
  const head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n";
  if (framing === "chunked") {
    return [
      `${head}transfer-encoding: chunked\r\n\r\nb\r\n${ONE}\r\n`,
      `b\r\n${TWO}\r\n0\r\n\r\n`,
    ];
  }
  if (framing === "late") {
    return [`${head}transfer-encoding: chunked\r\n\r\n`, `b\r\n${ONE}\r\nb\r\n${TWO}\r\n0\r\n\r\n`];
  }
  if (framing === "close") return [`${head}connection: close\r\n\r\n${ONE}`, TWO];
  return [`${head}content-length: ${ONE.length + TWO.length}\r\n\r\n${ONE}`, TWO];
}

/** An upstream that holds each answer's second part until `release` is called for it. */
function pausingUpstream() {
  const waiting: Array<() => void> = [];
  let wake = () => {};
  let over = false;
  const released = () =>
    new Promise<void>((resolve) => {
      if (over) return resolve();
      waiting.push(resolve);
      wake();
    });
  const up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      const framing = /^GET \/(\w+) /.exec(req)![1] as Framing;
      const [first, second] = parts(framing);
      await peer.send(first);
      await released();
      await peer.send(second);
      if (framing === "close") return;
    }
  });
  return {
    up,
    /** Lets the upstream send the second part of the answer it holds (waits until it holds one). */
    async release(): Promise<void> {
      while (waiting.length === 0) await new Promise<void>((r) => wake = r);
      waiting.shift()!();
    },
    /** Lets every answer go on (a failed test must not leave the upstream waiting). */
    releaseAll(): void {
      over = true;
      for (const w of waiting.splice(0)) w();
    },
  };
}

interface Client {
  /** Everything received so far. */
  text(): string;
  /** Resolves once `test` holds for what was received (rejects when the connection ends first). */
  until(test: (text: string) => boolean, what: string): Promise<void>;
  /** Resolves when the server has closed the connection. */
  readonly closed: Promise<void>;
  close(): void;
}

/** Sends one GET with `connection: close` on a new plain or TLS connection. */
function request(port: number, ca: string | undefined, path: string, minor: 0 | 1): Client {
  const socket = ca === undefined
    ? net.connect({ host: "127.0.0.1", port })
    : tls.connect({ host: "127.0.0.1", port, servername: "shop.test", ca });
  socket.on(ca === undefined ? "connect" : "secureConnect", () => {
    socket.write(`GET ${path} HTTP/1.${minor}\r\nhost: shop.test\r\nconnection: close\r\n\r\n`);
  });
  let got = "";
  let ended = false;
  const waiters = new Set<() => void>();
  const poke = () => {
    for (const w of [...waiters]) w();
  };
  let closedNow = () => {};
  const closed = new Promise<void>((r) => closedNow = r);
  socket.on("data", (d: Uint8Array) => {
    got += new TextDecoder().decode(d);
    poke();
  });
  socket.on("close", () => {
    ended = true;
    closedNow();
    poke();
  });
  socket.on("error", () => {});
  return {
    text: () => got,
    closed,
    until(test, what) {
      return new Promise<void>((ok, fail) => {
        const check = (late = false) => {
          if (test(got)) ok();
          else if (ended || late) {
            fail(new Error(`${what}: not received (${late ? "time-out" : "closed"}): ${got}`));
          } else return;
          clearTimeout(timer);
          waiters.delete(check);
        };
        const timer = setTimeout(() => check(true), FAIL_AFTER_MS);
        waiters.add(check);
        check();
      });
    },
    close: () => socket.destroy(),
  };
}

/** The body a client reads from `text` (a whole answer), decoding chunked framing. */
function bodyOf(text: string): string {
  const at = text.indexOf("\r\n\r\n");
  const head = text.slice(0, at);
  let rest = text.slice(at + 4);
  if (!/\r\ntransfer-encoding: chunked/i.test(head)) return rest;
  let body = "";
  for (;;) {
    const line = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, line), 16);
    if (size === 0) return body;
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}

const SITES = {
  "protection off": { mode: "off" },
  "a block-mode site": { mode: "block" },
  "a block-mode site with edge compression": { mode: "block" },
} as const;

for (const listener of ["plain", "TLS"] as const) {
  for (const [name, overrides] of Object.entries(SITES)) {
    Deno.test(`a streamed answer's head and first part reach the client before the upstream sends the rest (${listener} listener, ${name})`, async () => {
      const { up, release, releaseAll } = pausingUpstream();
      await using _up = up;
      const { ca, leaf } = await testCertificate("shop.test");
      await using s = await startTestServer({
        config: listener === "TLS" ? { server: { data: { https_listen: "127.0.0.1:0" } } } : {},
      });
      s.dataPlane.sites.create(
        siteInput({
          upstreams: [up.url],
          ...overrides,
          ...(listener === "TLS" ? { tls: leaf } : {}),
        }),
        SYSTEM,
      );
      if (name.includes("compression")) {
        const res = await apiFor(s)("PUT", "/api/edge/settings", {
          compression: { gzip: true, brotli: true, min_bytes: 1 },
        });
        assertEquals(res.status, 200);
      }
      const port = Number(new URL(listener === "TLS" ? s.dataHttpsUrl! : s.dataUrl).port);
      for (const framing of [...FRAMINGS, "late"] as const) {
        for (const minor of [1, 0] as const) {
          const label = `${framing} upstream, HTTP/1.${minor} client`;
          const client = request(
            port,
            listener === "TLS" ? ca.cert : undefined,
            `/${framing}`,
            minor,
          );
          try {
            // The head and the first event, while the upstream still holds the second.
            // (For `late`, the head alone: a slow first byte must not hold back the status.)
            const first = framing === "late" ? "" : ONE;
            await client.until((t) => t.includes("\r\n\r\n") && t.includes(first), label);
            assertMatch(client.text(), /^HTTP\/1\.1 200 /, label);
            assertMatch(client.text(), /\r\ncontent-type: text\/event-stream\r\n/i, label);
            ok(!client.text().includes(TWO), label);
            await release();
            await client.until((t) => t.includes(TWO), label);
            // The answer then ends: the client reads exactly the two events.
            await client.closed;
            assertEquals(bodyOf(client.text()), ONE + TWO, label);
          } catch (err) {
            releaseAll();
            throw err;
          } finally {
            client.close();
          }
        }
      }
    });
  }
}

Deno.test("a streamed answer's head and first part reach an HTTP/2 client before the upstream sends the rest", async () => {
  const { up, release, releaseAll } = pausingUpstream();
  await using _up = up;
  const { ca, leaf } = await testCertificate("shop.test");
  await using s = await startTestServer({
    config: { server: { data: { https_listen: "127.0.0.1:0" } } },
  });
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url], tls: leaf }), SYSTEM);
  const session = http2.connect(s.dataHttpsUrl!, { servername: "shop.test", ca: ca.cert });
  session.on("error", () => {});
  try {
    for (const framing of FRAMINGS) {
      const stream = session.request({ ":path": `/${framing}`, host: "shop.test" });
      let got = "";
      let status: unknown;
      const head = new Promise<void>((r) => stream.on("response", () => r()));
      const waiters = new Set<() => void>();
      stream.on("response", (headers) => status = headers[":status"]);
      stream.on("data", (d: Uint8Array) => {
        got += new TextDecoder().decode(d);
        for (const w of [...waiters]) w();
      });
      const ended = new Promise<void>((r) => stream.on("close", () => r()));
      const until = (want: string) =>
        new Promise<void>((ok, fail) => {
          const timer = setTimeout(
            () => fail(new Error(`${framing}: ${want} not received`)),
            FAIL_AFTER_MS,
          );
          const check = () => {
            if (!got.includes(want)) return;
            clearTimeout(timer);
            waiters.delete(check);
            ok();
          };
          waiters.add(check);
          check();
        });
      try {
        await until(ONE);
        await head;
        assertEquals(status, 200, framing);
        ok(!got.includes(TWO), framing);
        await release();
        await ended;
        assertEquals(got, ONE + TWO, framing);
      } catch (err) {
        releaseAll();
        throw err;
      }
    }
  } finally {
    session.destroy();
  }
});
