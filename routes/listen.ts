/** Starts one HTTP(S) listener with `Deno.serve` and exposes a graceful shutdown. */
export interface Listener {
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
  /** Stops accepting, lets in-flight requests finish. */
  shutdown(): Promise<void>;
  readonly finished: Promise<void>;
}

export interface ListenOptions {
  readonly hostname: string;
  readonly port: number;
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly handler: (
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ) => Response | Promise<Response>;
  readonly onError?: (err: unknown) => Response;
}

export function listen(options: ListenOptions): Listener {
  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port,
    ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
    onListen: () => {},
    onError: options.onError ??
      (() => new Response("Internal error", { status: 500 })),
  }, options.handler);
  const addr = server.addr;
  return {
    hostname: addr.hostname,
    port: addr.port,
    tls: options.tls !== undefined,
    shutdown: () => server.shutdown(),
    finished: server.finished,
  };
}

/** `host:port`, with IPv6 hosts bracketed. */
export function formatAddress(hostname: string, port: number): string {
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}
