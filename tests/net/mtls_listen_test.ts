/**
 * The mTLS cluster listener tells its handler when the client goes away: the request's signal
 * aborts, so a node's waiting policy watch stops waiting (and counting against the cap) when the
 * node disconnects.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { testCertificate } from "../_helpers/certificates.ts";
import { listenMtls } from "../../net/mtls_listen.ts";

Deno.test("listenMtls() aborts a request's signal when its client goes away", async () => {
  const { ca, leaf } = await testCertificate("127.0.0.1");
  const started = Promise.withResolvers<void>();
  const aborted = Promise.withResolvers<boolean>();
  const listener = await listenMtls({
    name: "cluster",
    hostname: "127.0.0.1",
    port: 0,
    cert: leaf.cert,
    key: leaf.key,
    ca: ca.cert,
    maxBodyBytes: 1024,
    handler: (req) => {
      started.resolve();
      return new Promise((resolve) => {
        req.signal.addEventListener("abort", () => {
          aborted.resolve(true);
          resolve(new Response(null, { status: 204 }));
        });
      });
    },
  });
  const client = Deno.createHttpClient({ caCerts: [ca.cert] });
  const gone = new AbortController();
  try {
    const call = fetch(`https://127.0.0.1:${listener.port}/wait`, {
      client,
      signal: gone.signal,
    }).catch((err: Error) => err.name);
    await started.promise;
    gone.abort();
    assertEquals(await call, "AbortError");
    assertEquals(await aborted.promise, true);
  } finally {
    client.close();
    await listener.shutdown();
  }
});
