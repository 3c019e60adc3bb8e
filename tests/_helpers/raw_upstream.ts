/**
 * An upstream on a raw loopback socket that answers whatever bytes a test scripts: for upstreams
 * no real server would be (broken framing, garbage, hangs, closes at the wrong moment).
 */
import { bytes } from "./raw_socket.ts";

export interface RawUpstream extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Every request head received (with a body that came in the same reads), in order. */
  readonly requests: string[];
  /** Each connection's bytes as read so far, a partial request's too, by connection index. */
  readonly received: readonly string[];
  /** By connection index: whether its script has ended and the connection is closed. */
  readonly ended: readonly boolean[];
}

/** What a script gets for one connection. */
export interface RawPeer {
  /** The index of this connection (0 for the first). */
  readonly index: number;
  readonly conn: Deno.Conn;
  /** Reads one request: its head, and as many body bytes as `Content-Length` says or the
   * chunked body up to its last chunk. Null when the peer closed first. */
  readRequest(): Promise<string | null>;
  send(...parts: Array<string | Uint8Array>): Promise<void>;
}

const dec = new TextDecoder();

export function startRawUpstream(script: (peer: RawPeer) => Promise<void>): RawUpstream {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const requests: string[] = [];
  const received: string[] = [];
  const ended: boolean[] = [];
  const open = new Set<Deno.Conn>();
  const running: Promise<void>[] = [];
  let connections = 0;
  const accepting = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      let pending = "";
      const index = connections++;
      received.push("");
      ended.push(false);
      const peer: RawPeer = {
        index,
        conn,
        async readRequest() {
          const buf = new Uint8Array(65536);
          for (;;) {
            const end = pending.indexOf("\r\n\r\n");
            if (end >= 0) {
              const head = pending.slice(0, end + 4);
              const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
              const chunked = /\r\ntransfer-encoding: *chunked/i.test(head);
              const rest = pending.slice(end + 4);
              const complete = cl
                ? rest.length >= Number(cl[1])
                : chunked
                ? rest.includes("0\r\n\r\n")
                : true;
              if (complete) {
                const bodyLength = cl ? Number(cl[1]) : chunked ? rest.indexOf("0\r\n\r\n") + 5 : 0;
                const request = head + rest.slice(0, bodyLength);
                pending = rest.slice(bodyLength);
                requests.push(request);
                return request;
              }
            }
            const n = await conn.read(buf).catch(() => null);
            if (n === null) return null;
            const text = dec.decode(buf.subarray(0, n));
            received[index] += text;
            pending += text;
          }
        },
        async send(...parts) {
          const data = bytes(...parts);
          let at = 0;
          while (at < data.length) at += await conn.write(data.subarray(at));
        },
      };
      running.push(
        script(peer).catch(() => {}).finally(() => {
          ended[index] = true;
          open.delete(conn);
          try {
            conn.close();
          } catch {
            // closed by the script
          }
        }),
      );
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get connections() {
      return connections;
    },
    requests,
    received,
    ended,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const c of open) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      await accepting;
      await Promise.all(running);
    },
  };
}

/** A recording upstream that answers every request of every connection with `200 ok`. */
export function startOkUpstream(): RawUpstream {
  return startRawUpstream(async (peer) => {
    while (await peer.readRequest() !== null) {
      await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    }
  });
}
