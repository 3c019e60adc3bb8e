/**
 * A small SNTP server on loopback UDP for tests: its clock is `offsetMs` ahead of ours, it answers
 * after `delayMs` (before both server timestamps, so the wait looks like network delay), and with
 * `answer: false` it never answers. `now` is the clock "ours" means (the system's unless given).
 */
import dgram from "node:dgram";
import { writeTimestamp } from "../../mod/ops/sntp.ts";

export interface SntpServer extends AsyncDisposable {
  /** `127.0.0.1:<port>`, as `time.servers` takes it. */
  readonly address: string;
}

export async function startSntpServer(
  offsetMs: number,
  delayMs = 0,
  answer = true,
  now: () => number = () => Date.now(),
): Promise<SntpServer> {
  const socket = dgram.createSocket("udp4");
  socket.on("message", (msg: Uint8Array, rinfo: { port: number; address: string }) => {
    if (!answer) return;
    const req = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
    const reply = new Uint8Array(48);
    const view = new DataView(reply.buffer);
    reply[0] = (0 << 6) | (4 << 3) | 4;
    reply[1] = 2;
    view.setUint32(24, req.getUint32(40));
    view.setUint32(28, req.getUint32(44));
    setTimeout(() => {
      writeTimestamp(view, 32, now() + offsetMs);
      writeTimestamp(view, 40, now() + offsetMs);
      socket.send(reply, rinfo.port, rinfo.address);
    }, delayMs);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
