/**
 * Method conditions see the method an override names (issue #37, item 9): frameworks serve a
 * POST carrying `X-HTTP-Method-Override: DELETE`, `X-HTTP-Method`, `X-Method-Override` or a
 * `_method` field as a DELETE, so an ACL blocking DELETE blocks them, and an API-security route
 * that needs a token for DELETE needs one for them. Through the real data plane, with a raw
 * recording upstream as the oracle.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { addSite, apiFor, requireTokens } from "../_helpers/protection.ts";
import { bytes, rawSend } from "../_helpers/raw_socket.ts";
import { startAnsweringUpstream } from "../_helpers/raw_upstream.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";

async function post(
  s: TestServer,
  target: string,
  headers = "",
  body = "",
  method = "POST",
): Promise<number> {
  const port = Number(new URL(s.dataUrl).port);
  const head =
    `${method} ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n${headers}` +
    `Content-Length: ${new TextEncoder().encode(body).length}\r\n\r\n`;
  return (await rawSend(port, bytes(head, body), false)).status;
}

const FORM = "Content-Type: application/x-www-form-urlencoded\r\n";
const BOUNDARY = "----b0undary";
const MULTIPART = `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\n`;
const multipart = (name: string, value: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n` +
  `--${BOUNDARY}--\r\n`;
const JSON_TYPE = "Content-Type: application/json\r\n";

/** Every way a POST names DELETE: [label, target, headers, body]. */
const OVERRIDES: ReadonlyArray<readonly [string, string, string, string]> = [
  ["X-HTTP-Method-Override", "/items/1", "X-HTTP-Method-Override: DELETE\r\n", ""],
  ["X-HTTP-Method", "/items/1", "X-HTTP-Method: DELETE\r\n", ""],
  ["X-Method-Override", "/items/1", "X-Method-Override: delete\r\n", ""],
  ["form _method", "/items/1", FORM, "a=1&_method=DELETE"],
  ["query _method", "/items/1?_method=DELETE", "", ""],
  ["multipart _method", "/items/1", MULTIPART, multipart("_method", "DELETE")],
  ["JSON _method", "/items/1", JSON_TYPE, '{"_method":"DELETE","id":1}'],
];

Deno.test("an ACL blocking DELETE blocks a POST that names DELETE in each override", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const r = await apiFor(s)("POST", "/api/protection/acl-rules", {
    name: "no deletes",
    action: "block",
    conditions: { methods: ["DELETE"] },
  });
  assertEquals(r.status, 201);
  assertEquals(await post(s, "/items/1", "", "", "DELETE"), 403);
  for (const [label, target, headers, body] of OVERRIDES) {
    assertEquals(await post(s, target, headers, body), 403, label);
  }
  // A POST naming no other method, or naming one the rule does not list, passes.
  assertEquals(await post(s, "/items/1", FORM, "a=1&method=DELETE"), 200);
  assertEquals(await post(s, "/items/1", "X-HTTP-Method-Override: PATCH\r\n"), 200);
  assertEquals(up.requests.length, 2);
});

Deno.test("an allow rule for GET does not trust a GET whose override names another method", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  // Allow GET from anywhere, block everything else under /items: an override must not borrow
  // the allowance.
  await api("POST", "/api/protection/acl-rules", {
    name: "reads",
    action: "allow",
    conditions: { methods: ["GET"], path: { prefix: "/items" } },
  });
  await api("POST", "/api/protection/acl-rules", {
    name: "nothing else",
    action: "block",
    conditions: { path: { prefix: "/items" } },
  });
  assertEquals(await post(s, "/items/1", "", "", "GET"), 200);
  assertEquals(await post(s, "/items/1", "X-HTTP-Method-Override: DELETE\r\n", "", "GET"), 403);
});

Deno.test("a token route for DELETE needs a token for a POST that names DELETE", async () => {
  await using up = startAnsweringUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  await requireTokens(s, [{ id: "deletes", method: "DELETE", path_pattern: "^/items/" }]);
  assertEquals(await post(s, "/items/1", "", "", "DELETE"), 401);
  for (const [label, target, headers, body] of OVERRIDES) {
    assertEquals(await post(s, target, headers, body), 401, label);
  }
  assertEquals(await post(s, "/items/1", FORM, "a=1"), 200);
  assertEquals(up.requests.length, 1);
});
