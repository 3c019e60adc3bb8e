/**
 * An HTTPS listener that asks every client for a certificate (mTLS), for the cluster channel.
 * `Deno.serve` cannot verify client certificates; `node:https` with `requestCert` can (checked on
 * Deno 2.9.6, docs/cluster.md). Unverified and missing certificates are let through to the
 * handler with the facts (`authorized`, the DER), so the refusal is an HTTP answer with the error
 * object and an audit record rather than a dropped handshake.
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { formatAddress, type Listener, listenerError } from "./listen.ts";

/** The client certificate of a request on the mTLS listener. */
export interface PeerCertificate {
  /** The chain verified against the listener's CA. */
  readonly authorized: boolean;
  /** The leaf certificate, DER. */
  readonly der: Uint8Array;
}

export interface MtlsListenOptions {
  readonly name: string;
  readonly hostname: string;
  readonly port: number;
  readonly cert: string;
  readonly key: string;
  /** The CA client certificates are verified against. */
  readonly ca: string;
  /** Largest request body accepted (bytes). */
  readonly maxBodyBytes: number;
  readonly handler: (
    req: Request,
    info: { remoteAddr: { hostname: string; port: number }; peer: PeerCertificate | undefined },
  ) => Response | Promise<Response>;
}

function peerOf(socket: TLSSocket): PeerCertificate | undefined {
  const cert = socket.getPeerCertificate();
  const raw = (cert as { raw?: Uint8Array } | null)?.raw;
  if (!raw || raw.length === 0) return undefined;
  return { authorized: socket.authorized === true, der: new Uint8Array(raw) };
}

async function readBody(
  req: IncomingMessage,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | "too_large"> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Uint8Array).length;
    if (size > limit) return "too_large";
    chunks.push(chunk as Uint8Array);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

async function serve(options: MtlsListenOptions, req: IncomingMessage, res: ServerResponse) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) { for (const v of value) headers.append(name, v); }
    else if (value !== undefined) headers.set(name, value);
  }
  const method = req.method ?? "GET";
  let body: Uint8Array<ArrayBuffer> | undefined;
  if (method !== "GET" && method !== "HEAD") {
    const read = await readBody(req, options.maxBodyBytes);
    if (read === "too_large") {
      res.writeHead(413, { "content-type": "application/json", connection: "close" });
      res.end('{"error":{"code":"PAYLOAD_TOO_LARGE","message":"Request body too large"}}');
      return;
    }
    body = read;
  }
  const socket = req.socket as TLSSocket;
  // Aborted when the client goes away (a node's waiting policy watch then stops waiting).
  const gone = new AbortController();
  res.once("close", () => gone.abort());
  const request = new Request(`https://${headers.get("host") ?? "cluster"}${req.url ?? "/"}`, {
    method,
    headers,
    body: body && body.length > 0 ? body : undefined,
    signal: gone.signal,
  });
  const response = await options.handler(request, {
    remoteAddr: { hostname: socket.remoteAddress ?? "", port: socket.remotePort ?? 0 },
    peer: peerOf(socket),
  });
  const out: Record<string, string> = {};
  response.headers.forEach((v, k) => out[k] = v);
  res.writeHead(response.status, out);
  res.end(new Uint8Array(await response.arrayBuffer()));
}

/** Opens the listener; resolves once it is bound (port 0 picks a free port). */
export async function listenMtls(options: MtlsListenOptions): Promise<Listener> {
  const server = https.createServer({
    cert: options.cert,
    key: options.key,
    ca: [options.ca],
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: "TLSv1.2",
  }, (req, res) => {
    serve(options, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end('{"error":{"code":"INTERNAL","message":"Internal error"}}');
    });
  });
  const address = formatAddress(options.hostname, options.port);
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) => reject(listenerError(options.name, address, err)));
    server.listen(options.port, options.hostname, () => resolve());
  });
  const bound = server.address() as { address: string; port: number };
  const finished = Promise.withResolvers<void>();
  server.on("close", () => finished.resolve());
  return {
    hostname: bound.address,
    port: bound.port,
    tls: true,
    shutdown: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Nodes keep connections alive between heartbeats; idle ones would hold close() open.
        (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
    finished: finished.promise,
  };
}
