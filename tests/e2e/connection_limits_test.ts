/**
 * Connection limits on both planes (issue #22, item 1) and bad chunked framing (item 7): real
 * servers, real sockets. The descriptor-limit case runs `waf serve` as a process under
 * `prlimit --nofile=1024:1024`, the report's reproduction.
 */
import { ignoreWithout, missing, probe, runs } from "../_helpers/services.ts";
import net from "node:net";
import tls from "node:tls";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite } from "../_helpers/protection.ts";
import { bytes, closedAfter, rawSend } from "../_helpers/raw_socket.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";
import { waitFor } from "../_helpers/wait.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";

const enc = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const SHORT = {
  header_timeout: "1s",
  body_timeout: "1s",
  keepalive_timeout: "1s",
};

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function counter(s: TestServer, listener: string) {
  return s.monitor.connections.listener(listener);
}

Deno.test("a request head that trickles in is cut at the header deadline, however slowly it comes", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { limits: SHORT }, management: { limits: SHORT } } },
  });
  addSite(s, up.url);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const t0 = performance.now();
  const trickle = (async () => {
    // One header byte every 200 ms: never idle for long, never done.
    await conn.write(enc.encode("GET / HTTP/1.1\r\nHost: shop.test\r\n")).catch(() => {});
    for (let i = 0; i < 50; i++) {
      await sleep(200);
      if (await conn.write(enc.encode("X")).catch(() => null) === null) return;
    }
  })();
  const ms = await closedAfter(conn, t0);
  await trickle;
  ok(ms >= 900 && ms < 3_000, `closed after ${Math.round(ms)} ms (deadline 1 s)`);
  assertEquals(counter(s, "data").closed.header_timeout, 1);
  // A connection that sends nothing at all is cut the same way.
  const idle = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const t1 = performance.now();
  const idleMs = await closedAfter(idle, t1);
  ok(idleMs >= 900 && idleMs < 3_000, `idle connection closed after ${Math.round(idleMs)} ms`);
  // The management listener has the same front.
  const mgmt = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.managementUrl) });
  await mgmt.write(enc.encode("GET /health/live HTTP/1.1\r\n"));
  const mgmtMs = await closedAfter(mgmt, performance.now());
  ok(
    mgmtMs >= 900 && mgmtMs < 3_000,
    `management connection closed after ${Math.round(mgmtMs)} ms`,
  );
  assertEquals(counter(s, "management").closed.header_timeout, 1);
});

Deno.test("a slow body is cut at the body deadline; a body that keeps coming is not", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const port = portOf(s.dataUrl);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const t0 = performance.now();
  await conn.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 100000\r\n\r\nfirst=part",
  ));
  // ...and then nothing more.
  const ms = await closedAfter(conn, t0);
  ok(ms >= 900 && ms < 3_000, `closed after ${Math.round(ms)} ms (body deadline 1 s)`);
  assertEquals(counter(s, "data").closed.body_timeout, 1);

  // A body sent in pieces 400 ms apart over 2.4 s (longer than every deadline) gets through.
  const steady = await Deno.connect({ hostname: "127.0.0.1", port });
  await steady.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 6\r\nConnection: close\r\n\r\n",
  ));
  for (const ch of "abcdef") {
    await sleep(400);
    await steady.write(enc.encode(ch));
  }
  const buf = new Uint8Array(4096);
  const n = await steady.read(buf);
  steady.close();
  const head = new TextDecoder().decode(buf.subarray(0, n ?? 0));
  ok(head.startsWith("HTTP/1.1 200"), head.slice(0, 80));
});

Deno.test("a body trickled below body_min_rate is cut once body_min_rate_after has passed (issue #37)", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: {
      server: {
        data: { limits: { body_timeout: "60s", body_min_rate: 1000, body_min_rate_after: "1s" } },
      },
    },
  });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const t0 = performance.now();
  await conn.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 100000\r\n\r\nx",
  ));
  // A byte every 300 ms: far inside body_timeout, far below 1,000 bytes a second.
  const trickle = (async () => {
    for (let i = 0; i < 30; i++) {
      await sleep(300);
      if (await conn.write(enc.encode("x")).catch(() => null) === null) return;
    }
  })();
  const ms = await closedAfter(conn, t0);
  await trickle;
  ok(ms >= 900 && ms < 3_000, `closed after ${Math.round(ms)} ms (1 s at the minimum rate)`);
  assertEquals(counter(s, "data").closed.body_rate, 1);
  assertEquals(counter(s, "data").closed.body_timeout, 0);
});

Deno.test("a body that stops after a head handed over to Deno.serve (Upgrade) is cut at the body deadline too", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const t0 = performance.now();
  // An Upgrade header sends the connection to Deno.serve, which has no body deadline.
  await conn.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nUpgrade: h2c\r\nContent-Length: 100\r\n\r\n",
  ));
  const ms = await closedAfter(conn, t0);
  ok(ms >= 900 && ms < 3_000, `closed after ${Math.round(ms)} ms (body deadline 1 s)`);
  assertEquals(counter(s, "data").closed.body_timeout, 1);
});

Deno.test("a CONNECT (handed over to Deno.serve) that is refused leaves a connection the keep-alive deadline still ends", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const t0 = performance.now();
  await conn.write(enc.encode("CONNECT shop.test:80 HTTP/1.1\r\nHost: shop.test:80\r\n\r\n"));
  const ms = await closedAfter(conn, t0);
  ok(ms < 3_000, `closed after ${Math.round(ms)} ms (keep-alive deadline 1 s)`);
});

Deno.test("a request the front's follower gives up on (a head past 64 KiB, odd framing) keeps a deadline", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { limits: SHORT }, management: { limits: SHORT } } },
  });
  addSite(s, up.url, { mode: "off" });
  // A head of 65,540 bytes: past the follower's 64 KiB, within what Deno.serve takes. The data
  // listener's own server hands an Upgrade request over to the pipe; the management listener
  // pipes everything.
  const head = (first: string) => {
    const pre = `${first}\r\nHost: shop.test\r\nUpgrade: foo\r\nX-Big: `;
    return `${pre}${"a".repeat(65_540 - pre.length - 4)}\r\n\r\n`;
  };
  const cases: Array<[string, string]> = [
    [s.managementUrl, head("GET / HTTP/1.1")],
    [s.dataUrl, head("GET / HTTP/1.1")],
    [s.managementUrl, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"],
    [s.managementUrl, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n"],
  ];
  for (const [url, text] of cases) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(url) });
    const t0 = performance.now();
    await conn.write(enc.encode(text));
    const ms = await closedAfter(conn, t0);
    ok(ms < 3_000, `${url} ${text.slice(0, 40)}: closed after ${Math.round(ms)} ms`);
  }
});

Deno.test("an upgrade asked while an earlier answer streams is not taken for a tunnel by that answer's bytes", async () => {
  let go!: () => void;
  const released = new Promise<void>((resolve) => go = resolve);
  // An upstream whose answer to /stream pauses, then goes on with bytes that read "101" where a
  // status code sits in an answer's first line.
  await using up = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path !== "/stream") return new Response(`${path}-done`);
    return new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(enc.encode("start;"));
          await released;
          // Chunked by Deno.serve as `14\r\nxxxxx101...`: "101" at bytes 9 to 11 of the read.
          controller.enqueue(enc.encode("xxxxx101-stream-done"));
          controller.close();
        },
      }),
    );
  });
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, `http://127.0.0.1:${up.addr.port}`, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const buf = new Uint8Array(65_536);
  let got = "";
  const until = async (text: string) => {
    while (!got.includes(text)) {
      const n = await conn.read(buf);
      ok(n !== null, `closed before ${text}`);
      got += new TextDecoder().decode(buf.subarray(0, n));
    }
  };
  // An Upgrade the server refuses (the own server hands the connection over to the pipe).
  await conn.write(enc.encode("GET /first HTTP/1.1\r\nHost: shop.test\r\nUpgrade: foo\r\n\r\n"));
  await until("/first-done");
  await conn.write(enc.encode("GET /stream HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
  await until("start;");
  // Another Upgrade while /stream's answer is under way; its answer comes after the rest.
  await conn.write(enc.encode("GET /y HTTP/1.1\r\nHost: shop.test\r\nUpgrade: foo\r\n\r\n"));
  await sleep(200);
  go();
  await until("/y-done");
  const ms = await closedAfter(conn, performance.now());
  ok(ms < 3_000, `closed after ${Math.round(ms)} ms (keep-alive deadline 1 s)`);
});

Deno.test("a keep-alive connection idle past the keep-alive deadline is closed; one in use is not", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const buf = new Uint8Array(8192);
  // Three requests 600 ms apart on one connection: each gap is within the 1 s deadline.
  for (let i = 0; i < 3; i++) {
    await conn.write(enc.encode("GET /k HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    const n = await conn.read(buf);
    ok(n !== null && new TextDecoder().decode(buf.subarray(0, n)).startsWith("HTTP/1.1 200"));
    await sleep(600);
  }
  const ms = await closedAfter(conn, performance.now());
  ok(ms < 2_500, `idle keep-alive closed after ${Math.round(ms)} ms more`);
  assertEquals(counter(s, "data").closed.keepalive_timeout, 1);
});

Deno.test("connections past the per-client cap are refused and counted; other clients are served", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: {
      server: { data: { limits: { max_connections_per_client: 5 } } },
      monitor: { prometheus: { public: true } },
    },
  });
  addSite(s, up.url, { mode: "off" });
  const port = portOf(s.dataUrl);
  const held: Deno.Conn[] = [];
  for (let i = 0; i < 5; i++) held.push(await Deno.connect({ hostname: "127.0.0.1", port }));
  const sixth = await Deno.connect({ hostname: "127.0.0.1", port });
  const ms = await closedAfter(sixth, performance.now());
  ok(ms < 2_000, "the sixth connection is closed at once");
  assertEquals(counter(s, "data").refused.per_client, 1);
  // Another client address (127.0.0.2, same machine) is not affected.
  const other = await new Promise<net.Socket>((resolve, reject) => {
    const sock = net.connect(
      { host: "127.0.0.1", port, localAddress: "127.0.0.2" },
      () => resolve(sock),
    );
    sock.once("error", reject);
  });
  const answer = await new Promise<string>((resolve) => {
    let text = "";
    other.on("data", (d) => (text += d.toString()));
    other.on("close", () => resolve(text));
    other.write("GET / HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n");
  });
  ok(answer.startsWith("HTTP/1.1 200"), answer.slice(0, 60));
  for (const c of held) c.close();
  // Once they are gone, the first client is served again, and the refusal shows in the metrics.
  await sleep(100);
  const r = await rawSend(
    port,
    bytes("GET / HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n"),
    false,
  );
  assertEquals(r.status, 200);
  const metrics = await (await s.api("/metrics")).text();
  ok(
    /waf_connections_refused_total\{listener="data",reason="per_client"\} 1/.test(metrics),
    "refusal in /metrics",
  );
});

Deno.test("bad chunked framing gets a 400 and an access-log record", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const port = portOf(s.dataUrl);
  const cases: Array<[string, string]> = [
    ["not a hex size", "ZZZ\r\nxx\r\n"],
    ["data longer than its size", "3\r\nabcdef\r\n0\r\n\r\n"],
    ["a bare LF after the size", "3\nabc\r\n0\r\n\r\n"],
    ["an oversized trailer", `0\r\nX-T: ${"t".repeat(10_000)}\r\n\r\n`],
  ];
  for (const [name, body] of cases) {
    const r = await rawSend(
      port,
      bytes(
        `POST /upload?case=${encodeURIComponent(name)} HTTP/1.1\r\nHost: shop.test\r\n` +
          `User-Agent: framing-test\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
      ),
      false,
    );
    assertEquals(r.status, 400, name);
  }
  const rows = await s.dataPlane.accessLog.list({ limit: 50 });
  const framed = rows.map((r) => JSON.parse(r.record)).filter((r) =>
    r.chain.some((c: { check: string }) => c.check === "framing")
  );
  assertEquals(framed.length, cases.length, JSON.stringify(framed));
  for (const r of framed) {
    assertEquals(r.status, 400);
    assertEquals(r.site, "shop");
    assertEquals(r.path, "/upload");
    assertEquals(r.user_agent, "framing-test");
  }
  assertEquals(counter(s, "data").closed.bad_framing, cases.length);
  // Valid chunked bodies still go through, in one piece or byte by byte.
  const good = await rawSend(
    port,
    bytes(
      "POST /ok HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
        "3;ext=1\r\nabc\r\n2 \r\nde\r\n0\r\nX-Trailer: t\r\n\r\n",
    ),
    false,
  );
  assertEquals(good.status, 200);
});

const HAS_PRLIMIT = await probe("prlimit", () => runs("prlimit"));

Deno.test({
  name:
    "under a descriptor limit of 1024, 1,100 idle sockets do not end waf serve, and it serves after (needs prlimit)",
  ignore: ignoreWithout(HAS_PRLIMIT),
}, async () => {
  if (!HAS_PRLIMIT) throw missing("prlimit is not installed");
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n    limits:\n      header_timeout: "3s"\n' +
      '  management:\n    listen: "127.0.0.1:0"\nmonitor:\n  prometheus:\n    public: true\n',
  );
  await using waf = spawnWaf(["serve", "--data-dir", dir], {}, [], [
    "prlimit",
    "--nofile=1024:1024",
  ]);
  const m = await waf.waitFor(/data_plane=127\.0\.0\.1:(\d+) management=(http:\/\/[\d.:]+)/);
  const port = Number(m[1]);
  const sockets: net.Socket[] = [];
  let failed = 0;
  let closed = 0;
  await Promise.all(
    Array.from({ length: 1_100 }, () =>
      new Promise<void>((resolve) => {
        const sock = net.connect({ host: "127.0.0.1", port });
        sock.on("connect", () => resolve());
        sock.on("error", () => {
          failed++;
          resolve();
        });
        sock.on("close", () => {
          closed++;
          resolve();
        });
        sockets.push(sock);
      })),
  );
  const count = (metrics: string, name: string, reason: string) =>
    Number(
      new RegExp(`${name}\\{listener="data",reason="${reason}"\\} (\\d+)`).exec(metrics)?.[1] ??
        0,
    );
  // The report's process died as the accepts failed; this one refuses them and, at the header
  // deadline (3 s), cuts the idle sockets: waited for in the metrics, not slept through.
  let timedOut = 0;
  await waitFor(async () => {
    const text = await fetch(`${m[2]}/metrics`).then((r) => r.text(), () => "");
    timedOut = count(text, "waf_connections_closed_total", "header_timeout");
    return timedOut > 0;
  }, "the idle sockets cut at the header deadline");
  // "After" is when the server has ended every one of the flood's sockets (cut at the deadline or
  // refused); until then a new connection from the same client may still be refused.
  await waitFor(() => closed === sockets.length, "every idle socket ended by the server");
  const exited = await Promise.race([waf.wait(), sleep(100).then(() => "running")]);
  assertEquals(exited, "running", waf.output());
  // It serves again.
  const page = await fetch(`http://127.0.0.1:${port}/`);
  assertEquals(page.status, 404);
  await page.body?.cancel();
  const metrics = await (await fetch(`${m[2]}/metrics`)).text();
  const refused = count(metrics, "waf_connections_refused_total", "fd_limit") +
    count(metrics, "waf_connections_refused_total", "per_client");
  ok(refused > 0 && timedOut > 0, `refused ${refused}, timed out ${timedOut}, failed ${failed}`);
  for (const s of sockets) s.destroy();
  assertEquals(await waf.stop("SIGTERM"), 0);
});

Deno.test("with data-plane workers, each worker's front applies the limits and the process counts them", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { workers: 2, limits: SHORT } } },
  });
  addSite(s, up.url, { mode: "off" });
  const until = Date.now() + 10_000;
  while (!s.dataWorkers!.current() && Date.now() < until) await sleep(20);
  const port = portOf(s.dataUrl);
  const conns = await Promise.all(
    Array.from({ length: 4 }, () => Deno.connect({ hostname: "127.0.0.1", port })),
  );
  const times = await Promise.all(conns.map((c) => closedAfter(c, performance.now())));
  for (const ms of times) ok(ms >= 900 && ms < 3_000, `closed after ${Math.round(ms)} ms`);
  const bad = await rawSend(
    port,
    bytes("POST /x HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n"),
    false,
  );
  assertEquals(bad.status, 400);
  // Workers report their counters every second.
  const deadline = Date.now() + 5_000;
  // Each worker reports on its own second, so wait for both counts: the bad request may have
  // been served by the worker whose report comes last.
  while (
    (counter(s, "data").closed.header_timeout < 4 || counter(s, "data").closed.bad_framing < 1) &&
    Date.now() < deadline
  ) await sleep(100);
  assertEquals(counter(s, "data").closed.header_timeout, 4);
  assertEquals(counter(s, "data").closed.bad_framing, 1);
});

/** TLS to 127.0.0.1 as `a.test`; resolves with what the server sent until it closed. */
function tlsExchange(
  port: number,
  ca: string,
  send: string,
  then?: (socket: tls.TLSSocket) => void,
): Promise<{ reply: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const socket = tls.connect({ host: "127.0.0.1", port, servername: "a.test", ca }, () => {
      if (send) socket.write(send);
      then?.(socket);
    });
    let reply = "";
    socket.on("data", (d: Uint8Array) => reply += new TextDecoder().decode(d));
    socket.on("close", () => resolve({ reply, ms: performance.now() - t0 }));
    socket.on("error", (err) => reply === "" ? reject(err) : undefined);
  });
}

Deno.test("the HTTPS data listener has the same limits: header deadline, per-client cap, bad framing", async () => {
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const a = await createLeaf(ca, { commonName: "a.test", dnsNames: ["a.test"] }, now, systemRandom);
  await using up = startUpstream();
  await using s = await startTestServer({
    config: {
      server: {
        data: {
          https_listen: "127.0.0.1:0",
          limits: { ...SHORT, max_connections_per_client: 2 },
        },
      },
    },
  });
  const port = Number(new URL(s.dataHttpsUrl!).port);
  s.dataPlane.sites.create(
    siteInput({ name: "a", hosts: ["a.test"], upstreams: [up.url], tls: a }),
    SYSTEM,
  );
  // A head that never ends is cut at the deadline.
  const slow = await tlsExchange(port, ca.cert, "GET / HTTP/1.1\r\nHost: a.test\r\n");
  ok(slow.ms >= 900 && slow.ms < 3_000, `closed after ${Math.round(slow.ms)} ms`);
  // Bad chunked framing: 400 from the front, and the record has the real client and https.
  const bad = await tlsExchange(
    port,
    ca.cert,
    "POST /up HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
  );
  ok(bad.reply.startsWith("HTTP/1.1 400"), bad.reply.slice(0, 40));
  const rows = await s.dataPlane.accessLog.list({ limit: 10 });
  const rec = rows.map((r) => JSON.parse(r.record)).find((r) =>
    r.chain.some((c: { check: string }) => c.check === "framing")
  );
  assertEquals([rec?.proto, rec?.client_ip, rec?.site], ["https", "127.0.0.1", "a"]);
  // Two held connections from this address; a third is refused.
  const held: tls.TLSSocket[] = [];
  const opened = (socket: tls.TLSSocket) => held.push(socket);
  const pending = [tlsExchange(port, ca.cert, "", opened), tlsExchange(port, ca.cert, "", opened)];
  while (held.length < 2) await sleep(20);
  const before = counter(s, "data").refused.per_client;
  // Closed as soon as the handshake is done, without an answer.
  const third = await tlsExchange(
    port,
    ca.cert,
    "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
  ).catch(() => ({ reply: "", ms: 0 }));
  assertEquals(third.reply, "");
  assertEquals(counter(s, "data").refused.per_client, before + 1);
  for (const h of held) h.destroy();
  await Promise.all(pending);
});
