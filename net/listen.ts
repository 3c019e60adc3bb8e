/**
 * Starts one HTTP(S) listener with `Deno.serve` and exposes a graceful shutdown. With `front`,
 * the public port is the connection front's (`conn_front.ts`: deadlines, connection caps, accept
 * failures survived) and `Deno.serve` listens privately on loopback behind it; the front serves
 * plain HTTP/1.1 itself (`http1_server.ts`) unless `front.http1` is false, and pipes into
 * `Deno.serve` only what it does not serve (upgrades, HTTP/2, CONNECT).
 */
import type { BrokenRequest } from "./http1_framing.ts";
import {
  type ConnectionLimits,
  type Front,
  type FrontCounters,
  type FrontLogger,
  startFront,
} from "./conn_front.ts";
import type { Timers } from "./timers.ts";

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

/** What a handler learns about the request's connection. */
export interface ConnectionInfo extends Deno.ServeHandlerInfo<Deno.NetAddr> {
  /**
   * Behind a front with `longLivedFeeds`: the connection carries an authenticated long-lived feed
   * and stops counting toward the per-client cap (`Front.longLived`).
   */
  readonly longLived?: () => void;
}

export interface ListenOptions {
  /**
   * Which listener this is, for error messages (`management`, `data`, ...); the `management`
   * listener's front draws from the management descriptor reserve (net/descriptors.ts).
   */
  readonly name?: string;
  readonly hostname: string;
  readonly port: number;
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly handler: (req: Request, info: ConnectionInfo) => Response | Promise<Response>;
  readonly onError?: (err: unknown) => Response;
  /** Shares the port with other listeners of this process (data-plane workers). */
  readonly reusePort?: boolean;
  /** Puts the connection front before `Deno.serve` (absent: `Deno.serve` on the port itself). */
  readonly front?: {
    readonly limits: ConnectionLimits;
    readonly stats: FrontCounters;
    readonly logger?: FrontLogger;
    /** The front's clock and timers (default: the real ones). */
    readonly timers?: Timers;
    readonly onBadFraming?: (client: string, request: BrokenRequest, clientPort: number) => void;
    /** Gives handlers `info.longLived` (the management listener's realtime feeds). */
    readonly longLivedFeeds?: boolean;
    /**
     * `false`: every connection is piped into `Deno.serve` (the management listener). Otherwise
     * the front serves HTTP/1.1 itself and pipes only upgrades, HTTP/2 and CONNECT.
     */
    readonly http1?: boolean;
  };
}

export function listen(options: ListenOptions): Listener {
  if (options.front) return listenFronted(options, options.front);
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: options.hostname,
      port: options.port,
      ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
      ...(options.reusePort ? { reusePort: true } : {}),
      onListen: () => {},
      onError: options.onError ?? internalError,
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

/** `req` at another URL, without touching its `signal`. */
function withScheme(url: string, req: Request): Request {
  return new Request(url, { method: req.method, headers: req.headers, body: req.body });
}

function internalError(): Response {
  return new Response("Internal error", { status: 500 });
}

function listenFronted(
  options: ListenOptions,
  frontOptions: NonNullable<ListenOptions["front"]>,
): Listener {
  const { handler } = options;
  const tls = options.tls !== undefined;
  let front: Front | undefined;
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    onError: options.onError ?? internalError,
  }, (req, info) => {
    const client = front?.peer(info.remoteAddr.port);
    if (client === undefined) return new Response("Misdirected request", { status: 421 });
    const remoteAddr: Deno.NetAddr = { transport: "tcp", ...client };
    // Behind a TLS front the server sees plain HTTP; the request keeps the scheme the client used.
    // Built from its parts, not `new Request(url, req)`: that reads `req.signal`, and Deno then
    // warns that the signal aborts on successful responses (its legacy behaviour).
    const request = tls ? withScheme(`https${req.url.slice(4)}`, req) : req;
    if (!frontOptions.longLivedFeeds) return handler(request, { ...info, remoteAddr });
    const innerPort = info.remoteAddr.port;
    return handler(request, { ...info, remoteAddr, longLived: () => front?.longLived(innerPort) });
  });
  const own = frontOptions.http1 !== false && !tls;
  const completed = new Promise<void>(() => {});
  try {
    front = startFront({
      hostname: options.hostname,
      port: options.port,
      tls: options.tls,
      reusePort: options.reusePort,
      innerPort: server.addr.port,
      ...frontOptions,
      limits: {
        plane: options.name === "management" ? "management" : "data",
        ...frontOptions.limits,
      },
      // One info object per connection (a handler only reads it), not one per request.
      serve: own
        ? (remoteAddr) => {
          const info: ConnectionInfo = { remoteAddr, completed };
          return (req) => handler(req, info);
        }
        : undefined,
    });
  } catch (err) {
    void server.shutdown();
    const address = formatAddress(options.hostname, options.port);
    throw listenerError(options.name ?? "HTTP", address, err);
  }
  const opened = front;
  return {
    hostname: opened.hostname,
    port: opened.port,
    tls,
    async shutdown() {
      opened.stop();
      await server.shutdown();
      // The server has answered everything; let the last answers through the pipe (and the
      // front finish the requests it serves itself: the caller bounds the whole shutdown).
      await opened.drain(own ? 60_000 : 1_000);
      opened.close();
    },
    finished: server.finished,
  };
}

/** `host:port`, with IPv6 hosts bracketed. */
export function formatAddress(hostname: string, port: number): string {
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}
