/**
 * The HTTPS data listener: one port, one certificate per site chosen by SNI.
 *
 * `Deno.serve` cannot pick a certificate per SNI name, `node:tls` can (`SNICallback`). So TLS
 * ends in a `node:tls` server, and each decrypted connection is piped over loopback into a
 * private `Deno.serve` listener that runs the same proxy handler. That keeps one request path
 * for HTTP and HTTPS (streaming, WebSockets, limits), and because `Deno.serve` detects the
 * HTTP/2 preface on a plain connection, offering `h2` by ALPN gives clients HTTP/2 too. The
 * real client address is recovered from the loopback connection's source port.
 */
import net from "node:net";
import tls from "node:tls";
import type { Logger } from "../../mod/core/logger.ts";
import type { CompiledSite, Policy } from "../../mod/data_plane/policy.ts";
import { listen } from "../../net/listen.ts";
import type { ConnectionLimits } from "../../net/conn_front.ts";
import { clientKey } from "../../net/client_key.ts";
import type { BrokenRequest } from "../../net/http1_framing.ts";
import type { ListenerConnections } from "../../mod/core/connection_stats.ts";
import type { ProxyHandler } from "./proxy.ts";

export interface TlsFront {
  readonly hostname: string;
  readonly port: number;
  shutdown(): Promise<void>;
}

export interface TlsFrontOptions {
  readonly hostname: string;
  readonly port: number;
  readonly policy: Pick<Policy, "current">;
  readonly handle: ProxyHandler;
  readonly logger: Logger;
  /** Shares the port with the other data-plane workers' TLS fronts. */
  readonly reusePort?: boolean;
  /**
   * The connection limits (`server.data.limits`): the handshake must finish within the header
   * deadline, the per-client cap counts TLS connections by the real address, and the decrypted
   * connections pass the connection front (deadlines, framing, the descriptor budget).
   */
  readonly front?: {
    readonly limits: ConnectionLimits;
    readonly stats: ListenerConnections;
    /** A request with bad chunked framing, answered 400 by the front (the real client). */
    readonly onBadFraming?: (client: string, request: BrokenRequest) => void;
  };
}

function plainAddress(address: string | undefined): string {
  if (!address) return "unknown";
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

export async function startTlsFront(options: TlsFrontOptions): Promise<TlsFront> {
  const { policy, handle, logger } = options;
  /** Loopback source port of a piped connection → the real client address. */
  const peers = new Map<number, string>();
  const front = options.front;
  const inner = listen({
    hostname: "127.0.0.1",
    port: 0,
    // Every decrypted connection comes from loopback: the per-client cap is applied above.
    // Each also holds its TLS socket and the pipe's client end, outside the inner front.
    front: front && {
      limits: { ...front.limits, maxPerClient: 0, extraDescriptors: 2 },
      stats: front.stats,
      logger,
      onBadFraming: (loopback, request, port) =>
        front.onBadFraming?.(peers.get(port) ?? loopback, request),
    },
    handler: (req, info) => {
      const client = peers.get(info.remoteAddr.port);
      return client === undefined
        ? new Response("Misdirected request", { status: 421 })
        : handle(req, client, "https");
    },
  });

  const contexts = new WeakMap<CompiledSite, tls.SecureContext>();
  function contextFor(site: CompiledSite): tls.SecureContext | undefined {
    if (!site.tls) return undefined;
    let ctx = contexts.get(site);
    if (!ctx) {
      ctx = tls.createSecureContext({ cert: site.tls.cert, key: site.tls.key });
      contexts.set(site, ctx);
    }
    return ctx;
  }

  const sockets = new Set<net.Socket>();
  const perClient = new Map<string, number>();
  const server = tls.createServer({
    ALPNProtocols: ["h2", "http/1.1"],
    ...(front ? { handshakeTimeout: front.limits.headerTimeoutMs } : {}),
    SNICallback: (servername, cb) => {
      const site = policy.current.match(servername);
      const ctx = site ? contextFor(site) : undefined;
      if (ctx) cb(null, ctx);
      else cb(new Error(`No certificate for "${servername}"`), undefined);
    },
  }, (socket) => {
    const client = plainAddress(socket.remoteAddress);
    const key = clientKey(client);
    const mine = perClient.get(key) ?? 0;
    const cap = front?.limits.maxPerClient ?? 0;
    if (cap > 0 && mine >= cap) {
      front!.stats.refused.per_client++;
      socket.destroy();
      return;
    }
    perClient.set(key, mine + 1);
    let counted = true;
    const pipe = net.connect(inner.port, "127.0.0.1");
    sockets.add(socket);
    pipe.on("connect", () => {
      peers.set(pipe.localPort!, client);
      socket.pipe(pipe);
      pipe.pipe(socket);
    });
    const done = () => {
      if (counted) {
        counted = false;
        const left = (perClient.get(key) ?? 1) - 1;
        if (left <= 0) perClient.delete(key);
        else perClient.set(key, left);
      }
      if (pipe.localPort !== undefined) peers.delete(pipe.localPort);
      sockets.delete(socket);
      socket.destroy();
      pipe.destroy();
    };
    socket.on("error", done);
    socket.on("close", done);
    pipe.on("error", done);
    pipe.on("close", done);
  });
  server.on("tlsClientError", (err: Error) => {
    logger.debug("TLS handshake failed", { error: err.message });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(
      { port: options.port, host: options.hostname, reusePort: options.reusePort === true },
      () => resolve(),
    );
  });
  const addr = server.address() as net.AddressInfo;
  let stopping: Promise<void> | undefined;
  return {
    hostname: addr.address,
    port: addr.port,
    shutdown() {
      return stopping ??= stop();
    },
  };

  async function stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await inner.shutdown();
    for (const s of sockets) s.destroy();
    await closed;
  }
}
