/**
 * What request-body tests send and where they look: an upstream that keeps every request body's
 * exact bytes, and a chunked request body cut into pieces of a given size.
 */

/** An upstream that keeps every request body's exact bytes, in order. */
export function byteUpstream() {
  const seen: Uint8Array[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    seen.push(new Uint8Array(await req.arrayBuffer()));
    return new Response("ok");
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A chunked request body: the pieces of `bytes`, `size` bytes each. */
export function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}
