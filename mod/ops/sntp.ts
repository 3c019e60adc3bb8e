/**
 * An SNTP client (RFC 4330) over UDP: one 48-byte request, one answer, the clock offset and the
 * round-trip delay from the four timestamps. Written here rather than taken from npm: the
 * protocol is one packet each way, the npm clients we looked at are unmaintained or Node-only
 * (`dgram` callbacks without a deadline), and `node:dgram` works in Deno without the
 * `--unstable-net` flag that `Deno.listenDatagram` needs. Answers are checked: the server mode,
 * a non-zero stratum (0 is a kiss-o'-death), a synchronised leap indicator, and our own transmit
 * time echoed as the originate time (a forged or stale answer does not match).
 */
import dgram from "node:dgram";
import { isIP } from "node:net";

/** Seconds between 1900-01-01 (NTP era 0) and 1970-01-01. */
const NTP_UNIX_DELTA = 2_208_988_800;
export const NTP_PORT = 123;

export interface SntpResult {
  /** How far the server's clock is ahead of ours (ms; negative: behind). */
  readonly offsetMs: number;
  /** Round-trip delay without the server's processing time (ms). */
  readonly delayMs: number;
  readonly stratum: number;
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`. */
export function parseServer(value: string): { host: string; port: number } | undefined {
  const v6 = /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(value);
  if (v6) return checkPort(v6[1]!, v6[2]);
  if (isIP(value) === 6) return { host: value, port: NTP_PORT };
  const m = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
  return m ? checkPort(m[1]!, m[2]) : undefined;
}

function checkPort(host: string, port: string | undefined) {
  const p = port === undefined ? NTP_PORT : Number(port);
  return p >= 1 && p <= 65535 ? { host, port: p } : undefined;
}

/** Writes ms since the Unix epoch as an NTP timestamp at `offset`. */
export function writeTimestamp(view: DataView, offset: number, ms: number): void {
  const seconds = Math.floor(ms / 1000) + NTP_UNIX_DELTA;
  const fraction = Math.floor(((ms % 1000) / 1000) * 2 ** 32);
  view.setUint32(offset, seconds >>> 0);
  view.setUint32(offset + 4, fraction >>> 0);
}

export function readTimestamp(view: DataView, offset: number): number {
  const seconds = view.getUint32(offset);
  const fraction = view.getUint32(offset + 4);
  return (seconds - NTP_UNIX_DELTA) * 1000 + (fraction / 2 ** 32) * 1000;
}

/**
 * Asks one server; `now` is the local clock (ms). Rejects on a timeout, a refused or malformed
 * answer, or an answer that does not match the request.
 */
export function querySntp(
  server: string,
  now: () => number,
  timeoutMs: number,
): Promise<SntpResult> {
  const target = parseServer(server);
  if (!target) return Promise.reject(new Error(`Not a time server: "${server}"`));
  const socket = dgram.createSocket(isIP(target.host) === 6 ? "udp6" : "udp4");
  return new Promise<SntpResult>((resolve, reject) => {
    const request = new Uint8Array(48);
    const view = new DataView(request.buffer);
    request[0] = (0 << 6) | (4 << 3) | 3; // LI 0, version 4, mode 3 (client)
    const t1 = now();
    writeTimestamp(view, 40, t1);
    const sentOrigin = [view.getUint32(40), view.getUint32(44)];
    const timer = setTimeout(() => {
      finish(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    let done = false;
    function finish(err: Error | null, result?: SntpResult) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        socket.close();
      } catch { /* already closed */ }
      if (err) reject(err);
      else resolve(result!);
    }
    socket.on("error", (err) => finish(err));
    socket.on("message", (msg: Uint8Array) => {
      const t4 = now();
      if (msg.length < 48) return finish(new Error("answer shorter than 48 bytes"));
      const a = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
      const li = msg[0]! >> 6;
      const mode = msg[0]! & 7;
      const stratum = msg[1]!;
      if (mode !== 4 && mode !== 5) return finish(new Error(`answer in mode ${mode}, not server`));
      if (a.getUint32(24) !== sentOrigin[0] || a.getUint32(28) !== sentOrigin[1]) {
        return; // not the answer to our request: keep waiting
      }
      if (stratum === 0) {
        const code = new TextDecoder().decode(msg.subarray(12, 16));
        return finish(new Error(`kiss-o'-death "${code}"`));
      }
      if (li === 3) return finish(new Error("server clock not synchronised"));
      const t2 = readTimestamp(a, 32);
      const t3 = readTimestamp(a, 40);
      finish(null, {
        offsetMs: ((t2 - t1) + (t3 - t4)) / 2,
        delayMs: Math.max(0, (t4 - t1) - (t3 - t2)),
        stratum,
      });
    });
    socket.send(request, target.port, target.host, (err) => {
      if (err) finish(err);
    });
  });
}
