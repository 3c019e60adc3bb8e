/**
 * What an operator reads back about a request the WAF refused for its framing: the record the
 * API serves holds the request line's method and target as they arrived, a NUL byte included
 * (the store's text columns cut a value at a NUL; the compact record must not lose the rest).
 */
import { assertEquals } from "../_helpers/assert.ts";
import { ADMIN, call, completeSetup, login } from "../_helpers/identity.ts";
import { bytes, rawSend } from "../_helpers/raw_socket.ts";
import { startTestServer } from "../_helpers/server.ts";

Deno.test("a refused request line with a NUL byte reads back whole through /api/logs", async () => {
  await using s = await startTestServer();
  await completeSetup(s);
  const session = await login(s, ADMIN.username, ADMIN.password);
  const port = Number(new URL(s.dataUrl).port);
  const sent = await rawSend(
    port,
    bytes("GET /a\u0000/../../etc/passwd HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n"),
    false,
  );
  assertEquals(sent.status, 400);
  const listed = await call(s, "GET", "/api/logs?status=400", { session });
  assertEquals(listed.status, 200);
  const items = (await listed.json()).items as { trace_id: string; method: string; path: string }[];
  assertEquals(items.length, 1);
  assertEquals([items[0]!.method, items[0]!.path], ["GET", "/a\u0000/../../etc/passwd"]);
  // The lookup by trace id (the console's record detail) reads the same.
  const one = await call(s, "GET", `/api/logs/${items[0]!.trace_id}`, { session });
  assertEquals((await one.json()).path, "/a\u0000/../../etc/passwd");
});
