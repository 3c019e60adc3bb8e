/**
 * Reading raw HTTP/1.1 request files (request line, headers, blank line, optional binary
 * body) into engine requests, and writing them back for replay.
 */

import type { EngineRequest } from "../engine/types.ts";
import { latin1 } from "../net/http1_head.ts";

/** A parsed request file. */
export interface RawRequest {
  readonly method: string;
  /** Request target as written (path and query, still encoded). */
  readonly target: string;
  readonly version: string;
  /** Header lines in order, names as written. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
}

/** Parses a request file; tolerates LF-only line endings and a missing blank line. */
export function parseRawRequest(bytes: Uint8Array): RawRequest {
  let headEnd = -1;
  let bodyStart = bytes.length;
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i + 1] === 10) {
      headEnd = i;
      bodyStart = i + 2;
      break;
    }
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      headEnd = i;
      bodyStart = i + 4;
      break;
    }
  }
  // One character a byte, as the data plane's server reads a head (`TextDecoder("latin1")` is
  // windows-1252, which turns 0x80-0x9f into other characters).
  const head = latin1(bytes, 0, headEnd < 0 ? bytes.length : headEnd);
  const lines = head.split(/\r?\n/);
  const [method = "GET", target = "/", version = "HTTP/1.1"] = (lines[0] ?? "").split(" ");
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { method, target, version, headers, body: bytes.subarray(bodyStart) };
}

/** Converts a parsed file into the engine's request shape (as the connector would). */
export function toEngineRequest(raw: RawRequest): EngineRequest {
  const q = raw.target.indexOf("?");
  return {
    method: raw.method,
    path: q < 0 ? raw.target : raw.target.slice(0, q),
    query: q < 0 ? "" : raw.target.slice(q + 1),
    headers: raw.headers.map(([n, v]) => [n.toLowerCase(), v] as const),
    body: raw.body.length > 0 ? raw.body : undefined,
  };
}

const ENCODER = new TextEncoder();

/**
 * Serialises a request for replay the way published comparisons do: Host replaced,
 * Content-Length recomputed from the body, `Connection: close`.
 */
export function serializeForReplay(raw: RawRequest, host: string): Uint8Array {
  const skip = new Set(["host", "content-length", "connection", "transfer-encoding"]);
  let head = `${raw.method} ${raw.target} ${raw.version}\r\nHost: ${host}\r\n`;
  for (const [name, value] of raw.headers) {
    if (!skip.has(name.toLowerCase())) head += `${name}: ${value}\r\n`;
  }
  if (raw.body.length > 0 || raw.method === "POST") {
    head += `Content-Length: ${raw.body.length}\r\n`;
  }
  head += "Connection: close\r\n\r\n";
  const headBytes = latin1Bytes(head);
  const out = new Uint8Array(headBytes.length + raw.body.length);
  out.set(headBytes);
  out.set(raw.body, headBytes.length);
  return out;
}

function latin1Bytes(s: string): Uint8Array {
  let ascii = true;
  for (let i = 0; i < s.length && ascii; i++) ascii = s.charCodeAt(i) < 0x80;
  if (ascii) return ENCODER.encode(s);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}
