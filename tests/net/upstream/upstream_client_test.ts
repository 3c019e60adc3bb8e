/**
 * The `UpstreamClient` contract (net/upstream/upstream_client.ts), run against every
 * implementation: the data plane's own HTTP/1.1 client (against a `Deno.serve` upstream on
 * loopback) and the in-process client tests use instead of a socket
 * (tests/_helpers/handler_upstream.ts). What the transaction relies on: the answer's status,
 * reason, lower-case header pairs and body; the request's headers (the site's Host among them)
 * and its body, as bytes or streamed, reach the upstream; no body for HEAD and 204; a deadline
 * rejects as a timeout (`isTimeout`) on the client's timers; a refused connection rejects as
 * refused (`upstreamCause`). (The `fetch` transport the HTTP/1.1 client replaced cannot keep
 * this contract: it sends the URL's authority as Host, not the site's.)
 */
import { streamOf, upstreamRequest } from "../../_helpers/upstream_request.ts";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { FakeTimers, settlesWithin, stillPending } from "../../_helpers/fake_timers.ts";
import { createHandlerUpstream, type UpstreamHandler } from "../../_helpers/handler_upstream.ts";
import type { Timers } from "../../../net/timers.ts";
import { createHttp1Upstream } from "../../../net/upstream/http1_client.ts";
import {
  isTimeout,
  upstreamCause,
  type UpstreamClient,
  type UpstreamOrigin,
  type UpstreamResponse,
} from "../../../net/upstream/upstream_client.ts";

/** One implementation with an upstream answering with `handler`. */
interface Subject extends AsyncDisposable {
  readonly client: UpstreamClient;
  readonly upstream: UpstreamOrigin;
  /** An origin nothing listens on. */
  readonly refused: UpstreamOrigin;
}

type Harness = (handler: UpstreamHandler, timers?: Timers) => Promise<Subject>;

function originOf(url: string): UpstreamOrigin {
  const u = new URL(url);
  return { origin: u.origin, hostname: u.hostname, port: Number(u.port) };
}

/** A loopback port nothing listens on. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

const IMPLEMENTATIONS: ReadonlyArray<[name: string, harness: Harness]> = [
  ["http1", (handler, timers) => {
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
    const client = createHttp1Upstream({ timers });
    return Promise.resolve({
      client,
      upstream: originOf(`http://127.0.0.1:${server.addr.port}`),
      refused: originOf(`http://127.0.0.1:${closedPort()}`),
      async [Symbol.asyncDispose]() {
        client.close();
        await server.shutdown();
      },
    });
  }],
  ["in-process", (handler, timers) => {
    const client = createHandlerUpstream("http://upstream.test:8080", handler, { timers });
    return Promise.resolve({
      client,
      upstream: originOf("http://upstream.test:8080"),
      refused: originOf("http://elsewhere.test:8080"),
      [Symbol.asyncDispose]() {
        client.close();
        return Promise.resolve();
      },
    });
  }],
];

const request = upstreamRequest;

/** An answer as the transaction reads it, whichever shape the client gave it. */
interface Answer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Array<[string, string]>;
  readonly body: ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer> | null;
}

function answerOf(res: UpstreamResponse | Response): Answer {
  if (!(res instanceof Response)) return res;
  return {
    status: res.status,
    statusText: res.statusText,
    headers: [...res.headers],
    body: res.body,
  };
}

async function text(res: UpstreamResponse | Response): Promise<string> {
  return await new Response(answerOf(res).body).text();
}

/** Answers with what it received, as JSON. */
const echo: UpstreamHandler = async (req) => {
  const url = new URL(req.url);
  return Response.json({
    method: req.method,
    path: url.pathname,
    query: url.search,
    headers: Object.fromEntries(req.headers),
    body: await req.text(),
  }, { statusText: "OK", headers: { "x-upstream": "contract" } });
};

for (const [name, harness] of IMPLEMENTATIONS) {
  Deno.test(`UpstreamClient (${name}): the answer's status, reason, lower-case header pairs and body`, async () => {
    await using s = await harness(echo);
    const res = answerOf(await s.client.send(s.upstream, request({ pathAndQuery: "/a?x=1" })));
    assertEquals([res.status, res.statusText], [200, "OK"]);
    const names = res.headers.map(([n]) => n);
    ok(names.every((n) => n === n.toLowerCase()), names.join());
    assertEquals(res.headers.find(([n]) => n === "x-upstream")?.[1], "contract");
    const got = JSON.parse(await new Response(res.body).text());
    assertEquals([got.method, got.path, got.query], ["GET", "/a", "?x=1"]);
    assertEquals(got.headers["host"], "shop.test", "the site's Host, not the upstream's address");
  });

  Deno.test(`UpstreamClient (${name}): request bodies reach the upstream, as bytes or streamed`, async () => {
    await using s = await harness(echo);
    const bytes = await s.client.send(
      s.upstream,
      request({ method: "POST", upstreamBody: new TextEncoder().encode("a=1&b=2") }),
    );
    assertEquals(JSON.parse(await text(bytes)).body, "a=1&b=2");
    for (const headers of [[], [["content-length", "5"]]] as Array<Array<[string, string]>>) {
      const streamed = await s.client.send(
        s.upstream,
        request({
          method: "PUT",
          upstreamHeaders: [["host", "shop.test"], ...headers],
          upstreamBody: streamOf("ab", "cd", "e"),
        }),
      );
      assertEquals(JSON.parse(await text(streamed)).body, "abcde", JSON.stringify(headers));
    }
  });

  Deno.test(`UpstreamClient (${name}): HEAD and 204 answers have no body`, async () => {
    await using s = await harness((req) =>
      req.method === "HEAD" ? new Response("12345") : new Response(null, { status: 204 })
    );
    for (const [method, status] of [["HEAD", 200], ["DELETE", 204]] as const) {
      const res = answerOf(await s.client.send(s.upstream, request({ method })));
      assertEquals(res.status, status, method);
      assertEquals(await new Response(res.body).text(), "", method);
    }
  });

  Deno.test(`UpstreamClient (${name}): a response deadline rejects as a timeout, on the client's timers`, async () => {
    const arrived = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const timers = new FakeTimers();
    await using s = await harness(async () => {
      arrived.resolve();
      await release.promise;
      return new Response("late");
    }, timers);
    try {
      const sent = s.client.send(s.upstream, request({ responseTimeoutMs: 150 })).then(
        () => undefined,
        (e) => e,
      );
      await arrived.promise;
      await timers.tick(100);
      ok(await stillPending(sent), "no timeout before the deadline");
      await timers.tick(100);
      const err = await settlesWithin(sent);
      ok(isTimeout(err), `a timeout, not ${err}`);
    } finally {
      release.resolve();
    }
  });

  Deno.test(`UpstreamClient (${name}): a refused connection rejects as refused, not as a timeout`, async () => {
    await using s = await harness(echo);
    const err = await s.client.send(s.refused, request()).then(() => undefined, (e) => e);
    ok(err !== undefined && !isTimeout(err), String(err));
    assertEquals(upstreamCause(err), "upstream.refused");
  });
}
