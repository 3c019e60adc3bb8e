/** The connection front's framing follower: heads, counted and chunked bodies, byte by byte. */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { RequestFraming } from "../../net/http1_framing.ts";

const enc = new TextEncoder();

/** Feeds `text` in pieces of `step` bytes; the phases seen after each piece, deduplicated. */
function follow(text: string, step: number): { ok: boolean; phases: string[]; f: RequestFraming } {
  const f = new RequestFraming();
  const bytes = enc.encode(text);
  const phases: string[] = [];
  for (let i = 0; i < bytes.length; i += step) {
    if (!f.feed(bytes.subarray(i, i + step))) return { ok: false, phases, f };
    if (phases.at(-1) !== f.phase) phases.push(f.phase);
  }
  return { ok: true, phases, f };
}

const GET = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
const POST = "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
const CHUNKED =
  "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2 \r\nde\r\n0\r\nT: 1\r\n\r\n";

Deno.test("heads, counted and chunked bodies end where they end, in any split", () => {
  for (const step of [1, 2, 3, 7, 1000]) {
    for (
      const text of [GET, POST, CHUNKED, GET + POST + CHUNKED + GET, "GET / HTTP/1.1\nHost: a\n\n"]
    ) {
      const r = follow(text, step);
      ok(r.ok, `step ${step}: ${JSON.stringify(text)}`);
      assertEquals(r.f.phase, "idle", `step ${step}: ${JSON.stringify(text)}`);
    }
  }
  assertEquals(follow(GET + GET + GET, 1000).f.heads, 3);
  assertEquals(follow("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", 1000).f.phase, "body");
  assertEquals(follow("GET / HTTP/1.1\r\nHost: a\r\n", 1000).f.phase, "head");
});

Deno.test("bad chunked framing is found, with the request it broke", () => {
  const head = "POST /up?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (
    const [body, reason] of [
      ["ZZ\r\n", "chunk size missing"],
      ["3\r\nabcdef\r\n", "chunk data longer than its size"],
      ["3\nabc", "invalid chunk size line"],
      ["3;a\nb\r\n", "newline in a chunk extension"],
      [`0\r\nX: ${"t".repeat(9000)}\r\n\r\n`, "trailer section too large"],
      ["FFFFFFFFFFFFFFFF\r\n", "chunk size too large"],
    ]
  ) {
    for (const step of [1, 1000]) {
      const r = follow(head + body, step);
      assertEquals(r.ok, false, `${reason}, step ${step}`);
      assertEquals(r.f.broken?.reason, reason);
      assertEquals(r.f.broken?.method, "POST");
      assertEquals(r.f.broken?.target, "/up?x=1");
    }
  }
});

Deno.test("HTTP/2, an accepted CONNECT, unknown codings and an accepted upgrade stop the following", () => {
  const h2 = follow("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 1000).f;
  // The frame follower takes over where the preface's request line ends.
  assertEquals([h2.phase, h2.h2, h2.tunnelAt], ["tunnel", true, 18]);
  // Counted in the chunk that ended the request line's head.
  const split = new RequestFraming();
  split.feed(enc.encode("PRI * HTTP/2.0\r\n"));
  split.feed(enc.encode("\r\nSM\r\n\r\n"));
  assertEquals([split.phase, split.h2, split.tunnelAt], ["tunnel", true, 2]);
  assertEquals(follow(GET, 1000).f.h2, false);
  // Any other PRI request is HTTP/1.1 for the server: its body is a body, not frames.
  const pri = follow("PRI /x HTTP/1.1\r\nHost: a\r\nContent-Length: 15\r\n\r\nSM\r\n\r\n", 1000).f;
  assertEquals([pri.phase, pri.h2], ["body", false]);
  assertEquals(follow("PRI * HTTP/2.0\r\nHost: a\r\n\r\n", 1000).f.h2, false);
  // CONNECT is a request like another until a 2xx answer (a refused one keeps its deadlines).
  const connect = follow("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 1000);
  assertEquals(connect.f.phase, "idle");
  connect.f.answered(enc.encode("HTTP/1.1 403 Forbidden\r\n"));
  assertEquals(connect.f.phase, "idle");
  const tunnel = follow("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 1000);
  tunnel.f.answered(enc.encode("HTTP/1.1 200 OK\r\n"));
  assertEquals(tunnel.f.phase, "tunnel");
  assertEquals(
    follow("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 1000).f.phase,
    "tunnel",
  );
  const ws = follow("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 1000);
  assertEquals(ws.f.phase, "idle");
  ws.f.answered(enc.encode("HTTP/1.1 101 Switching Protocols\r\n"));
  assertEquals(ws.f.phase, "tunnel");
  const refused = follow("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", 1000);
  refused.f.answered(enc.encode("HTTP/1.1 403 Forbidden\r\n"));
  assertEquals(refused.f.phase, "idle");
  // The status code split over the server's reads.
  const split101 = follow("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", 1000);
  split101.f.answered(enc.encode("HTTP/1.1 1"));
  assertEquals(split101.f.phase, "idle");
  split101.f.answered(enc.encode("01 Switching Protocols\r\n"));
  assertEquals(split101.f.phase, "tunnel");
  // Only the connection's first request may make a tunnel: a later one's answer starts where
  // the answers before it end, which is not followed (an earlier body could read "101" there).
  const later = follow(`${GET}GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n`, 1000);
  assertEquals(later.f.upgradeAsked, false);
  later.f.answered(enc.encode("HTTP/1.1 101 Switching Protocols\r\n"));
  assertEquals(later.f.phase, "idle");
  const laterConnect = follow(`${GET}CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n`, 1000);
  laterConnect.f.answered(enc.encode("HTTP/1.1 200 OK\r\n"));
  assertEquals(laterConnect.f.phase, "idle");
});
