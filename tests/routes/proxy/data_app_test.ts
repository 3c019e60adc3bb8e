/**
 * The data plane's Hono app: every method and path reaches the one handler with the listener's
 * peer and scheme, HEAD answers carry no body, and a handler that throws still gets a status page
 * with a trace id (never a bare 500).
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { createDataApp } from "../../../routes/proxy/data_app.ts";

Deno.test("the data app passes every request to the transaction with peer and scheme", async () => {
  const seen: string[] = [];
  const data = createDataApp(
    (req, peer, proto) => {
      seen.push(`${req.method} ${new URL(req.url).pathname} ${peer} ${proto}`);
      return Promise.resolve(new Response("body", { headers: { "x-a": "1" } }));
    },
    createMemoryLogger(),
    () => "t".repeat(32),
  );
  const requests = [
    ["GET", "/"],
    ["POST", "/a/b"],
    ["DELETE", "/x?y=1"],
    // A method Hono's router has no table for, and paths a route pattern would have to match.
    ["PROPFIND", "/dav/x%2Fy"],
    ["PATCH", "//a/*"],
  ];
  for (const [method, path] of requests) {
    const res = await data.handle(
      new Request(`http://shop.test${path}`, { method }),
      "192.0.2.7",
      "https",
    );
    assertEquals(await res.text(), "body");
  }
  const head = await data.handle(
    new Request("http://shop.test/h", { method: "HEAD" }),
    "::1",
    "http",
  );
  assertEquals([head.headers.get("x-a"), await head.text()], ["1", ""]);
  assertEquals(seen, [
    "GET / 192.0.2.7 https",
    "POST /a/b 192.0.2.7 https",
    "DELETE /x 192.0.2.7 https",
    "PROPFIND /dav/x%2Fy 192.0.2.7 https",
    "PATCH //a/* 192.0.2.7 https",
    "HEAD /h ::1 http",
  ]);
});

Deno.test("a handler failure becomes the 500 page with a trace id", async () => {
  const logger = createMemoryLogger();
  const data = createDataApp(
    () => {
      throw new Error("boom");
    },
    logger,
    () => "a".repeat(32),
  );
  const res = await data.handle(new Request("http://shop.test/"), "192.0.2.7", "http");
  assertEquals(res.status, 500);
  assertEquals(res.headers.get("x-waf-trace-id"), "a".repeat(32));
  ok(!(await res.text()).includes("boom"));
});
