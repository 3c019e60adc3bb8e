/**
 * The engine's protocol check through the real data plane: which request shapes Deno's HTTP
 * server already refuses (400, before any handler runs) and which reach the engine, where
 * each is blocked with its own class.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { bytes, rawSend } from "../../_helpers/raw_socket.ts";

const H = "Host: shop.test\r\nConnection: close\r\n";

/** name, raw request, expected status, expected finding class (undefined: refused by Deno). */
const CASES: ReadonlyArray<readonly [string, string, number, string | undefined]> = [
  [
    "a Transfer-Encoding coding list",
    `POST /f HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
    403,
    "request-smuggling",
  ],
  [
    "a repeated Content-Length",
    `POST /f HTTP/1.1\r\n${H}Content-Length: 4\r\nContent-Length: 4\r\n\r\nabcd`,
    403,
    "request-smuggling",
  ],
  ["a lower-case method", `get /f HTTP/1.1\r\n${H}\r\n`, 403, "method"],
  ["an absurdly long method", `GETGETGETGETGETGETGETGETGET /f HTTP/1.1\r\n${H}\r\n`, 403, "method"],
  ["TRACE", `TRACE /f HTTP/1.1\r\n${H}\r\n`, 403, "method"],
  [
    "Content-Length and Transfer-Encoding",
    `POST /f HTTP/1.1\r\n${H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    400,
    undefined,
  ],
  [
    "an unknown Transfer-Encoding",
    `POST /f HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`,
    400,
    undefined,
  ],
  [
    "two Transfer-Encoding headers",
    `POST /f HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n`,
    400,
    undefined,
  ],
  ["two Host headers", `GET / HTTP/1.1\r\n${H}Host: other.test\r\n\r\n`, 400, undefined],
  [
    "a CR inside a header value",
    `GET / HTTP/1.1\r\n${H}X-A: b\rSet-Cookie: x\r\n\r\n`,
    400,
    undefined,
  ],
  ["a NUL inside a header value", `GET / HTTP/1.1\r\n${H}X-A: b\u0000c\r\n\r\n`, 400, undefined],
];

Deno.test("protocol violations are refused by Deno or blocked by the engine with their own class", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const port = Number(new URL(s.dataUrl).port);
  for (const [name, raw, status, cls] of CASES) {
    const answer = await rawSend(port, bytes(raw), false);
    assertEquals(answer.status, status, name);
    if (cls === undefined) continue;
    const rec = JSON.parse((await s.dataPlane.accessLog.get(answer.trace ?? ""))?.record ?? "{}");
    assertEquals([rec.action, rec.finding?.class], ["block", cls], name);
  }
  const fine = await rawSend(
    port,
    bytes(`POST /f HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n`),
    false,
  );
  assertEquals(fine.status, 200, "a plain chunked body passes");
});
