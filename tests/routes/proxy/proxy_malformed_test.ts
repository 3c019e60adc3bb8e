/**
 * The data plane never crashes and never answers 500 on malformed input: raw bytes over a real
 * socket (what no `fetch` client would send), each answered with a status line or a closed
 * connection, and the server still proxies a normal request afterwards.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { bytes, rawSend } from "../../_helpers/raw_socket.ts";

const H = "Host: shop.test\r\nConnection: close\r\n";

const BROKEN_OFF = new Set(["a body shorter than Content-Length", "a long body that breaks off"]);

const CASES: ReadonlyArray<readonly [string, Uint8Array]> = [
  ["broken percent escapes", bytes(`GET /%zz%ff%00/a%?q=%E0%A4%A&x=%u12&%=% HTTP/1.1\r\n${H}\r\n`)],
  [
    "raw bytes that are not UTF-8 in the target",
    bytes(
      "GET /caf",
      new Uint8Array([0xe9, 0xff]),
      "?q=",
      new Uint8Array([0xfe, 0x80]),
      ` HTTP/1.1\r\n${H}\r\n`,
    ),
  ],
  [
    "a header value that is not UTF-8",
    bytes(`GET / HTTP/1.1\r\n${H}X-Odd: `, new Uint8Array([0xff, 0xfe, 0x80]), "\r\n\r\n"),
  ],
  ["a 70 KB header", bytes(`GET / HTTP/1.1\r\n${H}X-Big: ${"a".repeat(70_000)}\r\n\r\n`)],
  ["a garbage request line", bytes("GARBAGE\r\n\r\n")],
  ["a request line with no version", bytes(`GET /\r\n${H}\r\n`)],
  ["a header name with a space", bytes(`GET / HTTP/1.1\r\n${H}Bad Name: x\r\n\r\n`)],
  ["an absolute-form target", bytes(`GET http://shop.test/abs?x=1 HTTP/1.1\r\n${H}\r\n`)],
  ["an empty Host", bytes("GET / HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n")],
  ["two Host headers", bytes(`GET / HTTP/1.1\r\n${H}Host: other.test\r\n\r\n`)],
  [
    "an IPv6 literal Host",
    bytes("GET / HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n"),
  ],
  ["HTTP/1.0 without Host", bytes("GET / HTTP/1.0\r\n\r\n")],
  ["an unknown method", bytes(`FROB /x HTTP/1.1\r\n${H}\r\n`)],
  [
    "a body shorter than Content-Length",
    bytes(`POST /f HTTP/1.1\r\n${H}Content-Length: 100\r\n\r\nshort`),
  ],
  [
    "a long body that breaks off",
    bytes(`POST /f HTTP/1.1\r\n${H}Content-Length: 200000\r\n\r\n${"a=b&".repeat(25_000)}`),
  ],
  [
    "invalid chunked framing",
    bytes(`POST /f HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nZZZ\r\nxx\r\n`),
  ],
  [
    "Content-Length and Transfer-Encoding together",
    bytes(
      `POST /f HTTP/1.1\r\n${H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ),
  ],
  ["a negative Content-Length", bytes(`POST /f HTTP/1.1\r\n${H}Content-Length: -1\r\n\r\n`)],
  [
    "3,000 query parameters",
    bytes(
      `GET /?${
        Array.from({ length: 3_000 }, (_, i) => `p${i}=${i}`).join("&")
      } HTTP/1.1\r\n${H}\r\n`,
    ),
  ],
  ["a malformed cookie header", bytes(`GET / HTTP/1.1\r\n${H}Cookie: ;;;=;a=%;=%zz; b\r\n\r\n`)],
  [
    "truncated JSON",
    bytes(
      `POST /j HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: 8\r\n\r\n{"a":[1,`,
    ),
  ],
  [
    "JSON nested 20,000 deep",
    (() => {
      const body = "[".repeat(20_000) + "]".repeat(20_000);
      return bytes(
        `POST /j HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
    })(),
  ],
  [
    "multipart with a broken boundary",
    bytes(
      `POST /m HTTP/1.1\r\n${H}Content-Type: multipart/form-data; boundary=\r\nContent-Length: 28\r\n\r\n--\r\nContent-Disposition: form`,
    ),
  ],
  [
    "a form body that is not UTF-8",
    bytes(
      `POST /f HTTP/1.1\r\n${H}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\n\r\na=`,
      new Uint8Array([0xff, 0xfe, 0xc3, 0x28]),
    ),
  ],
  [
    "XML with an unterminated entity declaration",
    bytes(
      `POST /x HTTP/1.1\r\n${H}Content-Type: application/xml\r\nContent-Length: 20\r\n\r\n<!DOCTYPE a [<!ENTIT`,
    ),
  ],
];

Deno.test("malformed requests get a status or a closed connection, never a 500, and the data plane keeps serving", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const port = Number(new URL(s.dataUrl).port);
  for (const [name, raw] of CASES) {
    const brokenOff = BROKEN_OFF.has(name);
    const { status, trace } = await rawSend(port, raw, brokenOff);
    if (brokenOff) {
      // The client's fault: 400 with the chain saying so, not a 502 that blames the upstream.
      assertEquals(status, 400, name);
      const rec = JSON.parse((await s.dataPlane.accessLog.get(trace ?? ""))?.record ?? "{}");
      const last = rec.chain.at(-1);
      assertEquals([last.check, last.result], ["body", "unreadable"], name);
    }
    ok(status !== 500, `${name}: answered 500`);
    ok(status === 0 || (status >= 200 && status < 600), `${name}: status ${status}`);
  }
  const failures = s.logs.filter((l) => l.includes("data plane request failed"));
  assertEquals(failures, [], "no request reached the connector's internal-error path");
  const r = await hostFetch(`${s.dataUrl}/after`, "shop.test");
  assertEquals(r.status, 200);
  assertEquals((await r.json()).path, "/after");
});
