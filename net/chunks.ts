/**
 * Body bytes of HTTP/1.1 messages: one chunk framed for the chunked transfer coding, and pieces
 * joined into one array.
 */

/** `chunks` (`total` bytes together) as one array; a single chunk is returned as it is. */
export function concatChunks(chunks: readonly Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const sizeEncoder = new TextEncoder();

/** One chunk of a chunked body: its size in hex, CRLF, the bytes, CRLF. */
export function chunkFrame(chunk: Uint8Array): Uint8Array {
  const size = `${chunk.length.toString(16)}\r\n`;
  const out = new Uint8Array(size.length + chunk.length + 2);
  sizeEncoder.encodeInto(size, out);
  out.set(chunk, size.length);
  out[out.length - 2] = 13;
  out[out.length - 1] = 10;
  return out;
}
