/** A throwaway HTTP server on 127.0.0.1 for tests (feeds, upstreams with special answers). */

export interface LocalServer extends AsyncDisposable {
  readonly url: string;
}

export function localServer(handler: (req: Request) => Response | Promise<Response>): LocalServer {
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: ac.signal },
    handler,
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    async [Symbol.asyncDispose]() {
      ac.abort();
      await server.finished;
    },
  };
}
