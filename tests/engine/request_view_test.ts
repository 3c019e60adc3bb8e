import { assertEquals } from "../_helpers/assert.ts";
import { parsePairs, RequestView } from "../../engine/request_view.ts";
import type { EngineRequest } from "../../engine/types.ts";

const pairs = (text: string) => Array.from(new URLSearchParams(text), ([k, v]) => [k, v]);

Deno.test("parsePairs() reads query and form text exactly as URLSearchParams does", () => {
  for (
    const text of [
      "",
      "a=1",
      "a=1&b=2&a=3",
      "&&a=&=b&c",
      "q=blue+running+shoes&x=%41%42",
      "a=%E4%BD%A0%E5%A5%BD",
      "a=%ZZ&b=%&c=%4",
      "a=%C3%28",
      "a=%ED%A0%80",
      "a==b=c",
      "+=+",
      "a=1&",
      "&",
      "=",
      "a&b",
      "x=%2B+%2b",
      "a=%u0041",
      "%3D=%26&%=%%",
    ]
  ) {
    assertEquals(parsePairs(text), pairs(text), text);
  }
});

Deno.test("parsePairs() matches URLSearchParams on random text from the form alphabet", () => {
  const alphabet = ["a", "b", "=", "&", "+", "%", "2", "B", "E", "D", "C", "3", "8", "0", "é"];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % alphabet.length;
  for (let n = 0; n < 2000; n++) {
    let text = "";
    for (let i = 0; i < 12; i++) text += alphabet[next()];
    assertEquals(parsePairs(text), pairs(text), text);
  }
});

Deno.test("RequestView decodes path, query and form parameters once a body is known", () => {
  const view = new RequestView({
    method: "POST",
    path: "/a%20b",
    query: "q=x+y",
    headers: [["content-type", "application/x-www-form-urlencoded"], ["cookie", "s=1"]],
    body: new TextEncoder().encode("n=%E2%9C%93&m=2"),
  }, "a.test");
  assertEquals(view.path, "/a b");
  assertEquals(view.query, [["q", "x y"]]);
  assertEquals(view.params, [["q", "x y"], ["n", "✓"], ["m", "2"]]);
  assertEquals(view.cookies, "s=1");
  assertEquals(view.header("content-type"), "application/x-www-form-urlencoded");
});

Deno.test("parsePairs() reads a long run of value-less pairs followed by one with a value", () => {
  const text = "a&".repeat(20_000) + "b=c";
  const got = parsePairs(text);
  assertEquals(got.length, 20_001);
  assertEquals(got[0], ["a", ""]);
  assertEquals(got[20_000], ["b", "c"]);
  assertEquals(got, pairs(text));
});

Deno.test("RequestView.methods lists the request's method and every override, in capitals", () => {
  const enc = new TextEncoder();
  const at = (over: Partial<EngineRequest>) =>
    new RequestView({ method: "post", path: "/", query: "", headers: [], ...over }, "a.test")
      .methods;
  assertEquals(at({}), ["POST"]);
  assertEquals(
    at({
      headers: [["x-http-method-override", "put"], ["x-http-method", "PATCH"], [
        "x-method-override",
        "put",
      ]],
      query: "_method=delete",
    }),
    ["POST", "PUT", "PATCH", "DELETE"],
  );
  const multipart =
    '--b\r\nContent-Disposition: form-data; name="_method"\r\n\r\nDELETE\r\n--b--\r\n';
  assertEquals(
    at({
      headers: [["content-type", "multipart/form-data; boundary=b"]],
      body: enc.encode(multipart),
    }),
    ["POST", "DELETE"],
  );
  assertEquals(
    at({ headers: [["content-type", "application/json"]], body: enc.encode('{"_method":"PUT"}') }),
    ["POST", "PUT"],
  );
  assertEquals(at({ headers: [["content-type", "text/plain"]], body: enc.encode("_method=PUT") }), [
    "POST",
  ]);
});

Deno.test("RequestView's path is the normalised path of the site's upstream kind", () => {
  const v = (path: string, kind?: "iis") =>
    new RequestView({ method: "GET", path, query: "", headers: [] }, "a.test", kind);
  assertEquals(v("/x/.%2e/a//b/./c").path, "/a/b/c");
  assertEquals(v("/%E0%A4%A/x").path, "/\u00e0\u00a4%A/x", "a broken escape stays as written");
  assertEquals(v("/A\\B", "iis").normalPath.key, "/a/b");
});
