/**
 * A {@link startTcpRelay} on a thread of its own, for a test whose code under test blocks the
 * main thread (the PostgreSQL store waits synchronously for its answers, so a relay on the
 * same event loop could never pass them on).
 */
import type { RelayMode } from "./tcp_relay.ts";

export interface RelayThread extends AsyncDisposable {
  readonly port: number;
  set(mode: RelayMode): Promise<void>;
}

export async function startRelayThread(
  target: { hostname: string; port: number },
): Promise<RelayThread> {
  const worker = new Worker(new URL("./tcp_relay_thread_worker.ts", import.meta.url), {
    type: "module",
  });
  let pending: ((v: unknown) => void) | undefined;
  worker.onmessage = (e) => pending?.(e.data);
  const ask = (m: unknown) =>
    new Promise<unknown>((resolve) => {
      pending = resolve;
      worker.postMessage(m);
    });
  const { port } = await ask({ op: "start", target }) as { port: number };
  return {
    port,
    async set(mode) {
      await ask({ op: "set", mode });
    },
    async [Symbol.asyncDispose]() {
      await ask({ op: "stop" });
      worker.terminate();
    },
  };
}
