import assert from "node:assert/strict";
import { extract } from "../../engine/extract.ts";
import { inspect } from "../../engine/inspect.ts";
import { scanJson } from "../../engine/json_scan.ts";
import { readXml } from "../../engine/xml_reader.ts";
import { graphqlStrings } from "../../engine/graphql.ts";
import type { EngineRequest, Input } from "../../engine/types.ts";

const enc = new TextEncoder();

function post(type: string, body: string, path = "/"): EngineRequest {
  return {
    method: "POST",
    path,
    query: "",
    headers: [["host", "a.example"], ["content-type", type]],
    body: enc.encode(body),
  };
}

function find(inputs: Input[], source: string, name: string): string | undefined {
  return inputs.find((i) => i.source === source && i.name === name)?.value;
}

Deno.test("extract() names path segments and their matrix parameters", () => {
  const inputs = extract({
    method: "GET",
    path: "/foo/24'union%20select%201/bar;jsessionid=x;v=%3Cb%3E",
    query: "",
    headers: [],
  });
  assert.equal(find(inputs, "path", "[2]"), "24'union%20select%201");
  assert.equal(find(inputs, "path", "[3];v"), "%3Cb%3E");
  assert.equal(find(inputs, "path", "[1]"), undefined);
});

Deno.test("extract() glues a payload's own & back onto its value", () => {
  const inputs = extract({
    method: "GET",
    path: "/",
    query: "q=%3CIMG%20SRC=j&%23X41vascript:alert(1)%3E&debug&cmd=1%20&&%20ls",
    headers: [],
  });
  assert.equal(find(inputs, "query", "q"), "%3CIMG%20SRC=j&%23X41vascript:alert(1)%3E");
  assert.equal(find(inputs, "query", "cmd"), "1%20&&%20ls");
  assert.equal(find(inputs, "query", "debug"), undefined);
});

Deno.test("extract() reads XML element text and attributes by their place, and keeps the document", () => {
  const xml = '<?xml version="1.0"?><root><a probe="x&quot;y">one</a><![CDATA[<b>]]></root>';
  const inputs = extract(post("application/xml", xml));
  assert.equal(find(inputs, "xml", "/root/a@probe"), "x&quot;y");
  assert.equal(find(inputs, "xml", "/root/a"), "one");
  assert.equal(find(inputs, "xml", "/root"), "<b>");
  const doc = inputs.find((i) => i.source === "xml" && i.name === "");
  assert.equal(doc?.structured, true);
});

Deno.test("extract() reads multipart names, file names and part headers", () => {
  const body = '--B\r\nContent-Disposition: form-data; name="/a/../../etc/passwd"\r\n\r\nx\r\n' +
    '--B\r\nContent-Disposition: form-data; name="file"; filename="a.php"\r\n' +
    "Content-Type: text/plain; x=<svg>\r\nX-Note: hi\r\n\r\nhello\r\n--B--\r\n";
  const inputs = extract(post("multipart/form-data; boundary=B", body));
  assert.equal(find(inputs, "multipart", "/a/../../etc/passwd.name"), "/a/../../etc/passwd");
  assert.equal(find(inputs, "multipart", "file.filename"), "a.php");
  assert.equal(find(inputs, "multipart", "file.content-type"), "text/plain; x=<svg>");
  assert.equal(find(inputs, "multipart", "file.x-note"), "hi");
});

Deno.test("extract() reads GraphQL documents and their string arguments", () => {
  const doc = 'query { user(id: "1\' or 1=1--") { name } }';
  const inputs = extract(post("application/json", JSON.stringify({ query: doc }), "/graphql"));
  assert.equal(find(inputs, "graphql", ".query"), doc);
  assert.equal(find(inputs, "graphql", ".query.id"), "1' or 1=1--");
  const get = extract({
    method: "GET",
    path: "/graphql",
    query: "query=%7B__schema%7B",
    headers: [],
  });
  assert.equal(find(get, "graphql", ".query"), "{__schema{");
});

Deno.test("extract() judges unusual JSON keys and cookie names", () => {
  const inputs = extract(post("application/json", '{"a":{"<x>":1,"__proto__":{"b":2}}}'));
  assert.equal(find(inputs, "json_key", "a.<x>"), "<x>");
  const cookies = extract({
    method: "GET",
    path: "/",
    query: "",
    headers: [["cookie", "<script>=1; ok=2"]],
  });
  assert.equal(find(cookies, "cookie_name", "<script>"), "<script>");
});

Deno.test("inspect() names the place of a finding", () => {
  const at = (req: EngineRequest) => inspect(req, { level: "balanced" }).blocking?.location;
  assert.equal(
    at({ method: "GET", path: "/foo/1'%20union%20select%201,2--/bar", query: "", headers: [] }),
    "path[2]",
  );
  assert.equal(
    at(post("text/xml", '<r><a probe="&lt;svg onload=alert(1)&gt;">x</a></r>')),
    "xml:/r/a@probe",
  );
  assert.equal(
    at(post("application/json", JSON.stringify({ query: "{ __schema { types { name } } }" }))),
    "graphql.query",
  );
});

Deno.test("inspect() finds a payload after 8 to 128 KB of padding, within its budget", () => {
  for (const kb of [8, 32, 64, 128]) {
    const padding = "A".repeat(kb * 1024);
    for (const tail of [";cat /etc/passwd", "' union select password from users--"]) {
      const result = inspect(
        post("application/x-www-form-urlencoded", `x=${padding}${encodeURIComponent(tail)}`),
        { level: "balanced" },
      );
      assert.ok(result.blocking !== undefined, `${kb} KB + ${tail}`);
      assert.equal(result.truncated, false);
    }
  }
});

Deno.test("inspect() judges every window of a long text, wherever the payload sits", () => {
  const words = "lorem ipsum dolor sit amet ".repeat(2000);
  for (const at of [0, 5000, 12287, 12288, 16380, 30000, words.length]) {
    const text = words.slice(0, at) + " <script>alert(1)</script> " + words.slice(at);
    const result = inspect(post("text/plain", text), { level: "balanced" });
    assert.equal(result.blocking?.class, "xss", `payload at ${at}`);
  }
  assert.equal(inspect(post("text/plain", words), { level: "balanced" }).blocking, undefined);
});

Deno.test("inspect() decodes base64 inside JSON inside a parameter", () => {
  const result = inspect({
    method: "GET",
    path: "/",
    query: `id=${encodeURIComponent(JSON.stringify({ id: btoa("1 and 1=2") }))}`,
    headers: [],
  }, { level: "balanced" });
  assert.equal(result.blocking?.class, "sqli");
});

Deno.test("scanJson() reads keys and values with paths, also from a cut document", () => {
  const seen: string[] = [];
  const clean = scanJson('{"a":[1,{"b":"x\\u003c"}],"c":"d', (path, value, key) => {
    seen.push(`${key ? "key" : "value"} ${path}=${value}`);
    return true;
  });
  assert.equal(clean, true);
  assert.deepEqual(seen, ["key a=a", "key a[1].b=b", "value a[1].b=x<", "key c=c", "value c=d"]);
  assert.equal(scanJson("not json at all", () => true), false);
});

Deno.test("readXml() stays linear on deep and broken documents", () => {
  const deep = "<a>".repeat(20_000) + "x" + "</b>".repeat(20_000);
  let n = 0;
  assert.equal(readXml(deep, () => ++n > 0), true);
  assert.equal(n, 1);
  assert.equal(readXml("a < b and c > d", () => true), false);
});

Deno.test("readXml() hands over text nodes as a parser does: comments out, CDATA in", () => {
  const seen: string[] = [];
  const sink = (path: string, value: string) => seen.push(`${path}=${value}`) > 0;
  readXml(
    "<r><q>1' UNI<!---->ON SEL<!-- x -->ECT a</q><c>x<![CDATA[<y>]]>z<?pi?>w</c><d>a<e/>b</d></r>",
    sink,
  );
  // Text on either side of a child element stays two nodes, as in the DOM.
  assert.deepEqual(seen, ["/r/q=1' UNION SELECT a", "/r/c=x<y>zw", "/r/d=a", "/r/d=b"]);
});

Deno.test("readXml() resolves the document's internal entities within bounds", () => {
  const seen: string[] = [];
  const sink = (path: string, value: string) => seen.push(`${path}=${value}`) > 0;
  readXml(
    '<!DOCTYPE r [<!ENTITY u "UNI"><!ENTITY x SYSTEM "file:///etc/passwd">]>' +
      '<r a="&u;ON">&u;ON &amp; &x; &lt;</r>',
    sink,
  );
  // External entities are not fetched; the predefined ones are the normaliser's.
  assert.deepEqual(seen, ["/r@a=UNION", "/r=UNION &amp; &x; &lt;"]);
  // A billion laughs: ten levels of ten references each would be 10^10 characters.
  let dtd = '<!DOCTYPE r [<!ENTITY l0 "lol">';
  for (let i = 1; i < 10; i++) dtd += `<!ENTITY l${i} "${`&l${i - 1};`.repeat(10)}">`;
  let total = 0;
  readXml(`${dtd}]><r>${"&l9;".repeat(1000)}</r>`, (_, v) => (total += v.length) > 0);
  assert.ok(total < 1_000_000, `expanded to ${total} characters`);
});

Deno.test("graphqlStrings() lexes documents and refuses other text", () => {
  assert.deepEqual(graphqlStrings('mutation { add(sku: "A-1", note: """multi\nline""") { id } }'), [
    { name: "sku", value: "A-1" },
    { name: "note", value: "multi\nline" },
  ]);
  assert.equal(graphqlStrings("1' or 1=1--"), undefined);
  assert.equal(graphqlStrings("hello world"), undefined);
});

Deno.test("inspect() still sees a payload past the cap on inputs, in the query and in a body", () => {
  const many = Array.from({ length: 3000 }, (_, i) => `p${i}=v${i}`).join("&");
  const query = inspect({
    method: "GET",
    path: "/",
    query: `${many}&last=1%27%20union%20select%20password%20from%20users--`,
    headers: [],
  }, { level: "balanced" });
  assert.equal(query.blocking?.class, "sqli");
  const items = Array.from({ length: 5000 }, (_, i) => `item ${i}`);
  items.push("<script>alert(1)</script>");
  const body = inspect(post("application/json", JSON.stringify({ items })), { level: "balanced" });
  assert.equal(body.blocking?.class, "xss");
});

Deno.test("inspect() blocks a class named for Fastjson's autotype under @type, not JSON-LD's or protobuf's type", () => {
  const blocked = (body: string) =>
    inspect(post("application/json", body), { level: "balanced" }).blocking?.ruleId;
  assert.equal(blocked('{"@type":"java.lang.AutoCloseable"}'), "deserialization.fastjson_type");
  assert.equal(
    blocked('{"a":{"@type":"ch.qos.logback.core.db.DriverManagerConnectionSource"}}'),
    "deserialization.fastjson_type",
  );
  assert.equal(
    blocked('{"@context":"https://schema.org","@type":"Person","name":"Ada"}'),
    undefined,
  );
  assert.equal(blocked('{"@type":"type.googleapis.com/google.rpc.ErrorInfo"}'), undefined);
  assert.equal(blocked('{"type":"java.lang.String"}'), undefined);
});

Deno.test("inspect() judges a padded base64 token sent without a name, not an empty field", () => {
  const token = "rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA==";
  const get = (query: string) =>
    inspect({ method: "GET", path: "/", query, headers: [] }, { level: "balanced" }).blocking
      ?.ruleId;
  assert.equal(get(token), "deserialization.java_base64");
  assert.equal(
    inspect(post("text/plain", token), { level: "balanced" }).blocking?.ruleId,
    "deserialization.java_base64",
  );
  assert.equal(get("description=&page=2"), undefined);
  assert.equal(get("aGVsbG8gd29ybGQ="), undefined);
});
