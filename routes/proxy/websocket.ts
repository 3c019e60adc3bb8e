/**
 * WebSocket pass-through. The upstream socket is opened first (with the client's requested
 * subprotocols and its end-to-end headers), so the client's handshake can answer with the
 * subprotocol the upstream chose, or with a 502 page when the upstream refuses. Then frames
 * are relayed both ways and a close on one side closes the other.
 */
import type { HeaderPairs } from "./forwarding.ts";
import { percentDecode } from "../../engine/normalize.ts";

/** Close codes that may not be sent in a close frame; mapped to a sendable one. */
function sendableCode(code: number): number {
  return code === 1005 || code === 1006 || code === 1015 || code < 1000 || code > 4999
    ? 1000
    : code;
}

const SKIP_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "connection",
  "upgrade",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-extensions",
  "sec-websocket-protocol",
  "content-length",
]);

/**
 * Whether Deno's `WebSocket` client, which takes a URL, sends the path of `pathAndQuery` as the
 * same path. Its URL parser percent-encodes what is not ASCII (the same path once decoded), but
 * also resolves dot segments (`%2e` ones too) and turns a backslash into a slash: `/ws/../admin`
 * would reach the upstream as `/admin`, a path the checks (ACL path rules) never saw.
 */
export function webSocketKeepsPath(pathAndQuery: string): boolean {
  const q = pathAndQuery.indexOf("?");
  const path = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
  let sent: string;
  try {
    sent = new URL(`ws://h${path}`).pathname;
  } catch {
    return false;
  }
  return percentDecode(sent) === percentDecode(path);
}

/** Opens the upstream socket; resolves when it is open, rejects on error or timeout. */
function openUpstream(
  url: string,
  protocols: string[],
  headers: HeaderPairs,
  timeoutMs: number,
): Promise<WebSocket> {
  const forward = new Headers();
  for (const [k, v] of headers) {
    if (!SKIP_HEADERS.has(k)) forward.set(k, v);
  }
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { protocols, headers: forward });
    ws.binaryType = "arraybuffer";
    const timer = setTimeout(() => {
      ws.close();
      reject(new DOMException("WebSocket upstream did not open in time", "TimeoutError"));
    }, timeoutMs);
    ws.onopen = () => {
      clearTimeout(timer);
      resolve(ws);
    };
    ws.onerror = () => {
      clearTimeout(timer);
      reject(new TypeError("WebSocket upstream refused the connection"));
    };
  });
}

/** What a WebSocket pass reads of its request: the transaction is one. */
export interface WebSocketRequest {
  readonly req: Request;
  /** The end-to-end headers the upstream handshake carries. */
  readonly upstreamHeaders: HeaderPairs;
  /** Its trace id goes on the client's 101 answer. */
  readonly record: { readonly trace_id: string };
}

/**
 * Upgrades the request and relays to `upstreamUrl`; throws when the upstream cannot be opened
 * within `timeoutMs`.
 */
export async function passWebSocket(
  tx: WebSocketRequest,
  upstreamUrl: string,
  timeoutMs: number,
): Promise<Response> {
  const req = tx.req;
  const requested = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) =>
    p.trim()
  ).filter((p) => p !== "");
  const upstream = await openUpstream(upstreamUrl, requested, tx.upstreamHeaders, timeoutMs);
  const { socket: client, response } = Deno.upgradeWebSocket(
    req,
    upstream.protocol ? { protocol: upstream.protocol } : {},
  );
  client.binaryType = "arraybuffer";
  const pending: Array<string | ArrayBuffer> = [];
  client.onopen = () => {
    for (const m of pending) client.send(m);
    pending.length = 0;
  };
  client.onmessage = (e) => {
    if (upstream.readyState === WebSocket.OPEN) upstream.send(e.data);
  };
  upstream.onmessage = (e) => {
    if (client.readyState === WebSocket.OPEN) client.send(e.data);
    else if (client.readyState === WebSocket.CONNECTING) pending.push(e.data);
  };
  client.onclose = (e) => {
    if (upstream.readyState <= WebSocket.OPEN) upstream.close(sendableCode(e.code), e.reason);
  };
  upstream.onclose = (e) => {
    if (client.readyState <= WebSocket.OPEN) client.close(sendableCode(e.code), e.reason);
  };
  client.onerror = () => upstream.close();
  upstream.onerror = () => client.close(1011);
  response.headers.set("x-waf-trace-id", tx.record.trace_id);
  return response;
}
