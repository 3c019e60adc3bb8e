/**
 * A loopback TCP relay in front of a real service (PostgreSQL), so a test can take the service
 * away without touching it: `refuse` closes the listener and every relayed connection (new
 * connections are refused), `stall` keeps connections open but passes no byte either way (no
 * error, no answer; leaving the stall closes them, as a dead peer's connections end), `slow`
 * delays every chunk, `up` relays normally. The port stays the same.
 */
export type RelayMode = "up" | "refuse" | "stall" | "slow";

export interface TcpRelay extends AsyncDisposable {
  readonly port: number;
  readonly mode: RelayMode;
  set(mode: RelayMode, options?: { delayMs?: number }): Promise<void>;
  /** Connections accepted so far. */
  readonly accepted: number;
}

export function startTcpRelay(target: { hostname: string; port: number }): Promise<TcpRelay> {
  let listener: Deno.Listener | undefined = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  let mode: RelayMode = "up";
  let delayMs = 0;
  let accepted = 0;
  const open = new Set<Deno.Conn>();
  /** Resolved when the mode leaves `stall`. */
  let unstall: (() => void) | undefined;
  let unstalled: Promise<void> = Promise.resolve();

  async function gate(): Promise<void> {
    while (mode === "stall") await unstalled;
    if (mode === "slow" && delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  }

  async function pipe(from: Deno.Conn, to: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        await gate();
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch {
      // Either side went away.
    } finally {
      for (const c of [from, to]) {
        try {
          c.close();
        } catch { /* closed already */ }
        open.delete(c);
      }
    }
  }

  async function serve(l: Deno.Listener): Promise<void> {
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await l.accept();
      } catch {
        return;
      }
      accepted++;
      open.add(client);
      (async () => {
        await gate();
        let upstream: Deno.Conn;
        try {
          upstream = await Deno.connect(target);
        } catch {
          client.close();
          open.delete(client);
          return;
        }
        open.add(upstream);
        void pipe(client, upstream);
        void pipe(upstream, client);
      })();
    }
  }
  void serve(listener);

  function closeAll(): void {
    for (const c of open) {
      try {
        c.close();
      } catch { /* closed already */ }
    }
    open.clear();
  }

  return Promise.resolve({
    port,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    async set(next, options = {}) {
      delayMs = options.delayMs ?? delayMs;
      if (next === "stall" && mode !== "stall") {
        unstalled = new Promise((r) => unstall = r);
      }
      if (mode === "stall" && next !== "stall") {
        // A stalled connection is dead: it never carries another byte.
        closeAll();
        unstall?.();
      }
      if (next === "refuse") {
        listener?.close();
        listener = undefined;
        closeAll();
      } else if (listener === undefined) {
        for (let i = 0;; i++) {
          try {
            listener = Deno.listen({ hostname: "127.0.0.1", port });
            break;
          } catch (err) {
            if (i > 50) throw err;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        void serve(listener);
      }
      mode = next;
    },
    async [Symbol.asyncDispose]() {
      mode = "up";
      unstall?.();
      listener?.close();
      listener = undefined;
      closeAll();
      await new Promise((r) => setTimeout(r, 10));
    },
  });
}
