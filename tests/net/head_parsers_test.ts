/**
 * The two HTTP/1.1 head parsers walk their lines in place (issue 13). This holds them to the
 * rules they replaced, byte for byte: every byte value at each edge of a field line (first, middle
 * and last of the name; first, middle and last of the value; around the colon), with CRLF and
 * bare-LF line ends, and the header-count limits, against a reference that is the former
 * line-split and regular-expression parser of the header section. Same acceptance, same reason,
 * same name and value.
 */
import { assertEquals } from "../_helpers/assert.ts";
import {
  BadRequest,
  MAX_HEADER_LINES,
  parseRequestHead,
  requestLineParts,
} from "../../net/http1_request_head.ts";
import { COMMON_FIELD_NAMES, fieldName, headEnd, stripCr, trimOws } from "../../net/http1_head.ts";
import {
  MAX_HEADERS,
  parseHead,
  statusLineParts,
  UpstreamProtocolError,
} from "../../net/upstream/http1_parse.ts";

const TOKEN_PREFIX = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// deno-lint-ignore no-control-regex
const BAD_REQUEST_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const BAD_RESPONSE_VALUE = /[\0\r\n]/;

type Outcome = string | Array<[string, string]>;

/** The former request parser's header section: the pairs, or the reason it refused. */
function requestReference(text: string): Outcome {
  const lines = text.split("\n");
  const last = lines.length - 2;
  if (last - 1 > MAX_HEADER_LINES) return "too many header lines";
  const out: Array<[string, string]> = [];
  for (let i = 1; i < last; i++) {
    const line = stripCr(lines[i]!);
    const h = TOKEN_PREFIX.exec(line);
    if (h === null) return "invalid header line";
    const value = trimOws(line.slice(h[0].length));
    if (BAD_REQUEST_VALUE.test(value)) return "invalid header value";
    out.push([h[1]!.toLowerCase(), value]);
  }
  return out;
}

/** The former upstream parser's header section. */
function responseReference(text: string): Outcome {
  const lines = text.split("\n");
  const last = lines.length - 2;
  if (last - 1 > MAX_HEADERS) return "too many response headers";
  const out: Array<[string, string]> = [];
  for (let i = 1; i < last; i++) {
    const line = stripCr(lines[i]!);
    const colon = line.indexOf(":");
    if (colon <= 0) return "malformed header line";
    const rawName = line.slice(0, colon);
    if (!TOKEN.test(rawName)) return "malformed header name";
    const value = trimOws(line.slice(colon + 1));
    if (BAD_RESPONSE_VALUE.test(value)) return "malformed header value";
    out.push([rawName.toLowerCase(), value]);
  }
  return out;
}

/** The head as a server finds it: up to the first empty line (CRLF or bare LF). */
function head(text: string): string {
  const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
  const end = headEnd(bytes, 0, bytes.length);
  return end < 0 ? text : text.slice(0, end);
}

function requestOutcome(text: string): Outcome {
  try {
    const h = parseRequestHead(text);
    // Compared before joining: the reference keeps every line (names here never repeat).
    return h.headers.slice().sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  } catch (err) {
    if (err instanceof BadRequest) return err.reason;
    throw err;
  }
}

function responseOutcome(text: string): Outcome {
  try {
    return parseHead(text).headers;
  } catch (err) {
    if (err instanceof UpstreamProtocolError) return err.message;
    throw err;
  }
}

const sorted = (o: Outcome) =>
  typeof o === "string" ? o : o.slice().sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/** Field lines with byte `c` at each edge of the name and the value. */
function lines(c: string): string[] {
  return [
    `${c}Xy: v`,
    `X${c}y: v`,
    `Xy${c}: v`,
    `Xy:${c}v`,
    `Xy: ${c}v`,
    `Xy: v${c}w`,
    `Xy: v${c}`,
    `Xy: v ${c}`,
    `Xy: ${c}`,
    `${c}: v`,
    `${c}`,
  ];
}

Deno.test("the request head parser keeps the former rules at every edge of a field line, for every byte", () => {
  const differ: string[] = [];
  for (let b = 0; b < 256; b++) {
    for (const line of lines(String.fromCharCode(b))) {
      for (const eol of ["\r\n", "\n"]) {
        const text = head(`GET / HTTP/1.1\r\nHost: a.test\r\n${line}${eol}End-Line: z${eol}\r\n`);
        const want = sorted(requestReference(text));
        const got = requestOutcome(text);
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          differ.push(`${JSON.stringify(text)}: ${JSON.stringify(got)} / ${JSON.stringify(want)}`);
        }
      }
    }
  }
  assertEquals(differ, []);
});

Deno.test("the upstream head parser keeps the former rules at every edge of a field line, for every byte", () => {
  const differ: string[] = [];
  for (let b = 0; b < 256; b++) {
    for (const line of lines(String.fromCharCode(b))) {
      for (const eol of ["\r\n", "\n"]) {
        const text = head(`HTTP/1.1 200 OK\r\n${line}${eol}End-Line: z${eol}\r\n`);
        const want = responseReference(text);
        const got = responseOutcome(text);
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          differ.push(`${JSON.stringify(text)}: ${JSON.stringify(got)} / ${JSON.stringify(want)}`);
        }
      }
    }
  }
  assertEquals(differ, []);
});

Deno.test("both head parsers count header lines to their limits exactly", () => {
  for (const n of [MAX_HEADER_LINES - 1, MAX_HEADER_LINES, MAX_HEADER_LINES + 1]) {
    // Host is one of the n lines.
    const text = `GET / HTTP/1.1\r\nHost: a.test\r\n${"X: 1\r\n".repeat(n - 1)}\r\n`;
    const refused = n > MAX_HEADER_LINES;
    assertEquals(typeof requestOutcome(text) === "string", refused, `request, ${n} lines`);
    assertEquals(typeof requestReference(text) === "string", refused);
  }
  for (const n of [MAX_HEADERS - 1, MAX_HEADERS, MAX_HEADERS + 1]) {
    const text = `HTTP/1.1 200 OK\r\n${"X: 1\r\n".repeat(n)}\r\n`;
    const refused = n > MAX_HEADERS;
    assertEquals(typeof responseOutcome(text) === "string", refused, `response, ${n} lines`);
    assertEquals(typeof responseReference(text) === "string", refused);
  }
});

Deno.test("a common field name is read as its lower case, and a name one token character off is not taken for it", () => {
  const tchars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  let checked = 0;
  for (const name of COMMON_FIELD_NAMES) {
    const variants = [
      name,
      name.toUpperCase(),
      name.replace(/(^|-)[a-z]/g, (m) => m.toUpperCase()),
    ];
    for (let i = 0; i < name.length; i++) {
      for (const c of tchars) variants.push(name.slice(0, i) + c + name.slice(i + 1));
    }
    for (const v of variants) {
      const text = `:${v}:`;
      assertEquals(fieldName(text, 1, v.length + 1), v.toLowerCase(), v);
      checked++;
    }
  }
  assertEquals(checked > 20_000, true);
  assertEquals(fieldName("User-Agent", 0, 10), "user-agent");
  assertEquals(fieldName("X-Custom", 0, 8), "x-custom");
  const req = parseRequestHead("GET / HTTP/1.1\r\nHOST: a.example\r\nUser-Agenu: x\r\n\r\n");
  assertEquals(req.headers, [["host", "a.example"], ["user-agenu", "x"]]);
  const res = parseHead("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nSERVER: n\r\nDatE: d\r\n\r\n");
  assertEquals(res.headers, [["content-length", "0"], ["server", "n"], ["date", "d"]]);
});

Deno.test("the upstream head parser reads Connection and a Content-Length list as before, with or without a list", () => {
  const head = (version: string, fields: string) =>
    parseHead(`HTTP/1.${version} 200 OK\r\n${fields}\r\n`);
  assertEquals(head("1", "Connection: close\r\n").close, true);
  assertEquals(head("1", "Connection: keep-alive\r\n").close, false);
  assertEquals(head("0", "Connection: keep-alive\r\n").close, false);
  assertEquals(head("0", "Connection: Keep-Alive\r\n").close, false);
  assertEquals(head("0", "\r\n").close, true);
  assertEquals(head("1", "Connection: upgrade, Close\r\n").close, true);
  assertEquals(head("1", "Content-Length: 5\r\n").contentLength, 5);
  assertEquals(head("1", "Content-Length: 5, 5\r\nContent-Length: 5\r\n").contentLength, 5);
  for (const bad of ["5, 6", "5,", "x", ""]) {
    let reason = "";
    try {
      head("1", `Content-Length: ${bad}\r\n`);
    } catch (err) {
      reason = (err as Error).message;
    }
    assertEquals(reason !== "", true, bad);
  }
});

/** Every line made from `base` by putting each code unit 0x00-0x1ff at each of `positions`. */
function edgeLines(base: string, positions: readonly number[]): string[] {
  const out = [base];
  for (const at of positions) {
    for (let c = 0; c < 0x200; c++) {
      const ch = String.fromCharCode(c);
      out.push(base.slice(0, at) + ch + base.slice(at + 1));
      out.push(base.slice(0, at) + ch + base.slice(at));
      out.push(base.slice(0, at) + base.slice(at + 1));
    }
  }
  return out;
}

Deno.test("the request line is split as the former pattern split it, for every code unit at each edge", () => {
  const REQUEST_LINE =
    /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([\x21\x22\x24-\x7e\x80-\xff]+) HTTP\/1\.([01])$/;
  const bases = ["GET /a?b=c HTTP/1.1", "M /x HTTP/1.0", "PROPFIND /\u00e9x HTTP/1.1"];
  let checked = 0;
  for (const base of bases) {
    const positions = [0, 1, base.indexOf(" ") - 1, base.indexOf(" "), base.indexOf(" ") + 1];
    const sp2 = base.lastIndexOf(" ");
    positions.push(sp2 - 1, sp2, sp2 + 1, sp2 + 5, base.length - 2, base.length - 1, base.length);
    for (const line of edgeLines(base, positions)) {
      const m = REQUEST_LINE.exec(line);
      const expected = m === null
        ? undefined
        : [m[1], m[2], m[3] === "1" ? 1 : 0, /[\x80-\xff]/.test(m[2]!)];
      assertEquals(requestLineParts(line), expected, JSON.stringify(line));
      checked++;
    }
  }
  assertEquals(checked > 30_000, true);
});

Deno.test("the status line is split as the former pattern split it, for every code unit at each edge", () => {
  const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
  const bases = ["HTTP/1.1 200 OK", "HTTP/1.0 404", "HTTP/1.1 503 ", "HTTP/1.1 301 Moved \u00e9"];
  let checked = 0;
  for (const base of bases) {
    const positions = [0, 5, 6, 7, 8, 9, 10, 11, 12, 13, base.length - 1, base.length];
    for (const line of edgeLines(base, positions)) {
      const m = STATUS_LINE.exec(line);
      const expected = m === null ? undefined : [m[1] === "1" ? 1 : 0, Number(m[2]), m[3] ?? ""];
      assertEquals(statusLineParts(line), expected, JSON.stringify(line));
      checked++;
    }
  }
  assertEquals(checked > 30_000, true);
});
