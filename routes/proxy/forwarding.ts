/**
 * Header rules of the reverse proxy: which client address to believe, which headers are
 * hop-by-hop and never cross the proxy, and the X-Forwarded-* / Forwarded headers the
 * upstream receives. Every constant is built once at module load.
 */
import { parseIp } from "../../engine/ip_address.ts";
import type { TrustedProxies } from "../../mod/data_plane/trusted_proxies.ts";
import type { HeaderPairs } from "../../net/http1_head.ts";

/** RFC 9110 §7.6.1 connection-specific headers, plus the legacy ones proxies also drop. */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
]);

/** Headers the proxy sets itself; the client's copies are replaced (or extended if trusted). */
const FORWARDING: ReadonlySet<string> = new Set([
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-forwarded-host",
  "forwarded",
  "x-real-ip",
]);

/** Names listed in a Connection header value, which are hop-by-hop for this message too. */
function connectionTokens(value: string | null | undefined): ReadonlySet<string> | undefined {
  // What nearly every peer sends, and names no field: no split for it.
  if (value === null || value === undefined || value === "keep-alive" || value === "close") {
    return undefined;
  }
  let tokens: Set<string> | undefined;
  for (const t of value.split(",")) {
    const name = t.trim().toLowerCase();
    if (name === "" || name === "close" || name === "keep-alive") continue;
    (tokens ??= new Set()).add(name);
  }
  return tokens;
}

/** The value of header `name` (lower case) in `pairs`, as `Headers.get` would give it. */
export function headerOf(pairs: HeaderPairs, name: string): string | undefined {
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]!;
    if (pair[0] === name) return pair[1];
  }
  return undefined;
}

/** Addresses named in a Forwarded header's `for=` parameters, in order. */
function forwardedFor(value: string): string[] {
  const out: string[] = [];
  for (const element of value.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      let v = pair.slice(eq + 1).trim();
      if (v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
      // Strip a port: `1.2.3.4:80`, `[2001:db8::1]:80`.
      if (v.startsWith("[")) v = v.slice(1, v.indexOf("]") > 0 ? v.indexOf("]") : undefined);
      else if (v.split(":").length === 2) v = v.slice(0, v.indexOf(":"));
      out.push(v);
    }
  }
  return out;
}

/**
 * The client address. Forwarding headers count only when the TCP peer is a trusted proxy;
 * then the chain is walked from the right and the first address that is not itself a trusted
 * proxy is the client (so a client cannot forge its address by sending its own header).
 */
export function clientAddress(peer: string, headers: Headers, trusted: TrustedProxies): string {
  if (trusted.size === 0 || !trusted.has(peer)) return peer;
  const xff = headers.get("x-forwarded-for");
  const forwarded = xff === null ? headers.get("forwarded") : null;
  const hops = xff !== null
    ? xff.split(",").map((s) => withoutPort(s.trim()))
    : forwarded !== null
    ? forwardedFor(forwarded)
    : [];
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    // Not an address (empty, `unknown`, an obfuscated `_node`, anything else): the chain stops
    // and the peer stays the client, as nginx's realip does; the hop would otherwise be the
    // logged client_ip and the upstream's X-Real-IP, and match no IP list.
    if (parseIp(hop) === undefined) return peer;
    if (!trusted.has(hop)) return hop;
  }
  return hops[0] || peer;
}

/**
 * An X-Forwarded-For element without a port: `1.2.3.4:80` and `[2001:db8::1]:80`, as some
 * proxies (Azure Application Gateway) write them, are the addresses before the port.
 */
function withoutPort(hop: string): string {
  if (hop.startsWith("[")) {
    const close = hop.indexOf("]");
    return close > 0 ? hop.slice(1, close) : hop;
  }
  const colon = hop.indexOf(":");
  return colon > 0 && hop.indexOf(":", colon + 1) < 0 ? hop.slice(0, colon) : hop;
}

export interface ForwardFacts {
  readonly peer: string;
  /** The client address the WAF decided on ({@link clientAddress}), sent as X-Real-IP. */
  readonly clientIp: string;
  /** True when the peer is a trusted proxy, so incoming forwarding headers are extended. */
  readonly trustedPeer: boolean;
  readonly proto: "http" | "https";
  readonly host: string;
}

function forwardedNode(ip: string): string {
  return ip.includes(":") ? `"[${ip}]"` : ip;
}

/**
 * The host as a quoted-string (RFC 7239): a quote or backslash in it is escaped, so it cannot
 * end the parameter and add its own (`host="a";for=6.6.6.6"` would forge the client). The own
 * server refuses such a Host; `Deno.serve` (upgrades, HTTP/2) takes it.
 */
function quoted(host: string): string {
  return host.includes('"') || host.includes("\\")
    ? `"${host.replace(/["\\]/g, "\\$&")}"`
    : `"${host}"`;
}

/** The transport's header pairs (net/http1_head.ts), for the proxy's files. */
export type { HeaderPairs };

/**
 * The headers sent upstream: client headers minus hop-by-hop ones, plus forwarding headers.
 * `incoming` are the request's headers as `Headers.forEach` gives them (lower-case names,
 * repeated ones combined), the one copy the transaction makes; the pairs kept are shared, not
 * copied. Returned as pairs rather than a `Headers` object, which would validate and re-sort
 * every `append`.
 */
export function upstreamHeaders(incoming: HeaderPairs, facts: ForwardFacts): HeaderPairs {
  const dropped = connectionTokens(headerOf(incoming, "connection"));
  const trusted = facts.trustedPeer;
  const out: HeaderPairs = [];
  let hasHost = false;
  let priorXff: string | undefined;
  let priorProto: string | undefined;
  let priorHost: string | undefined;
  let priorForwarded: string | undefined;
  for (let i = 0; i < incoming.length; i++) {
    const pair = incoming[i]!;
    const name = pair[0];
    if (HOP_BY_HOP.has(name)) continue;
    if (FORWARDING.has(name)) {
      if (!trusted) continue;
      if (name === "x-forwarded-for") priorXff = pair[1];
      else if (name === "x-forwarded-proto") priorProto = pair[1];
      else if (name === "x-forwarded-host") priorHost = pair[1];
      else if (name === "forwarded") priorForwarded = pair[1];
      continue;
    }
    if (dropped?.has(name)) continue;
    if (name === "host") hasHost = true;
    out.push(pair);
  }
  out.push(["x-forwarded-for", priorXff ? `${priorXff}, ${facts.peer}` : facts.peer]);
  out.push(["x-forwarded-proto", priorProto ?? facts.proto]);
  out.push(["x-forwarded-host", priorHost ?? facts.host]);
  const node = `for=${forwardedNode(facts.peer)};host=${quoted(facts.host)};proto=${facts.proto}`;
  out.push(["forwarded", priorForwarded ? `${priorForwarded}, ${node}` : node]);
  // As nginx's `proxy_set_header X-Real-IP $remote_addr` behind `real_ip_header`: one address,
  // the one the WAF judged and logged, never a copy the client (or a trusted proxy) sent.
  out.push(["x-real-ip", facts.clientIp]);
  if (!hasHost) out.push(["host", facts.host]);
  return out;
}

/** The upstream response's headers minus hop-by-hop ones, plus the trace id. */
export function downstreamHeaders(upstream: Headers | HeaderPairs, traceId: string): HeaderPairs {
  const pairs = upstream instanceof Headers ? [...upstream] : upstream;
  let dropped: Set<string> | undefined;
  for (const [name, value] of pairs) {
    if (name !== "connection") continue;
    const tokens = connectionTokens(value);
    if (tokens !== undefined) { for (const t of tokens) (dropped ??= new Set()).add(t); }
  }
  const out: HeaderPairs = [];
  for (const pair of pairs) {
    const name = pair[0];
    if (HOP_BY_HOP.has(name) || dropped?.has(name) || name === "x-waf-trace-id") continue;
    out.push(pair);
  }
  out.push(["x-waf-trace-id", traceId]);
  return out;
}
