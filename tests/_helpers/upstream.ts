/**
 * A local upstream for data-plane tests: echoes what it received as JSON, echoes WebSocket
 * frames on `/ws`, holds `/slow` until the test releases it, streams `/big?n=BYTES`, and
 * answers `/drip?chunks=N&gap=MS` at once but sends its body slowly.
 */

export interface Echo {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: string;
  bodyLength: number;
}

export interface TestUpstream extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  /** Requests received so far. */
  readonly seen: Echo[];
  /** Resolves every request held on `/slow`. */
  release(): void;
  /** Resolves once a request is being held on `/slow`. */
  held(): Promise<void>;
}

export function startUpstream(name = "upstream"): TestUpstream {
  const seen: Echo[] = [];
  let releases: Array<() => void> = [];
  let holdWaiters: Array<() => void> = [];
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: ac.signal },
    async (req) => {
      const url = new URL(req.url);
      if (url.pathname === "/ws" && req.headers.get("upgrade") === "websocket") {
        const proto = req.headers.get("sec-websocket-protocol")?.split(",")[0]?.trim();
        const { socket, response } = Deno.upgradeWebSocket(req, proto ? { protocol: proto } : {});
        socket.onmessage = (e) =>
          socket.send(typeof e.data === "string" ? `echo:${e.data}` : e.data);
        return response;
      }
      if (url.pathname === "/slow") {
        const wait = new Promise<void>((resolve) => releases.push(resolve));
        for (const w of holdWaiters) w();
        holdWaiters = [];
        await wait;
        return new Response("late");
      }
      if (url.pathname === "/drip") {
        const chunks = Number(url.searchParams.get("chunks") ?? "3");
        const gap = Number(url.searchParams.get("gap") ?? "100");
        let sent = 0;
        return new Response(
          new ReadableStream<Uint8Array>({
            async pull(controller) {
              if (sent === chunks) return controller.close();
              if (sent > 0) await new Promise((r) => setTimeout(r, gap));
              sent++;
              controller.enqueue(new TextEncoder().encode(`chunk${sent};`));
            },
          }),
        );
      }
      if (url.pathname === "/big") {
        const n = Number(url.searchParams.get("n") ?? "0");
        return new Response(new Uint8Array(n).fill(97));
      }
      const buffer = await req.arrayBuffer().catch(() => undefined);
      // The proxy aborted the body (its client broke off): nothing to echo.
      if (buffer === undefined) return new Response(null, { status: 400 });
      const bytes = new Uint8Array(buffer);
      const echo: Echo = {
        method: req.method,
        path: url.pathname,
        query: url.search,
        headers: Object.fromEntries(req.headers),
        body: new TextDecoder().decode(bytes.subarray(0, 4096)),
        bodyLength: bytes.length,
      };
      seen.push(echo);
      return Response.json({ ...echo, upstream: name }, {
        headers: { "set-cookie": "a=1", "x-upstream": name, "keep-alive": "timeout=5" },
      });
    },
  );
  const port = server.addr.port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    release() {
      for (const r of releases) r();
      releases = [];
    },
    held() {
      if (releases.length > 0) return Promise.resolve();
      return new Promise<void>((resolve) => holdWaiters.push(resolve));
    },
    async [Symbol.asyncDispose]() {
      this.release();
      ac.abort();
      await server.finished;
    },
  };
}
