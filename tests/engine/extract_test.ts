import assert from "node:assert/strict";
import { extract } from "../../engine/extract.ts";
import type { EngineRequest, Input } from "../../engine/types.ts";

const enc = new TextEncoder();

function req(partial: Partial<EngineRequest>): EngineRequest {
  return { method: "GET", path: "/", query: "", headers: [], ...partial };
}

function find(inputs: Input[], source: string, name: string): string | undefined {
  return inputs.find((i) => i.source === source && i.name === name)?.value;
}

Deno.test("extract() returns repeated query parameters and unusual parameter names", () => {
  const inputs = extract(req({ query: "a=1&a=2&%3Cx%3E=y" }));
  // Each value, then the values joined by a comma, as ASP.NET reads a repeated parameter.
  assert.deepEqual(inputs.filter((i) => i.name === "a").map((i) => i.value), ["1", "2", "1,2"]);
  assert.equal(find(inputs, "query_name", "%3Cx%3E"), "%3Cx%3E");
});

Deno.test("extract() joins a repeat among many parameters too, and nothing when no name repeats", () => {
  const many = Array.from({ length: 20 }, (_, i) => `p${i}=${i}`);
  const inputs = extract(req({ query: [...many, "p7=x"].join("&") }));
  assert.deepEqual(inputs.filter((i) => i.name === "p7").map((i) => i.value), ["7", "x", "7,x"]);
  assert.equal(inputs.filter((i) => i.source === "query" && i.name === "p8").length, 1);
  const few = extract(req({ query: "a=1&b=2&c=3" }));
  assert.deepEqual(few.filter((i) => i.source === "query").map((i) => i.value), ["1", "2", "3"]);
});

Deno.test("extract() joins a repeated form field's values with commas, as ASP.NET does", () => {
  const inputs = extract(req({
    method: "POST",
    headers: [["content-type", "application/x-www-form-urlencoded"]],
    body: enc.encode("q=1'%20union/*&x=1&q=*/select%20password%20from%20users--"),
  }));
  assert.deepEqual(inputs.filter((i) => i.name === "q").map((i) => i.value), [
    "1'%20union/*",
    "*/select%20password%20from%20users--",
    "1'%20union/*,*/select%20password%20from%20users--",
  ]);
  assert.equal(inputs.filter((i) => i.name === "x").length, 1);
});

Deno.test("extract() returns the whole path and its unusual segments", () => {
  const inputs = extract(req({ path: "/items/1'%20or%201=1/view" }));
  assert.equal(find(inputs, "path", ""), "/items/1'%20or%201=1/view");
  assert.equal(find(inputs, "path", "[2]"), "1'%20or%201=1");
  assert.equal(find(inputs, "path", "[1]"), undefined);
});

Deno.test("extract() walks nested JSON with key paths as names", () => {
  const body = enc.encode(JSON.stringify({ user: { roles: ["admin", "x"] }, n: 5, "$where": "1" }));
  const inputs = extract(req({
    method: "POST",
    headers: [["content-type", "application/json"]],
    body,
  }));
  assert.equal(find(inputs, "json", "user.roles[0]"), "admin");
  assert.equal(find(inputs, "json_key", "$where"), "$where");
  assert.equal(inputs.some((i) => i.name === "n"), false);
});

Deno.test("extract() reads the strings of truncated JSON and keeps non-JSON as body text", () => {
  const cut = extract(req({
    method: "POST",
    headers: [["content-type", "application/json"]],
    body: enc.encode('{"a": {"b": ["x", "1\' or 1=1'),
  }));
  assert.equal(find(cut, "json", "a.b[1]"), "1' or 1=1");
  const junk = extract(req({
    method: "POST",
    headers: [["content-type", "application/json"]],
    body: enc.encode("1' or 1=1"),
  }));
  assert.equal(find(junk, "body", ""), "1' or 1=1");
});

Deno.test("extract() splits form bodies", () => {
  const inputs = extract(req({
    method: "POST",
    headers: [["content-type", "application/x-www-form-urlencoded"]],
    body: enc.encode("id=1%27&x=%"),
  }));
  assert.equal(find(inputs, "form", "id"), "1%27");
  assert.equal(find(inputs, "form", "x"), "%");
});

Deno.test("extract() reads multipart fields and file names, skipping binary content", () => {
  const body = '--B\r\nContent-Disposition: form-data; name="title"\r\n\r\nhello\r\n' +
    '--B\r\nContent-Disposition: form-data; name="f"; filename="a.php"\r\n' +
    "Content-Type: image/png\r\n\r\n\x00\x01\x02\x03\x04\x05\x06\x07\r\n--B--\r\n";
  const inputs = extract(req({
    method: "POST",
    headers: [["content-type", "multipart/form-data; boundary=B"]],
    body: Uint8Array.from(body, (c) => c.charCodeAt(0)),
  }));
  assert.equal(find(inputs, "multipart", "title"), "hello");
  assert.equal(find(inputs, "multipart", "f.filename"), "a.php");
  assert.equal(find(inputs, "multipart", "f"), undefined);
});

Deno.test("extract() survives a broken multipart body", () => {
  const inputs = extract(req({
    method: "POST",
    headers: [["content-type", "multipart/form-data; boundary=B"]],
    body: enc.encode("--B\r\nno headers end"),
  }));
  assert.deepEqual(inputs, []);
});

Deno.test("extract() keeps XML bodies whole", () => {
  const xml = '<?xml version="1.0"?><a>1</a>';
  const inputs = extract(req({
    method: "POST",
    headers: [["content-type", "text/xml"]],
    body: enc.encode(xml),
  }));
  assert.equal(find(inputs, "xml", ""), xml);
});

Deno.test("extract() inspects user-data headers and cookies but not standard ones", () => {
  const inputs = extract(req({
    headers: [
      ["user-agent", "curl/8"],
      ["accept", "text/html"],
      ["accept-language", "en;q=0.9"],
      ["x-custom", "v"],
      ["cookie", "a=1; b=2"],
      ["referer", "https://e.example/?q=%3Cb%3E&x=1"],
    ],
  }));
  assert.equal(find(inputs, "header", "user-agent"), "curl/8");
  assert.equal(find(inputs, "header", "x-custom"), "v");
  assert.equal(find(inputs, "header", "accept"), undefined);
  assert.equal(find(inputs, "cookie", "b"), "2");
  assert.equal(find(inputs, "header", "referer?q"), "%3Cb%3E");
});

Deno.test("extract() still inspects a standard header carrying markup", () => {
  const inputs = extract(req({ headers: [["accept", "<script>"]] }));
  assert.equal(find(inputs, "header", "accept"), "<script>");
});
