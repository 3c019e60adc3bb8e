/**
 * The one-shot outbound probe of `waf temporary-online probe`: resolves the host with the
 * system resolver, opens one TCP connection, negotiates TLS for https, sends a single HTTP/1.1
 * GET and reads only the response head. Each step is timed and bounded by the timeout; the
 * first failure ends the probe. It is an operator tool, not an egress API: besides the command
 * line only the console's upstream check of a new site calls it (`mod/data_plane/onboarding.ts`,
 * for a caller who may create sites, on an origin a site's `upstreams` accepts).
 */
import { lookup } from "node:dns/promises";
import { isIP, type Socket } from "node:net";
import * as net from "node:net";
import * as tls from "node:tls";

export interface ProbeOptions {
  readonly url: URL;
  readonly timeoutMs: number;
  /** Extra trusted CA certificates (PEM), added to the system roots. */
  readonly caPem?: string;
  readonly userAgent: string;
}

export interface ProbeDeps {
  /** A monotonic millisecond timer (durations only, never a date). */
  readonly monotonic: () => number;
}

export type Step<T> =
  | { readonly status: "ok"; readonly ms: number; readonly detail: T }
  | { readonly status: "skipped"; readonly reason: string }
  | { readonly status: "failed"; readonly ms: number; readonly error: string }
  | { readonly status: "not_run" };

export interface DnsDetail {
  readonly addresses: readonly string[];
}
export interface TcpDetail {
  readonly address: string;
  readonly port: number;
}
export interface TlsDetail {
  readonly protocol: string | null;
  readonly alpn: string | null;
  readonly subject: string | null;
  readonly issuer: string | null;
  readonly altNames: string | null;
  readonly validTo: string | null;
}
export interface HttpDetail {
  readonly status: number;
  readonly statusText: string;
  readonly headerBytes: number;
  readonly ttfbMs: number;
}

export interface ProbeReport {
  readonly url: string;
  readonly dns: Step<DnsDetail>;
  readonly tcp: Step<TcpDetail>;
  readonly tls: Step<TlsDetail>;
  readonly http: Step<HttpDetail>;
}

const MAX_HEAD_BYTES = 64 * 1024;
const NOT_RUN = { status: "not_run" } as const;

class Timeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Timeout(ms));
    }, ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function message(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === "string" && !err.message.includes(code)
      ? `${code}: ${err.message}`
      : err.message;
  }
  return String(err);
}

function hostOf(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

function nameOf(fields: unknown): string | null {
  if (!fields || typeof fields !== "object") return null;
  const parts = Object.entries(fields).map(([k, v]) =>
    `${k}=${Array.isArray(v) ? v.join("+") : v}`
  );
  return parts.length ? parts.join(", ") : null;
}

async function timed<T>(
  deps: ProbeDeps,
  run: () => Promise<T>,
): Promise<{ ok: true; ms: number; value: T } | { ok: false; ms: number; error: string }> {
  const start = deps.monotonic();
  try {
    const value = await run();
    return { ok: true, ms: deps.monotonic() - start, value };
  } catch (err) {
    return { ok: false, ms: deps.monotonic() - start, error: message(err) };
  }
}

function connectTcp(address: string, port: number, timeoutMs: number): Promise<Socket> {
  const socket = net.connect({ host: address, port });
  const connected = new Promise<Socket>((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
  return withTimeout(connected, timeoutMs, () => socket.destroy());
}

function startTls(
  socket: Socket,
  host: string,
  options: ProbeOptions,
): Promise<tls.TLSSocket> {
  const secure = tls.connect({
    socket,
    // SNI carries names only; for an IP address the certificate is checked against `host`.
    ...(isIP(host) ? { host } : { servername: host, host }),
    ...(options.caPem ? { ca: [...tls.rootCertificates, options.caPem] } : {}),
    ALPNProtocols: ["http/1.1"],
  });
  const ready = new Promise<tls.TLSSocket>((resolve, reject) => {
    secure.once("secureConnect", () => resolve(secure));
    secure.once("error", reject);
  });
  return withTimeout(ready, options.timeoutMs, () => secure.destroy());
}

function tlsDetail(secure: tls.TLSSocket): TlsDetail {
  const cert = secure.getPeerCertificate();
  const has = cert && Object.keys(cert).length > 0;
  return {
    protocol: secure.getProtocol() ?? null,
    alpn: typeof secure.alpnProtocol === "string" ? secure.alpnProtocol : null,
    subject: has ? nameOf(cert.subject) : null,
    issuer: has ? nameOf(cert.issuer) : null,
    altNames: has && cert.subjectaltname ? cert.subjectaltname : null,
    validTo: has && cert.valid_to ? new Date(cert.valid_to).toISOString() : null,
  };
}

/** Sends one GET and reads the response head only. */
function requestHead(
  socket: Socket,
  url: URL,
  options: ProbeOptions,
  deps: ProbeDeps,
): Promise<HttpDetail> {
  const head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n` +
    `User-Agent: ${options.userAgent}\r\nAccept: */*\r\nConnection: close\r\n\r\n`;
  const sent = deps.monotonic();
  const done = new Promise<HttpDetail>((resolve, reject) => {
    let buffer = "";
    let first: number | undefined;
    socket.on("data", (chunk: Uint8Array | string) => {
      first ??= deps.monotonic();
      buffer += typeof chunk === "string" ? chunk : new TextDecoder("latin1").decode(chunk);
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buffer.length > MAX_HEAD_BYTES) reject(new Error("response head exceeds 64 KiB"));
        return;
      }
      const status = /^HTTP\/\d(?:\.\d)? (\d{3}) ?([^\r\n]*)/.exec(buffer);
      if (!status) {
        reject(new Error("the response is not HTTP/1.x"));
        return;
      }
      resolve({
        status: Number(status[1]),
        statusText: status[2] ?? "",
        headerBytes: end + 4,
        ttfbMs: first - sent,
      });
    });
    socket.once("error", reject);
    socket.once("end", () => reject(new Error("the connection closed before a response head")));
  });
  socket.write(head);
  return withTimeout(done, options.timeoutMs, () => socket.destroy());
}

/** Runs the probe; never throws for network failures, which are reported per step. */
export async function probe(options: ProbeOptions, deps: ProbeDeps): Promise<ProbeReport> {
  const { url } = options;
  const host = hostOf(url);
  const port = portOf(url);
  const r: { -readonly [K in keyof ProbeReport]: ProbeReport[K] } = {
    url: url.href,
    dns: NOT_RUN,
    tcp: NOT_RUN,
    tls: NOT_RUN,
    http: NOT_RUN,
  };
  const result = (): ProbeReport => r;

  let addresses = [host];
  if (isIP(host)) {
    r.dns = { status: "skipped", reason: "ip_literal" };
  } else {
    const dns = await timed(
      deps,
      () => withTimeout(lookup(host, { all: true }), options.timeoutMs, () => {}),
    );
    if (!dns.ok) {
      r.dns = { status: "failed", ms: dns.ms, error: dns.error };
      return result();
    }
    addresses = dns.value.map((a) => a.address);
    if (addresses.length === 0) {
      r.dns = { status: "failed", ms: dns.ms, error: "no address" };
      return result();
    }
    r.dns = { status: "ok", ms: dns.ms, detail: { addresses } };
  }

  // Addresses in resolver order, the first that accepts wins (localhost is often ::1 first
  // while the service listens on 127.0.0.1 only).
  const tcp = await timed(deps, async () => {
    let last: unknown;
    for (const address of addresses) {
      try {
        return { address, socket: await connectTcp(address, port, options.timeoutMs) };
      } catch (err) {
        last = err;
      }
    }
    throw last;
  });
  if (!tcp.ok) {
    r.tcp = { status: "failed", ms: tcp.ms, error: tcp.error };
    return result();
  }
  r.tcp = { status: "ok", ms: tcp.ms, detail: { address: tcp.value.address, port } };
  const raw = tcp.value.socket;
  let socket: Socket = raw;
  try {
    if (url.protocol === "https:") {
      const secure = await timed(deps, () => startTls(socket, host, options));
      if (!secure.ok) {
        r.tls = { status: "failed", ms: secure.ms, error: secure.error };
        return result();
      }
      r.tls = { status: "ok", ms: secure.ms, detail: tlsDetail(secure.value) };
      socket = secure.value;
    } else {
      r.tls = { status: "skipped", reason: "plain_http" };
    }
    const http = await timed(deps, () => requestHead(socket, url, options, deps));
    r.http = http.ok
      ? { status: "ok", ms: http.ms, detail: http.value }
      : { status: "failed", ms: http.ms, error: http.error };
    return result();
  } finally {
    socket.destroy();
    raw.destroy();
  }
}
