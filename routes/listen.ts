/** Starts one HTTP(S) listener with `Deno.serve` and exposes a graceful shutdown. */
export interface Listener {
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
  /** Stops accepting, lets in-flight requests finish. */
  shutdown(): Promise<void>;
  readonly finished: Promise<void>;
}

/** Why a listener could not open; the text is made from it at the edge (CLI, in its language). */
export type ListenFailure = "in_use" | "permission" | "unavailable" | "other";

/** A listener that could not open: which one, at what address, and why. */
export class ListenerError extends Error {
  constructor(
    readonly listener: string,
    readonly address: string,
    readonly reason: ListenFailure,
    cause: unknown,
  ) {
    super(`Cannot open the ${listener} listener on ${address}: ${reason}`, { cause });
    this.name = "ListenerError";
  }
}

/** Classifies a failure to bind (Deno or node:net errors). */
export function listenerError(listener: string, address: string, err: unknown): ListenerError {
  const code = (err as { code?: string } | null)?.code;
  const reason: ListenFailure = err instanceof Deno.errors.AddrInUse || code === "EADDRINUSE"
    ? "in_use"
    : err instanceof Deno.errors.PermissionDenied || code === "EACCES"
    ? "permission"
    : err instanceof Deno.errors.AddrNotAvailable || code === "EADDRNOTAVAIL"
    ? "unavailable"
    : "other";
  return new ListenerError(listener, address, reason, err);
}

export interface ListenOptions {
  /** Which listener this is, for error messages (`management`, `data`, ...). */
  readonly name?: string;
  readonly hostname: string;
  readonly port: number;
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly handler: (
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ) => Response | Promise<Response>;
  readonly onError?: (err: unknown) => Response;
  /** Shares the port with other listeners of this process (data-plane workers). */
  readonly reusePort?: boolean;
}

export function listen(options: ListenOptions): Listener {
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: options.hostname,
      port: options.port,
      ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
      ...(options.reusePort ? { reusePort: true } : {}),
      onListen: () => {},
      onError: options.onError ??
        (() => new Response("Internal error", { status: 500 })),
    }, options.handler);
  } catch (err) {
    const address = formatAddress(options.hostname, options.port);
    throw listenerError(options.name ?? "HTTP", address, err);
  }
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
