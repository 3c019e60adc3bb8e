/**
 * The frame follower against a simulated upload that flow control holds back (the exchange of
 * tests/e2e/http2_limits_test.ts's held upload): a client sending DATA as its windows allow, a
 * server granting room as it reads and then no more, both directions' bytes cut at random places
 * and fed in the order the connection front can see them (a server frame reaches the follower
 * after the client, which may already have used the room it gives). Seeded, so a failure names
 * the seed that reproduces it.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { Http2Framing } from "../../net/h2_framing.ts";
import { seeded } from "../_helpers/seeded.ts";

const DATA = 0, HEADERS = 1, SETTINGS = 4, WINDOW_UPDATE = 8;
const END_HEADERS = 4, ACK = 1;
const DEFAULT_WINDOW = 65_535;
const REST = new TextEncoder().encode("SM\r\n\r\n");

function frame(type: number, flags: number, stream: number, payload: number[] | number = []) {
  const length = typeof payload === "number" ? payload : payload.length;
  const out = new Uint8Array(9 + length);
  out.set([length >> 16, (length >> 8) & 255, length & 255, type, flags]);
  new DataView(out.buffer).setUint32(5, stream);
  if (typeof payload !== "number") out.set(payload, 9);
  return out;
}

const u32 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const windowUpdate = (stream: number, n: number) => frame(WINDOW_UPDATE, 0, stream, u32(n));
const initialWindow = (n: number) => frame(SETTINGS, 0, 0, [0, 3, ...u32(100), 0, 4, ...u32(n)]);

/** Bytes of one direction waiting to be fed to the follower, cut anywhere. */
class Pending {
  #parts: Uint8Array[] = [];
  #size = 0;
  get size() {
    return this.#size;
  }
  push(bytes: Uint8Array) {
    this.#parts.push(bytes);
    this.#size += bytes.length;
  }
  /** The next `n` bytes, whatever frames they cut. */
  take(n: number): Uint8Array {
    const out = new Uint8Array(Math.min(n, this.#size));
    let at = 0;
    while (at < out.length) {
      const first = this.#parts[0]!;
      const k = Math.min(first.length, out.length - at);
      out.set(first.subarray(0, k), at);
      at += k;
      if (k === first.length) this.#parts.shift();
      else this.#parts[0] = first.subarray(k);
    }
    this.#size -= out.length;
    return out;
  }
}

/**
 * One run: returns what the follower says once every byte went by with the client held back,
 * and when room came again, against what it should say.
 */
function run(seed: number) {
  const r = seeded(seed);
  const h = new Http2Framing();
  let now = 1_000;
  const tick = () => (now += r.int(4) === 0 ? r.int(300) : 0);
  const fromClient = new Pending();
  /** Server frames: sent, then seen by the client, then (after the front wrote them) followed. */
  const inFlight: Uint8Array[] = [];
  const fromServer = new Pending();
  // The client: preface, SETTINGS, a connection WINDOW_UPDATE, the request's header block.
  fromClient.push(REST);
  fromClient.push(
    frame(SETTINGS, 0, 0, [0, 2, ...u32(0), 0, 4, ...u32(r.pick([65_535, 1 << 20]))]),
  );
  if (r.int(2)) fromClient.push(windowUpdate(0, 1 << 20));
  fromClient.push(frame(HEADERS, END_HEADERS, 1, 40));
  // The server: SETTINGS with its initial window, the connection's window raised, an ACK.
  const serverInitial = r.pick([DEFAULT_WINDOW, 262_144, 1 << 20]);
  const serverConn = r.pick([DEFAULT_WINDOW, 1 << 20, 2 << 20]);
  inFlight.push(initialWindow(serverInitial));
  if (serverConn > DEFAULT_WINDOW) inFlight.push(windowUpdate(0, serverConn - DEFAULT_WINDOW));
  inFlight.push(frame(SETTINGS, ACK, 0));
  // What the client knows of its windows (from the server frames it has seen).
  let clientStream = DEFAULT_WINDOW, clientConn = DEFAULT_WINDOW;
  let initialSeen = DEFAULT_WINDOW;
  // What the server has read and granted back; it stops granting after `grants`.
  let received = 0, granted = 0, grants = r.int(40);
  const see = (f: Uint8Array) => {
    const type = f[3]!, stream = new DataView(f.buffer, f.byteOffset + 5).getUint32(0);
    const value = new DataView(f.buffer, f.byteOffset + f.length - 4).getUint32(0);
    if (type === WINDOW_UPDATE && stream === 0) clientConn += value;
    else if (type === WINDOW_UPDATE) clientStream += value;
    else if (type === SETTINGS && f.length > 9) {
      clientStream += value - initialSeen;
      initialSeen = value;
    }
  };
  for (let step = 0; step < 100_000; step++) {
    const canSend = Math.min(clientStream, clientConn, 16_384);
    const choices: (() => void)[] = [];
    if (canSend > 0) {
      choices.push(() => {
        const n = 1 + r.int(canSend);
        fromClient.push(frame(DATA, 0, 1, n));
        clientStream -= n;
        clientConn -= n;
        received += n;
      });
    }
    if (grants > 0 && received > granted) {
      choices.push(() => {
        const n = 1 + r.int(received - granted);
        granted += n;
        grants--;
        inFlight.push(windowUpdate(1, n));
        inFlight.push(windowUpdate(0, n));
      });
    }
    if (inFlight.length > 0) {
      choices.push(() => {
        const f = inFlight.shift()!;
        see(f);
        fromServer.push(f);
      });
    }
    if (fromClient.size > 0) {
      choices.push(() => h.fromClient(fromClient.take(1 + r.int(40_000)), tick()));
    }
    if (fromServer.size > 0) {
      choices.push(() => h.fromServer(fromServer.take(1 + r.int(40)), tick()));
    }
    if (choices.length === 0) break;
    r.pick(choices)();
  }
  const held = {
    bodySince: h.bodySince,
    open: h.open,
    requests: h.requests,
    blockSince: h.blockSince,
  };
  // The server reads again: room on the stream and on the connection, in either order, each
  // frame cut anywhere. The body is awaited from when the last used-up window got room.
  let opened = -1;
  for (const stream of r.int(2) ? [1, 0] : [0, 1]) {
    const update = windowUpdate(stream, 100_000);
    const cut = 1 + r.int(update.length - 1);
    h.fromServer(update.subarray(0, cut), tick());
    h.fromServer(update.subarray(cut), tick());
    if ((stream === 1 ? clientStream : clientConn) <= 0) opened = now;
  }
  return {
    held,
    clientHeld: Math.min(clientStream, clientConn) <= 0,
    release: h.bodySince,
    opened,
  };
}

Deno.test("Http2Framing never awaits a body that flow control holds back, whatever the splits and the order the front sees the frames in", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const { held, clientHeld, release, opened } = run(seed);
    assertEquals(
      { held, clientHeld, release },
      {
        held: { bodySince: -1, open: 1, requests: 1, blockSince: -1 },
        clientHeld: true,
        release: opened,
      },
      `seed ${seed}`,
    );
  }
});
