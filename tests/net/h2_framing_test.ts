/** The connection front's HTTP/2 frame follower: open requests and header blocks, in any split. */
import { assertEquals } from "../_helpers/assert.ts";
import { Http2Framing } from "../../net/h2_framing.ts";

const enc = new TextEncoder();

function frame(type: number, flags: number, stream: number, length = 0): Uint8Array {
  const out = new Uint8Array(9 + length);
  out.set([length >> 16, (length >> 8) & 255, length & 255, type, flags]);
  new DataView(out.buffer).setUint32(5, stream);
  return out;
}

const join = (...parts: Uint8Array[]) => new Uint8Array(parts.flatMap((p) => [...p]));

const DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, PING = 6, CONTINUATION = 9;
const END_STREAM = 1, END_HEADERS = 4, PADDED = 8;

/** Feeds `bytes` to one direction in pieces of `step`, each piece stamped with the next time. */
function feed(h: Http2Framing, side: "client" | "server", bytes: Uint8Array, step: number) {
  for (let i = 0; i < bytes.length; i += step) {
    const piece = bytes.subarray(i, i + step);
    if (side === "client") h.fromClient(piece, 1000 + i);
    else h.fromServer(piece, 5000 + i);
  }
}

const REST = enc.encode("SM\r\n\r\n");

Deno.test("Http2Framing counts a request open from its header block to the end of its answer, in any split", () => {
  for (const step of [1, 2, 5, 9, 10, 1000]) {
    const h = new Http2Framing();
    // Preface, SETTINGS with a payload, a PING: no request yet.
    feed(h, "client", join(REST, frame(SETTINGS, 0, 0, 12), frame(PING, 0, 0, 8)), step);
    assertEquals([h.requests, h.open, h.blockSince], [0, 0, -1], `step ${step}`);
    // HEADERS (no END_HEADERS) + CONTINUATION: the block begins with the HEADERS frame header.
    const headers = frame(HEADERS, 0, 1, 20);
    feed(h, "client", headers, step);
    assertEquals(h.blockSince >= 1000, true, `step ${step}`);
    assertEquals(h.requests, 0, `step ${step}`);
    feed(h, "client", frame(CONTINUATION, END_HEADERS, 1, 7), step);
    assertEquals([h.requests, h.open, h.blockSince], [1, 1, -1], `step ${step}`);
    // A body with END_STREAM, then trailers on the same stream: still one request.
    feed(h, "client", join(frame(DATA, 0, 1, 30), frame(HEADERS, 5, 1, 3)), step);
    assertEquals([h.requests, h.open], [1, 1], `step ${step}`);
    // A second request, whose block ends with its HEADERS frame.
    feed(h, "client", frame(HEADERS, END_HEADERS | END_STREAM, 3, 4), step);
    assertEquals([h.requests, h.open], [2, 2], `step ${step}`);
    // The server: SETTINGS, the answer to 1 (HEADERS, then DATA with END_STREAM), 3 reset.
    feed(h, "server", join(frame(SETTINGS, 0, 0, 6), frame(HEADERS, END_HEADERS, 1, 5)), step);
    assertEquals(h.open, 2, `step ${step}`);
    feed(h, "server", join(frame(DATA, 0, 1, 100), frame(DATA, END_STREAM, 1, 0)), step);
    assertEquals([h.open, h.idleSince], [1, -1], `step ${step}`);
    feed(h, "server", frame(RST_STREAM, 0, 3, 4), step);
    assertEquals(h.open, 0, `step ${step}`);
    assertEquals(h.idleSince >= 5000, true, `step ${step}`);
    // A block on a finished stream is not a new request.
    feed(h, "client", frame(HEADERS, END_HEADERS, 3, 2), step);
    assertEquals([h.requests, h.open], [2, 0], `step ${step}`);
  }
});

Deno.test("Http2Framing ends a request the client resets or the server answers with HEADERS alone", () => {
  const h = new Http2Framing();
  h.fromClient(join(REST, frame(HEADERS, END_HEADERS | END_STREAM, 1, 3)), 1);
  h.fromClient(frame(HEADERS, END_HEADERS, 3, 3), 2);
  assertEquals(h.open, 2);
  h.fromClient(frame(RST_STREAM, 0, 3, 4), 3);
  assertEquals(h.open, 1);
  // A HEAD's answer, or a 204: HEADERS with END_STREAM.
  h.fromServer(frame(HEADERS, END_HEADERS | END_STREAM, 1, 2), 4);
  assertEquals([h.open, h.idleSince], [0, 4]);
});

Deno.test("Http2Framing stops at a preface that is not HTTP/2's", () => {
  const h = new Http2Framing();
  h.fromClient(enc.encode("SX\r\n\r\n"), 1);
  h.fromClient(frame(HEADERS, END_HEADERS, 1, 0), 2);
  assertEquals([h.broken, h.requests], [true, 0]);
});

/** A frame with its payload. */
function withPayload(type: number, flags: number, stream: number, payload: number[]) {
  const out = frame(type, flags, stream, payload.length);
  out.set(payload, 9);
  return out;
}

const u32 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const WINDOW_UPDATE = 8;

Deno.test("Http2Framing waits for a request body only while the server has room for it", () => {
  for (const step of [1, 4, 1000]) {
    const h = new Http2Framing();
    // A GET awaits no body; a POST does, from the end of its header block.
    feed(h, "client", join(REST, frame(HEADERS, END_HEADERS | END_STREAM, 1, 3)), step);
    assertEquals(h.bodySince, -1, `step ${step}`);
    h.fromClient(frame(HEADERS, END_HEADERS, 3, 3), 2000);
    assertEquals(h.bodySince, 2000, `step ${step}`);
    // Body bytes move it, down to the last payload byte that came.
    const data = frame(DATA, 0, 3, 100);
    h.fromClient(data.subarray(0, 50), 2100);
    h.fromClient(data.subarray(50), 2200);
    assertEquals(h.bodySince, 2200, `step ${step}`);
    // The stream's window (65,535) used up: the client cannot send, nothing is awaited.
    h.fromClient(frame(DATA, 0, 3, 65_435), 2300);
    assertEquals(h.bodySince, -1, `step ${step}`);
    // The server makes room on the stream, but the connection's window is used up too.
    const update = withPayload(WINDOW_UPDATE, 0, 3, u32(1000));
    h.fromServer(update.subarray(0, step), 2500);
    h.fromServer(update.subarray(step), 2500);
    assertEquals(h.bodySince, -1, `step ${step}`);
    h.fromServer(withPayload(WINDOW_UPDATE, 0, 0, u32(5000)), 3000);
    assertEquals(h.bodySince, 3000, `step ${step}`);
    // SETTINGS lowering the initial window takes the stream's room away; raising gives it back.
    h.fromServer(withPayload(SETTINGS, 0, 0, [0, 4, ...u32(0)]), 3100);
    assertEquals(h.bodySince, -1, `step ${step}`);
    h.fromServer(withPayload(SETTINGS, 1, 0, []), 3150); // an ACK carries nothing
    h.fromServer(withPayload(SETTINGS, 0, 0, [0, 3, ...u32(100), 0, 4, ...u32(70_000)]), 3200);
    assertEquals(h.bodySince, 3200, `step ${step}`);
    // A new stream starts with the new initial window.
    h.fromClient(frame(HEADERS, END_HEADERS, 5, 3), 3300);
    assertEquals(h.bodySince, 3200, `step ${step}`);
    // Trailers with END_STREAM end 3's body, END_STREAM on DATA 5's.
    h.fromClient(frame(HEADERS, END_HEADERS | END_STREAM, 3, 2), 3400);
    assertEquals(h.bodySince, 3300, `step ${step}`);
    h.fromClient(frame(DATA, END_STREAM, 5, 0), 3500);
    assertEquals([h.bodySince, h.open], [-1, 3], `step ${step}`);
  }
});

Deno.test("Http2Framing finds an answer held back by the client's flow control, and lets go when it grants room", () => {
  const h = new Http2Framing();
  h.fromClient(join(REST, frame(HEADERS, END_HEADERS | END_STREAM, 1, 3)), 1000);
  assertEquals(h.answerHeldSince, -1);
  // The answer uses up the stream's 65,535 bytes: held from then.
  h.fromServer(join(frame(HEADERS, END_HEADERS, 1, 2), frame(DATA, 0, 1, 65_000)), 1100);
  assertEquals(h.answerHeldSince, -1);
  h.fromServer(frame(DATA, 0, 1, 535), 1200);
  assertEquals(h.answerHeldSince, 1200);
  // The client grants the stream room; the connection's window (also used up) stays held.
  h.fromClient(withPayload(WINDOW_UPDATE, 0, 1, u32(10_000)), 1300);
  assertEquals(h.answerHeldSince, 1200);
  h.fromClient(withPayload(WINDOW_UPDATE, 0, 0, u32(1_000_000)), 1400);
  assertEquals(h.answerHeldSince, -1);
  // A client SETTINGS lowering the initial window holds it again; a new stream starts held.
  h.fromClient(withPayload(SETTINGS, 0, 0, [0, 4, ...u32(0)]), 1500);
  assertEquals(h.answerHeldSince, 1500);
  h.fromClient(frame(HEADERS, END_HEADERS | END_STREAM, 3, 3), 1600);
  h.fromClient(withPayload(SETTINGS, 0, 0, [0, 4, ...u32(100_000)]), 1700);
  assertEquals(h.answerHeldSince, -1);
  // An empty DATA with END_STREAM needs no room: the answer ends.
  h.fromServer(frame(DATA, 0, 1, 100_000), 1800);
  assertEquals(h.answerHeldSince, 1800);
  h.fromServer(frame(DATA, END_STREAM, 1, 0), 1900);
  assertEquals([h.answerHeldSince, h.open], [-1, 1]);
});

Deno.test("Http2Framing reads a SETTINGS frame whole, however long, in any split", () => {
  for (const step of [1, 5, 6, 7, 1000, 20_000]) {
    const h = new Http2Framing();
    feed(h, "client", join(REST, frame(HEADERS, END_HEADERS | END_STREAM, 1, 3)), step);
    // 2,730 entries (the most a 16 KiB frame holds): the last initial window, 0, is the one.
    const entries: number[] = [];
    for (let i = 0; i < 2729; i++) entries.push(0, 4, ...u32(65_535));
    entries.push(0, 4, ...u32(0));
    feed(h, "client", withPayload(SETTINGS, 0, 0, entries), step);
    // Stream 1's answer window went from 65,535 to 0, but its answer has not begun: the server
    // has nothing held back. Its HEADERS come: held from then.
    assertEquals(h.answerHeldSince, -1, `step ${step}`);
    h.fromServer(frame(HEADERS, END_HEADERS, 1, 2), 60_000);
    assertEquals(h.answerHeldSince, 60_000, `step ${step}`);
    // The same from the server: a POST's body awaits no room.
    feed(h, "server", withPayload(SETTINGS, 0, 0, entries), step);
    feed(h, "client", frame(HEADERS, END_HEADERS, 3, 3), step);
    assertEquals(h.bodySince, -1, `step ${step}`);
  }
});

Deno.test("Http2Framing moves a body's deadline with its data only, not padding or empty frames", () => {
  for (const step of [1, 2, 9, 10, 1000]) {
    const h = new Http2Framing();
    feed(h, "client", join(REST, frame(HEADERS, END_HEADERS, 1, 3)), step);
    const since = h.bodySince;
    // Empty, and padding only (pad length 20 of 21 bytes): the body has not moved.
    h.fromClient(frame(DATA, 0, 1, 0), 90_000);
    const padded = withPayload(DATA, PADDED, 1, [20, ...new Array(20).fill(0)]);
    for (let i = 0; i < padded.length; i += step) {
      h.fromClient(padded.subarray(i, i + step), 91_000);
    }
    assertEquals(h.bodySince, since, `step ${step}`);
    // 5 bytes of data between the pad length and 3 bytes of padding: it moved.
    const some = withPayload(DATA, PADDED, 1, [3, 1, 2, 3, 4, 5, 0, 0, 0]);
    for (let i = 0; i < some.length; i += step) {
      h.fromClient(some.subarray(i, i + step), 92_000 + i);
    }
    // Moved at the last data byte (index 14), not later with the padding.
    assertEquals(h.bodySince, 92_000 + Math.floor(14 / step) * step, `step ${step}`);
  }
});

Deno.test("Http2Framing's GOAWAY names the highest stream id, and is withheld inside a server frame", () => {
  const h = new Http2Framing();
  h.fromClient(
    join(REST, frame(HEADERS, END_HEADERS | END_STREAM, 1), frame(HEADERS, END_HEADERS, 5)),
    1000,
  );
  const answer = frame(DATA, 0, 1, 10);
  h.fromServer(answer.subarray(0, 4), 2000);
  assertEquals(h.goaway(0xb), undefined);
  h.fromServer(answer.subarray(4, 12), 2000);
  assertEquals(h.goaway(0xb), undefined);
  h.fromServer(answer.subarray(12), 2000);
  assertEquals([...h.goaway(0xb)!], [
    0,
    0,
    8,
    7,
    0,
    0,
    0,
    0,
    0,
    0x7f,
    0xff,
    0xff,
    0xff,
    0,
    0,
    0,
    0xb,
  ]);
});

Deno.test("Http2Framing finds when a body falls below the minimum rate, not counting time without room", () => {
  const h = new Http2Framing();
  feed(h, "client", join(REST, frame(HEADERS, END_HEADERS | END_STREAM, 1, 3)), 1000);
  assertEquals(h.bodyRateDue(500, 10_000), -1, "a GET awaits no body");
  // A POST at 2,000: 10 s of grace, then 2 ms of the client's time for each byte.
  h.fromClient(frame(HEADERS, END_HEADERS, 3, 3), 2000);
  assertEquals(h.bodyRateDue(500, 10_000), 12_000);
  assertEquals(h.bodyRateDue(0, 10_000), -1, "no minimum rate");
  h.fromServer(withPayload(WINDOW_UPDATE, 0, 0, u32(1_000_000)), 2050);
  h.fromClient(frame(DATA, 0, 3, 100), 2100);
  assertEquals(h.bodyRateDue(500, 10_000), 12_200);
  // The stream's window used up at 3,000: the client cannot send, nothing is due.
  h.fromClient(frame(DATA, 0, 3, 65_435), 3000);
  assertEquals(h.bodyRateDue(500, 10_000), -1);
  // Room again at 8,000: the 5 s without it are not the client's.
  h.fromServer(withPayload(WINDOW_UPDATE, 0, 3, u32(1000)), 8000);
  assertEquals(h.bodyRateDue(500, 10_000), 12_000 + 65_535 * 2 + 5_000);
});
