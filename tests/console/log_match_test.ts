/**
 * Where the attack log marks a finding's evidence in the request (console/log_match.js): in the
 * value its location names, decoded, whatever the case or spacing, and nowhere when the evidence
 * was masked or lies in what the log does not keep.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { decoded, marked, requestSegments } from "../../console/log_match.js";

type Segment = { text: string; mark: boolean };
const shown = (segments: Segment[]) =>
  segments.map((s) => (s.mark ? `[${s.text}]` : s.text)).join("");
const base = { method: "GET", host: "shop.test", path: "/search", query: "" };
const finding = (location: string, evidence: string) => ({ location, evidence });

Deno.test("requestSegments() marks the evidence in the named query value, decoded", () => {
  const r = requestSegments({
    ...base,
    query: "x=union&q=1%20UNION%20select%20password",
    finding: finding("query:q", "union   select"),
  });
  assertEquals(shown(r.segments), "GET shop.test/search?x=union&q=1 [UNION select] password");
  assertEquals(r.where, "request");
});

Deno.test("requestSegments() marks a parameter's name, the path, or the line when the name is nested", () => {
  const name = requestSegments({
    ...base,
    query: "__proto__%5Bx%5D=1",
    finding: finding("query_name:__proto__[x]", "__proto__"),
  });
  assertEquals(shown(name.segments), "GET shop.test/search?[__proto__][x]=1");
  const path = requestSegments({
    ...base,
    path: "/files/..%2F..%2Fetc/passwd",
    finding: finding("path", "../../etc"),
  });
  assertEquals(shown(path.segments), "GET shop.test/files/[../../etc]/passwd");
  const nested = requestSegments({
    ...base,
    query: "a=%7B%22b%22%3A%22%3Cscript%3E%22%7D",
    finding: finding("json:a.b", "<script>"),
  });
  assertEquals(shown(nested.segments), 'GET shop.test/search?a={"b":"[<script>]"}');
});

Deno.test("requestSegments() marks nothing for a header, a body, or masked evidence", () => {
  const header = requestSegments({ ...base, finding: finding("header:user-agent", "sqlmap") });
  assertEquals([shown(header.segments), header.where], [
    "GET shop.test/search",
    "header:user-agent",
  ]);
  const body = requestSegments({ ...base, finding: finding("json:user.name", "' or 1=1") });
  assertEquals([shown(body.segments), body.where], ["GET shop.test/search", ""]);
  const masked = requestSegments({
    ...base,
    query: "token=abc",
    finding: finding("query:token", "[masked: 3 characters]"),
  });
  assertEquals(masked.where, "");
  const none = requestSegments({ ...base, query: "a=1", finding: null });
  assertEquals([shown(none.segments), none.where], ["GET shop.test/search?a=1", ""]);
});

Deno.test("marked() takes the evidence as text, never as a pattern", () => {
  assertEquals(shown(marked("a (b) .* c", "(b) .*")), "a [(b) .*] c");
  assertEquals(shown(marked("abc", "a.c…")), "abc", "a cut evidence's ellipsis is not text");
  assertEquals(decoded("%E6%B5%8B%zz+x", true), "测%zz x");
});
