/** The relay thread of tcp_relay_thread.ts. */
/// <reference lib="deno.worker" />
import { startTcpRelay, type TcpRelay } from "./tcp_relay.ts";

let relay: TcpRelay | undefined;
self.onmessage = async (e: MessageEvent) => {
  const m = e.data;
  if (m.op === "start") {
    relay = await startTcpRelay(m.target);
    self.postMessage({ port: relay.port });
  } else if (m.op === "set") {
    await relay!.set(m.mode);
    self.postMessage({});
  } else if (m.op === "stop") {
    await relay?.[Symbol.asyncDispose]();
    self.postMessage({});
  }
};
