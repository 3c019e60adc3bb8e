/**
 * Edge-case HTTP/1.1 requests and a prober: each request goes on its own connection and the
 * answer's status line and body are kept. `scripts/http1_probe.ts` prints them for a server, and
 * the own HTTP/1.1 server's tests compare its answers with `Deno.serve`'s (hyper's).
 */
import { bytes } from "./raw_socket.ts";

export interface ProbeCase {
  readonly name: string;
  readonly raw: Uint8Array;
}

export interface ProbeResult {
  readonly name: string;
  /** The status of the first answer, 0 when the connection closed without one. */
  readonly status: number;
  /** The answer's body (the echo server's JSON), or "" without one. */
  readonly echo: string;
}

const H = "Host: a.test\r\nConnection: close\r\n";
const hex = (b: number) => b.toString(16).padStart(2, "0");

function cases(): ProbeCase[] {
  const out: ProbeCase[] = [];
  const add = (name: string, ...parts: Array<string | Uint8Array>) =>
    out.push({ name, raw: bytes(...parts) });
  for (let b = 0; b < 256; b++) {
    if (b === 0x20 || b === 0x0a || b === 0x0d) continue;
    add(`target byte ${hex(b)}`, "GET /a", new Uint8Array([b]), `b HTTP/1.1\r\n${H}\r\n`);
    add(`query byte ${hex(b)}`, "GET /a?q=", new Uint8Array([b]), `b HTTP/1.1\r\n${H}\r\n`);
    add(
      `header name byte ${hex(b)}`,
      `GET / HTTP/1.1\r\n${H}X`,
      new Uint8Array([b]),
      "y: v\r\n\r\n",
    );
    add(
      `header value byte ${hex(b)}`,
      `GET / HTTP/1.1\r\n${H}X-V: a`,
      new Uint8Array([b]),
      "b\r\n\r\n",
    );
    // The line walk's edges (the parsers scan names and values in place): a byte first and
    // last in a name, and first and last in a value (after the colon's space, before the CR).
    add(
      `header name first byte ${hex(b)}`,
      `GET / HTTP/1.1\r\n${H}`,
      new Uint8Array([b]),
      "Xy: v\r\n\r\n",
    );
    add(
      `header name last byte ${hex(b)}`,
      `GET / HTTP/1.1\r\n${H}Xy`,
      new Uint8Array([b]),
      ": v\r\n\r\n",
    );
    add(
      `header value first byte ${hex(b)}`,
      `GET / HTTP/1.1\r\n${H}X-V: `,
      new Uint8Array([b]),
      "ab\r\n\r\n",
    );
    add(
      `header value last byte ${hex(b)}`,
      `GET / HTTP/1.1\r\n${H}X-V: ab`,
      new Uint8Array([b]),
      "\r\n\r\n",
    );
    add(`method byte ${hex(b)}`, "G", new Uint8Array([b]), `T / HTTP/1.1\r\n${H}\r\n`);
    add(
      `host byte ${hex(b)}`,
      "GET / HTTP/1.1\r\nConnection: close\r\nHost: a",
      new Uint8Array([b]),
      "b.test\r\n\r\n",
    );
  }
  const specific: Array<[string, string]> = [
    ["plain", `GET /p?x=1 HTTP/1.1\r\n${H}\r\n`],
    ["lf line ends", "GET / HTTP/1.1\nHost: a.test\nConnection: close\n\n"],
    ["lf then crlf end", "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\n\r\n"],
    ["bare cr in request line", `GET /\r HTTP/1.1\r\n${H}\r\n`],
    ["two spaces in request line", `GET  / HTTP/1.1\r\n${H}\r\n`],
    ["tab in request line", `GET\t/ HTTP/1.1\r\n${H}\r\n`],
    ["trailing space in request line", `GET / HTTP/1.1 \r\n${H}\r\n`],
    ["HTTP/1.0", "GET / HTTP/1.0\r\nHost: a.test\r\n\r\n"],
    ["HTTP/1.0 no host", "GET / HTTP/1.0\r\n\r\n"],
    ["HTTP/1.1 no host", "GET / HTTP/1.1\r\nConnection: close\r\n\r\n"],
    ["HTTP/2.0 line", `GET / HTTP/2.0\r\n${H}\r\n`],
    ["HTTP/1.2", `GET / HTTP/1.2\r\n${H}\r\n`],
    ["http/1.1 lower", `GET / http/1.1\r\n${H}\r\n`],
    ["HTTP/0.9", "GET /\r\n\r\n"],
    ["leading empty line", `\r\nGET / HTTP/1.1\r\n${H}\r\n`],
    ["two leading empty lines", `\r\n\r\nGET / HTTP/1.1\r\n${H}\r\n`],
    ["absolute form", `GET http://a.test/abs?x=1 HTTP/1.1\r\n${H}\r\n`],
    ["absolute form other host", `GET http://b.test/abs HTTP/1.1\r\n${H}\r\n`],
    ["absolute form https", `GET https://a.test/abs HTTP/1.1\r\n${H}\r\n`],
    ["asterisk form", `OPTIONS * HTTP/1.1\r\n${H}\r\n`],
    ["authority form GET", `GET a.test:80 HTTP/1.1\r\n${H}\r\n`],
    ["target without slash", `GET abc HTTP/1.1\r\n${H}\r\n`],
    ["empty host", "GET / HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n"],
    ["two hosts", `GET / HTTP/1.1\r\n${H}Host: b.test\r\n\r\n`],
    ["two same hosts", `GET / HTTP/1.1\r\n${H}Host: a.test\r\n\r\n`],
    ["host with port", "GET / HTTP/1.1\r\nHost: a.test:8080\r\nConnection: close\r\n\r\n"],
    ["host ipv6", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n"],
    ["host with path", "GET / HTTP/1.1\r\nHost: a.test/x\r\nConnection: close\r\n\r\n"],
    ["host with userinfo", "GET / HTTP/1.1\r\nHost: u@a.test\r\nConnection: close\r\n\r\n"],
    ["host upper", "GET / HTTP/1.1\r\nHost: A.TEST\r\nConnection: close\r\n\r\n"],
    ["host bad port", "GET / HTTP/1.1\r\nHost: a.test:x\r\nConnection: close\r\n\r\n"],
    ["host space", "GET / HTTP/1.1\r\nHost: a test\r\nConnection: close\r\n\r\n"],
    ["obs fold", `GET / HTTP/1.1\r\n${H}X-A: a\r\n b\r\n\r\n`],
    ["obs fold tab", `GET / HTTP/1.1\r\n${H}X-A: a\r\n\tb\r\n\r\n`],
    ["space before colon", `GET / HTTP/1.1\r\n${H}X-A : a\r\n\r\n`],
    ["no colon", `GET / HTTP/1.1\r\n${H}X-A a\r\n\r\n`],
    ["empty name", `GET / HTTP/1.1\r\n${H}: a\r\n\r\n`],
    ["empty value", `GET / HTTP/1.1\r\n${H}X-A:\r\n\r\n`],
    ["whitespace value", `GET / HTTP/1.1\r\n${H}X-A: \t \r\n\r\n`],
    ["bare cr ending a value", `GET / HTTP/1.1\r\n${H}X-A: a\r\r\n\r\n`],
    ["bare cr before the colon", `GET / HTTP/1.1\r\n${H}X-A\r: a\r\n\r\n`],
    ["bare cr line", `GET / HTTP/1.1\r\n${H}\r\r\n\r\n`],
    ["nul line", `GET / HTTP/1.1\r\n${H}\0\r\n\r\n`],
    ["colon only", `GET / HTTP/1.1\r\n${H}:\r\n\r\n`],
    ["two colons", `GET / HTTP/1.1\r\n${H}X-A:: a\r\n\r\n`],
    ["bare lf header line", `GET / HTTP/1.1\r\n${H}X-A: a\nX-B: b\r\n\r\n`],
    ["cl spaces around", `POST / HTTP/1.1\r\n${H}Content-Length:  3 \t\r\n\r\nabc`],
    ["cl bare cr", `POST / HTTP/1.1\r\n${H}Content-Length: 3\r\r\n\r\nabc`],
    [
      "te chunked trailing space",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "te leading comma",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: ,chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "te chunked vertical tab",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\x0b\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    ["value spaces", `GET / HTTP/1.1\r\n${H}X-A:   a b  \t\r\n\r\n`],
    [
      "first header line starts with space",
      `GET / HTTP/1.1\r\n Host: a.test\r\nConnection: close\r\n\r\n`,
    ],
    ["header name upper", `GET / HTTP/1.1\r\n${H}X-UPPER: v\r\n\r\n`],
    ["repeated header", `GET / HTTP/1.1\r\n${H}X-A: 1\r\nX-A: 2\r\n\r\n`],
    ["repeated cookie", `GET / HTTP/1.1\r\n${H}Cookie: a=1\r\nCookie: b=2\r\n\r\n`],
    ["cl 0", `POST / HTTP/1.1\r\n${H}Content-Length: 0\r\n\r\n`],
    ["cl 3", `POST / HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabc`],
    ["cl plus", `POST / HTTP/1.1\r\n${H}Content-Length: +3\r\n\r\nabc`],
    ["cl negative", `POST / HTTP/1.1\r\n${H}Content-Length: -1\r\n\r\n`],
    ["cl hex", `POST / HTTP/1.1\r\n${H}Content-Length: 0x3\r\n\r\nabc`],
    ["cl space inside", `POST / HTTP/1.1\r\n${H}Content-Length: 1 2\r\n\r\nabc`],
    ["cl list same", `POST / HTTP/1.1\r\n${H}Content-Length: 3, 3\r\n\r\nabc`],
    ["cl list differ", `POST / HTTP/1.1\r\n${H}Content-Length: 3, 4\r\n\r\nabcd`],
    ["cl twice same", `POST / HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc`],
    [
      "cl twice differ",
      `POST / HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd`,
    ],
    ["cl empty", `POST / HTTP/1.1\r\n${H}Content-Length: \r\n\r\n`],
    ["cl huge", `POST / HTTP/1.1\r\n${H}Content-Length: 99999999999999999999\r\n\r\n`],
    ["cl leading zeros", `POST / HTTP/1.1\r\n${H}Content-Length: 003\r\n\r\nabc`],
    ["cl on GET", `GET / HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabc`],
    [
      "te chunked",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "te Chunked case",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "te gzip, chunked",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "te chunked, gzip",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    ],
    ["te identity", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: identity\r\n\r\n`],
    ["te xchunked", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`],
    [
      "te chunked twice",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      "te chunked, chunked",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      "te chunked then identity",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n`,
    ],
    [
      "te gzip then chunked",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    ["te empty", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: \r\n\r\n`],
    [
      "te on 1.0",
      "POST / HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    ],
    [
      "te and cl",
      `POST / HTTP/1.1\r\n${H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    ["te chunked tab", `POST / HTTP/1.1\r\n${H}Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n`],
    [
      "te chunked trailing comma",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked,\r\n\r\n0\r\n\r\n`,
    ],
    [
      "chunk ext",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk ext quoted",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3;a="b c"\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk size upper hex",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n`,
    ],
    [
      "chunk size space",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk size leading space",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk size 0x",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk size bare lf",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk data bare lf",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n`,
    ],
    [
      "chunk data too long",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n`,
    ],
    [
      "chunk trailers",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n`,
    ],
    [
      "chunk last bare lf",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\n`,
    ],
    [
      "chunk size long",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n00000000000000003\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "chunk size overflow",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n`,
    ],
    [
      "expect continue",
      `POST / HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc`,
    ],
    [
      "connection upgrade no upgrade",
      `GET / HTTP/1.1\r\nHost: a.test\r\nConnection: upgrade\r\n\r\n`,
    ],
    ["lower method", `get / HTTP/1.1\r\n${H}\r\n`],
    ["long method", `GETGETGETGETGETGETGETGETGET / HTTP/1.1\r\n${H}\r\n`],
    ["percent junk", `GET /%zz%ff%00/a%?q=%E0%A4%A&x=%u12&%=% HTTP/1.1\r\n${H}\r\n`],
    ["fragment", `GET /a#frag HTTP/1.1\r\n${H}\r\n`],
    ["dot segments", `GET /a/../b/./c HTTP/1.1\r\n${H}\r\n`],
    ["double slash", `GET //a//b HTTP/1.1\r\n${H}\r\n`],
    ["backslash path", `GET /a\\b HTTP/1.1\r\n${H}\r\n`],
    ["unicode target", `GET /caf\u00e9 HTTP/1.1\r\n${H}\r\n`],
    ["garbage", "GARBAGE\r\n\r\n"],
    ["no version", `GET /\r\n${H}\r\n`],
    ["big header 70k", `GET / HTTP/1.1\r\n${H}X-Big: ${"a".repeat(70_000)}\r\n\r\n`],
    ["big header 20k", `GET / HTTP/1.1\r\n${H}X-Big: ${"a".repeat(20_000)}\r\n\r\n`],
    ["big header 300k", `GET / HTTP/1.1\r\n${H}X-Big: ${"a".repeat(300_000)}\r\n\r\n`],
    ["long target 70k", `GET /${"a".repeat(70_000)} HTTP/1.1\r\n${H}\r\n`],
    ["many headers 101", `GET / HTTP/1.1\r\n${H}${"X-N: 1\r\n".repeat(99)}\r\n`],
    ["many headers 127", `GET / HTTP/1.1\r\n${H}${"X-N: 1\r\n".repeat(125)}\r\n`],
    ["many headers 128", `GET / HTTP/1.1\r\n${H}${"X-N: 1\r\n".repeat(126)}\r\n`],
    ["many headers 129", `GET / HTTP/1.1\r\n${H}${"X-N: 1\r\n".repeat(127)}\r\n`],
    ["many headers 200", `GET / HTTP/1.1\r\n${H}${"X-N: 1\r\n".repeat(198)}\r\n`],
    [
      "many distinct headers 150",
      `GET / HTTP/1.1\r\n${H}${
        Array.from({ length: 150 }, (_, i) => `X-N${i}: 1\r\n`).join("")
      }\r\n`,
    ],
  ];
  for (const [name, raw] of specific) add(name, raw);
  return out;
}

export const PROBE_CASES: readonly ProbeCase[] = cases();

/** Sends one raw request and keeps the first answer's status and body. */
export async function probe(port: number, c: ProbeCase): Promise<ProbeResult> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const chunks: Uint8Array[] = [];
  const timer = setTimeout(() => conn.close(), 5_000);
  try {
    await conn.write(c.raw).catch(() => {});
    const buf = new Uint8Array(65536);
    while (true) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
      const text = new TextDecoder("latin1").decode(concat(chunks));
      const end = text.indexOf("\r\n\r\n");
      if (end >= 0) {
        const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, end));
        if (len && text.length - end - 4 >= Number(len[1])) break;
      }
    }
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
  }
  const text = new TextDecoder().decode(concat(chunks));
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  const end = text.indexOf("\r\n\r\n");
  return {
    name: c.name,
    status: m ? Number(m[1]) : 0,
    echo: m && end >= 0 && Number(m[1]) === 200 ? text.slice(end + 4) : "",
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Every case, a few at a time. */
export async function probeAll(port: number, list: readonly ProbeCase[]): Promise<ProbeResult[]> {
  const results: ProbeResult[] = new Array(list.length);
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < list.length) {
      const i = next++;
      results[i] = await probe(port, list[i]!);
    }
  }));
  return results;
}
