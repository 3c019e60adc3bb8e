/**
 * Raw HTTP/1.1 over a real socket, for requests no `fetch` client would send (malformed
 * framing, lower-case methods, repeated headers).
 */

const enc = new TextEncoder();
export const bytes = (...parts: Array<string | Uint8Array>): Uint8Array => {
  const chunks = parts.map((p) => typeof p === "string" ? enc.encode(p) : p);
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
};

/**
 * Sends `raw` and returns the status of the first response (0 if none came) and its trace id. A request whose
 * body is shorter than it claims is followed by a half-close, the way a client that gives up
 * ends it; every other request says `Connection: close` and waits for the answer.
 */
export async function rawSend(
  port: number,
  raw: Uint8Array,
  halfClose: boolean,
): Promise<{ status: number; trace: string | undefined }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(raw).catch(() => {});
    if (halfClose) await conn.closeWrite().catch(() => {});
    const buf = new Uint8Array(256);
    let text = "";
    // A server that neither answers nor closes fails the case instead of hanging the test.
    const timer = setTimeout(() => conn.close(), 10_000);
    try {
      while (!text.includes("\r\n\r\n")) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
    } finally {
      clearTimeout(timer);
    }
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
    const trace = /\r\nx-waf-trace-id: (\w+)/i.exec(text)?.[1];
    return { status: m ? Number(m[1]) : 0, trace };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
  }
}

/** Resolves with the time (ms since `since`) at which the server closed the connection. */
export async function closedAfter(
  conn: Deno.Conn,
  since: number,
  limitMs = 10_000,
): Promise<number> {
  const buf = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), limitMs);
  try {
    while (true) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) return performance.now() - since;
    }
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed
    }
  }
}
