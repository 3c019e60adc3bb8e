/**
 * The ACME server going away in the middle of an order, against the real pebble: a reverse proxy
 * on loopback (its own test CA, given as `directory_ca`) passes every request to pebble with its
 * Host kept, so pebble's URLs name the proxy, and drops the connection of the requests a step
 * chooses. acme-client 5.4.0 retries a request that got no answer, and after the last attempt
 * throws a TypeError of its own (it reads the missing response); the WAF still answers with the
 * error object naming the URL and the network's error: 502 `ACME_DIRECTORY_UNREACHABLE`, or
 * `ACME_VALIDATION_FAILED` when it was a challenge's request.
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { HAS_PEBBLE, startPebble } from "../_helpers/pebble.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { testCertificate } from "../_helpers/certificates.ts";
import { ignoreWithout } from "../_helpers/services.ts";

/** An HTTPS reverse proxy to `target` that drops the requests `cut` names. */
async function startCuttingProxy(target: string, targetCa: string) {
  const { ca, leaf } = await testCertificate("127.0.0.1");
  const upstream = new URL(target);
  const agent = new https.Agent({ ca: targetCa });
  let cut: (path: string) => boolean = () => false;
  const dropped: string[] = [];
  const server = https.createServer(
    { cert: leaf.cert, key: leaf.key },
    (req: IncomingMessage, res: ServerResponse) => {
      const path = req.url ?? "/";
      if (cut(path)) {
        dropped.push(`${req.method} ${path}`);
        req.socket.destroy();
        return;
      }
      const out = https.request({
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path,
        headers: req.headers,
        agent,
      }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on("error", () => req.socket.destroy());
      req.pipe(out);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    directory: `https://127.0.0.1:${port}${upstream.pathname}`,
    ca: ca.cert,
    dropped,
    cutWhen(fn: (path: string) => boolean) {
      cut = fn;
    },
    async [Symbol.asyncDispose]() {
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

Deno.test({
  name:
    "ACME: the CA unreachable after the directory check gives a clean 502 naming the URL, not the library's TypeError (needs pebble)",
  ignore: ignoreWithout(HAS_PEBBLE),
}, async (t) => {
  await using up = startUpstream();
  // The library's retries 10 ms apart at first, not 2 s: what is checked is that it retried and
  // what the WAF answers after the last attempt, not how long it waited.
  await using s = await startTestServer({ deps: { acmeRetryDelayMs: 10 } });
  const httpPort = Number(new URL(s.dataUrl).port);
  await using pebble = await startPebble({ httpPort });
  await using proxy = await startCuttingProxy(pebble.directory, pebble.ca);
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const site = async (name: string) => {
    const r = await callJson(s, "POST", "/api/sites", {
      session: admin,
      body: { name, hosts: [`${name}.test`], upstreams: [up.url] },
    });
    assertEquals(r.status, 201, JSON.stringify(r.body));
    return String((r.body.item as { id: string } | undefined)?.id ?? r.body.id);
  };
  const order = (id: string) =>
    callJson(s, "POST", `/api/sites/${id}/certificate/acme`, {
      session: admin,
      body: { directory: proxy.directory, directory_ca: proxy.ca },
    });

  await t.step(
    "the order's own request dropped every time: ACME_DIRECTORY_UNREACHABLE",
    async () => {
      proxy.cutWhen((path) => path.startsWith("/order-plz"));
      const id = await site("shop");
      const r = await order(id);
      assertEquals(r.status, 502, JSON.stringify(r.body));
      const error = r.body.error as { code: string; message: string; trace_id: string };
      assertEquals(error.code, "ACME_DIRECTORY_UNREACHABLE", error.message);
      assertMatch(error.message, /\/order-plz/);
      ok(!/Cannot read|undefined/.test(error.message), error.message);
      ok(typeof error.trace_id === "string" && error.trace_id.length > 0);
      ok(proxy.dropped.length >= 2, `the library retried: ${proxy.dropped.join(", ")}`);
      const state = (await callJson(s, "GET", `/api/sites/${id}/certificate/acme`, {
        session: admin,
      })).body.acme as { status: string; last_error: string };
      assertEquals(state.status, "failed");
      assertMatch(state.last_error, /\/order-plz/);
    },
  );

  await t.step(
    "a challenge's request dropped: ACME_VALIDATION_FAILED naming the host",
    async () => {
      proxy.dropped.length = 0;
      proxy.cutWhen((path) => path.startsWith("/chalZ/"));
      const id = await site("blog");
      const r = await order(id);
      assertEquals(r.status, 502, JSON.stringify(r.body));
      const error = r.body.error as { code: string; message: string };
      assertEquals(error.code, "ACME_VALIDATION_FAILED", error.message);
      assertMatch(error.message, /host "blog\.test" failed the http-01 challenge: .*\/chalZ\//);
      ok(!/Cannot read|undefined/.test(error.message), error.message);
    },
  );
});
