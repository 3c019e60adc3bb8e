/**
 * HTTP/2 bytes for raw-socket tests of the connection front (net/h2_framing.ts): the client
 * preface, frames (RFC 9113 §4.1), SETTINGS payloads and a minimal HPACK request block.
 */

const enc = new TextEncoder();

/** The client connection preface (RFC 9113 §3.4). */
export const PREFACE = enc.encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** One HTTP/2 frame (RFC 9113 §4.1). */
export function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Uint8Array = new Uint8Array(),
): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(9 + payload.length);
  out.set([payload.length >> 16, (payload.length >> 8) & 255, payload.length & 255, type, flags]);
  new DataView(out.buffer).setUint32(5, stream);
  out.set(payload, 9);
  return out;
}

/** A SETTINGS payload from `[id, value]` pairs. */
export function settings(pairs: Array<[number, number]>): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(pairs.length * 6);
  const v = new DataView(out.buffer);
  pairs.forEach(([id, value], i) => {
    v.setUint16(i * 6, id);
    v.setUint32(i * 6 + 2, value);
  });
  return out;
}

/** An HPACK block for `GET path` to `shop.test` (literal :path, literal :authority). */
export function getBlock(path = "/"): Uint8Array<ArrayBuffer> {
  const host = enc.encode("shop.test");
  const p = enc.encode(path);
  return new Uint8Array([0x82, 0x86, 0x44, p.length, ...p, 0x41, host.length, ...host]);
}
