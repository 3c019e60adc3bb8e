/**
 * A connectivity test of the configured `storage.redis` endpoint, nothing more (nothing stores
 * state in Redis): connect (TLS for `rediss://`), `AUTH` when the URL carries a password,
 * `PING`, `INFO server` for the version; the latency and the exact error are reported. RESP is
 * spoken directly over the socket: three commands do not justify a client library.
 */
import { maskUrlPassword } from "../core/redact.ts";

export interface RedisTestResult {
  readonly ok: boolean;
  readonly endpoint: string;
  readonly tls: boolean;
  readonly latency_ms: number | null;
  readonly version: string | null;
  readonly error: string | null;
  readonly tested_at: string;
}

/** The URL with any password masked (what results and logs show). */
export const maskRedisUrl: (url: string) => string = maskUrlPassword;

function command(...args: string[]): Uint8Array {
  const enc = new TextEncoder();
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${enc.encode(a).length}\r\n${a}\r\n`;
  return enc.encode(out);
}

/** Reads one RESP reply (simple string, error, integer or bulk string). */
async function reply(conn: Deno.Conn, pending: { buf: Uint8Array }): Promise<string> {
  const dec = new TextDecoder();
  const chunk = new Uint8Array(16 * 1024);
  const more = async () => {
    const n = await conn.read(chunk);
    if (n === null) throw new Error("connection closed by the server");
    const next = new Uint8Array(pending.buf.length + n);
    next.set(pending.buf);
    next.set(chunk.subarray(0, n), pending.buf.length);
    pending.buf = next;
  };
  for (;;) {
    const text = dec.decode(pending.buf);
    const eol = text.indexOf("\r\n");
    if (eol >= 0) {
      const head = text.slice(0, eol);
      const kind = head[0];
      if (kind === "+" || kind === ":") {
        pending.buf = pending.buf.subarray(new TextEncoder().encode(text.slice(0, eol + 2)).length);
        return head.slice(1);
      }
      if (kind === "-") throw new Error(`Redis answered: ${head.slice(1)}`);
      if (kind === "$") {
        const len = Number(head.slice(1));
        const headBytes = new TextEncoder().encode(head).length + 2;
        if (len < 0) {
          pending.buf = pending.buf.subarray(headBytes);
          return "";
        }
        if (pending.buf.length >= headBytes + len + 2) {
          const body = dec.decode(pending.buf.subarray(headBytes, headBytes + len));
          pending.buf = pending.buf.subarray(headBytes + len + 2);
          return body;
        }
      } else if (kind !== undefined) {
        throw new Error(`unexpected reply from the server: ${JSON.stringify(head.slice(0, 40))}`);
      }
    }
    await more();
  }
}

export async function testRedis(
  url: string,
  options: { timeoutMs?: number; now?: () => number } = {},
): Promise<RedisTestResult> {
  const now = options.now ?? Date.now;
  const endpoint = maskRedisUrl(url);
  const tested_at = new Date(now()).toISOString();
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return {
      ok: false,
      endpoint,
      tls: false,
      latency_ms: null,
      version: null,
      error: "invalid URL",
      tested_at,
    };
  }
  const tls = u.protocol === "rediss:";
  const hostname = u.hostname.replace(/^\[|\]$/g, "");
  const port = Number(u.port || 6379);
  const timeoutMs = options.timeoutMs ?? 5_000;
  let conn: Deno.Conn | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const work = (async () => {
      conn = tls
        ? await Deno.connectTls({ hostname, port })
        : await Deno.connect({ hostname, port });
      const pending = { buf: new Uint8Array(0) };
      const send = async (...args: string[]) => {
        const data = command(...args);
        let off = 0;
        while (off < data.length) off += await conn!.write(data.subarray(off));
        return await reply(conn!, pending);
      };
      const password = decodeURIComponent(u.password);
      const user = decodeURIComponent(u.username);
      if (password) await (user ? send("AUTH", user, password) : send("AUTH", password));
      const p0 = performance.now();
      const pong = await send("PING");
      const latency = performance.now() - p0;
      if (pong !== "PONG") throw new Error(`PING answered ${JSON.stringify(pong)}`);
      const info = await send("INFO", "server");
      const version = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? null;
      return { latency, version };
    })();
    const r = await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
    return {
      ok: true,
      endpoint,
      tls,
      latency_ms: Math.round(r.latency * 100) / 100,
      version: r.version,
      error: null,
      tested_at,
    };
  } catch (err) {
    return {
      ok: false,
      endpoint,
      tls,
      latency_ms: null,
      version: null,
      error: err instanceof Error ? err.message : String(err),
      tested_at,
    };
  } finally {
    clearTimeout(timer);
    try {
      conn?.close();
    } catch { /* closed already */ }
  }
}
