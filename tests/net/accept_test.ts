import { assertEquals } from "../_helpers/assert.ts";
import { pickEncoding, wantsJson } from "../../net/accept.ts";

const req = (accept?: string) =>
  new Request("http://x.test/", { headers: accept === undefined ? {} : { accept } });

Deno.test("wantsJson() honours q-values and prefers HTML on a tie or without a header", () => {
  assertEquals(wantsJson(req()), false);
  assertEquals(wantsJson(req("*/*")), false);
  assertEquals(wantsJson(req("text/html,application/xhtml+xml,*/*;q=0.8")), false);
  assertEquals(wantsJson(req("application/json")), true);
  assertEquals(wantsJson(req("application/json, text/html")), false);
  assertEquals(wantsJson(req("application/json, text/html;q=0.5")), true);
  assertEquals(wantsJson(req("text/html;q=0.2, application/json;q=0.9")), true);
  assertEquals(wantsJson(req("application/json;q=0, text/plain")), false);
  assertEquals(wantsJson(req("application/json, */*;q=0.1")), true);
  assertEquals(wantsJson(req("application/json;q=0.5, text/*;q=0.8")), false);
});

Deno.test("wantsJson() answers a repeated or a long Accept value as it did the first time", () => {
  const values = [
    "application/json, text/html;q=0.5",
    "text/html,application/json;q=0.9,*/*;q=0.8",
    "application/json;q=0, text/plain",
    `application/json, ${"text/x-filler;q=0.1, ".repeat(40)}text/html;q=0.5`,
  ];
  const first = values.map((v) => wantsJson(req(v)));
  assertEquals(first, [true, false, false, true]);
  // Past the memo's bound (hundreds of distinct values) every answer is still the parsed one.
  for (let i = 0; i < 600; i++) wantsJson(req(`application/json;q=0.${i % 9 + 1}, text/x-${i}`));
  for (let k = 0; k < 3; k++) assertEquals(values.map((v) => wantsJson(req(v))), first);
});

Deno.test("pickEncoding() never picks a coding the client marks q=0", () => {
  const both = { brotli: true, gzip: true };
  assertEquals(pickEncoding("gzip, br;q=0", both), "gzip");
  assertEquals(pickEncoding("gzip;q=0, br;q=0", both), undefined);
  assertEquals(pickEncoding("gzip, br", both), "br");
  assertEquals(pickEncoding("br;q=0.4, gzip;q=0.8", both), "gzip");
  assertEquals(pickEncoding("x-gzip", both), "gzip");
  assertEquals(pickEncoding("identity", both), undefined);
  assertEquals(pickEncoding("*", both), undefined);
  assertEquals(pickEncoding(null, both), undefined);
  assertEquals(pickEncoding("gzip, br", { brotli: false, gzip: true }), "gzip");
  assertEquals(pickEncoding("br", { brotli: false, gzip: true }), undefined);
});
