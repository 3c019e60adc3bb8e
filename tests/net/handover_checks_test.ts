/**
 * Requests on a connection the own HTTP/1.1 server hands over to `Deno.serve` (an `Upgrade:`
 * request, and whatever follows it on the same connection when the upgrade is refused) are
 * checked as the own parser checks any request: what it refuses gets a 400 and reaches no
 * upstream, and an absolute-form target reaches it as the own server would send it. The oracle
 * is a recording upstream on a raw socket (issue #37, item 11).
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { AnswerReader, bytes } from "../_helpers/raw_socket.ts";
import { startAnsweringUpstream } from "../_helpers/raw_upstream.ts";
import { startTestServer } from "../_helpers/server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";

const UPGRADE = "connection: upgrade\r\nupgrade: foo\r\n";
const GOOD = `GET /one HTTP/1.1\r\nhost: shop.test\r\n${UPGRADE}\r\n`;

/** Heads the own parser refuses with 400 (each sent after an upgrade request). */
const REFUSED: Record<string, string> = {
  "framing name with an underscore":
    "POST /two HTTP/1.1\r\nhost: shop.test\r\ncontent_length: 5\r\ncontent-length: 0\r\n\r\n",
  "Transfer-Encoding with Content-Length":
    "POST /two HTTP/1.1\r\nhost: shop.test\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n0\r\n\r\n",
  "a header name with a space": "GET /two HTTP/1.1\r\nhost: shop.test\r\nx bad: 1\r\n\r\n",
  "obsolete line folding": "GET /two HTTP/1.1\r\nhost: shop.test\r\nx-a: 1\r\n folded\r\n\r\n",
  "two Hosts": "GET /two HTTP/1.1\r\nhost: shop.test\r\nhost: other.test\r\n\r\n",
  "an absolute target naming another host":
    "GET http://other.test/two HTTP/1.1\r\nhost: shop.test\r\n\r\n",
  "no Host": "GET /two HTTP/1.1\r\nx-a: 1\r\n\r\n",
};

async function withWaf(
  test: (port: number, requests: readonly string[]) => Promise<void>,
): Promise<void> {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  await test(Number(new URL(s.dataUrl).port), up.requests);
}

const requestLines = (requests: readonly string[]) =>
  requests.map((r) => r.slice(0, r.indexOf("\r\n")));

/** The statuses of the answers on a connection after `sends` (each read before the next). */
async function exchange(port: number, ...sends: string[]): Promise<Array<number | null>> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const reader = new AnswerReader(conn);
    const statuses: Array<number | null> = [];
    for (const send of sends) {
      await conn.write(bytes(send));
      statuses.push((await reader.next())?.status ?? null);
    }
    return statuses;
  } finally {
    conn.close();
  }
}

Deno.test("a handed-over upgrade request is refused with 400 for what the own parser refuses", async () => {
  await withWaf(async (port, requests) => {
    assertEquals(
      await exchange(
        port,
        `POST /a HTTP/1.1\r\nhost: shop.test\r\n${UPGRADE}content_length: 5\r\ncontent-length: 0\r\n\r\n`,
      ),
      [400],
    );
    assertEquals(requests.length, 0);
  });
});

Deno.test("an absolute-form target with an empty path is forwarded as `/?query`, never as the query's path", async () => {
  await withWaf(async (port, requests) => {
    // As the upgrade request itself, and as a request after a refused upgrade.
    assertEquals(
      await exchange(
        port,
        `GET http://shop.test?x=/../p HTTP/1.1\r\nhost: shop.test\r\n${UPGRADE}\r\n`,
      ),
      [200],
    );
    assertEquals(
      await exchange(
        port,
        GOOD,
        "GET http://shop.test?y=/../q HTTP/1.1\r\nhost: shop.test\r\n\r\n",
      ),
      [200, 200],
    );
    assertEquals(requestLines(requests), [
      "GET /?x=/../p HTTP/1.1",
      "GET /one HTTP/1.1",
      "GET /?y=/../q HTTP/1.1",
    ]);
  });
});

Deno.test("after a refused upgrade, a request the own parser refuses gets 400 and reaches no upstream", async () => {
  await withWaf(async (port, requests) => {
    for (const [name, head] of Object.entries(REFUSED)) {
      assertEquals(await exchange(port, GOOD, head), [200, 400], name);
    }
    assertEquals(requestLines(requests), Object.keys(REFUSED).map(() => "GET /one HTTP/1.1"));
  });
});

Deno.test("a refused head pipelined behind an upgrade request in one write reaches no upstream", async () => {
  await withWaf(async (port, requests) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await conn.write(bytes(GOOD + REFUSED["framing name with an underscore"]!));
      const reader = new AnswerReader(conn);
      const statuses: number[] = [];
      for (let a = await reader.next(); a !== null; a = await reader.next()) {
        statuses.push(a.status);
      }
      // The answer to the first may be cut off by the refusal; the last is the 400.
      assertEquals(statuses.at(-1), 400);
    } finally {
      conn.close();
    }
    ok(requestLines(requests).every((l) => l === "GET /one HTTP/1.1"), requests.join("\n"));
  });
});

Deno.test("a body of a request after a refused upgrade is forwarded whole, and the next head checked", async () => {
  await withWaf(async (port, requests) => {
    const body = "POST /form HTTP/1.1\r\nhost: shop.test\r\ncontent-length: 11\r\n\r\nhello world";
    const chunked =
      "POST /chunks HTTP/1.1\r\nhost: shop.test\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    assertEquals(
      await exchange(port, GOOD, body, chunked, REFUSED["a header name with a space"]!),
      [200, 200, 200, 400],
    );
    assertEquals(requestLines(requests), [
      "GET /one HTTP/1.1",
      "POST /form HTTP/1.1",
      "POST /chunks HTTP/1.1",
    ]);
    ok(requests[1]!.endsWith("hello world"), requests[1]);
  });
});
