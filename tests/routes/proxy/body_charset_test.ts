/**
 * Request bodies in a declared charset, through the real data plane (issue #37, item 7): an
 * EBCDIC or UTF-16 attack is judged as the upstream reads it and never reaches it; a text body
 * in a charset the engine cannot decode is refused with 400 and recorded.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import { startTestServer, type TestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { byteUpstream } from "../../_helpers/byte_upstream.ts";
import IBM037 from "../../../engine/charset_tables/ibm037.json" with { type: "json" };

const ATTACK = "q=1' UNION SELECT username,password FROM users--&page=1";
const BENIGN = "q=winter jacket&size=M";

/** Text to IBM037 bytes, from the table the engine decodes with. */
function ibm037(text: string): Uint8Array {
  const codes = IBM037.table.join(" ").split(" ").map((h) => parseInt(h, 16));
  return Uint8Array.from(text, (c) => codes.indexOf(c.charCodeAt(0)));
}

function utf16be(text: string): Uint8Array {
  return Uint8Array.from(Array.from(text).flatMap((c) => [0, c.charCodeAt(0)]));
}

async function post(s: TestServer, body: Uint8Array, type: string) {
  const r = await hostFetch(`${s.dataUrl}/api/search`, "shop.test", {
    method: "POST",
    body: body as BodyInit,
    headers: { "content-type": type },
  });
  const text = await r.text();
  return { status: r.status, text, trace: r.headers.get("x-waf-trace-id") ?? "" };
}

async function recordOf(s: TestServer, trace: string) {
  const row = await s.dataPlane.accessLog.get(trace);
  if (!row) throw new Error(`no access-log record for ${trace}`);
  return JSON.parse(row.record) as {
    action: string;
    status: number;
    finding: { class: string; rule: string; location: string } | null;
  };
}

Deno.test("EBCDIC and UTF-16 form attacks are judged as the upstream reads them", async () => {
  await using up = byteUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const form = "application/x-www-form-urlencoded";
  for (
    const [label, body] of [
      ["ibm037", ibm037(ATTACK)],
      ["IBM500", ibm037(ATTACK)],
      ["cp875", ibm037(ATTACK)],
      ["ibm01140", ibm037(ATTACK)],
      ["utf-16", utf16be(ATTACK)],
    ] as const
  ) {
    const r = await post(s, body, `${form}; charset=${label}`);
    assertEquals(r.status, 403, label);
    assertEquals((await recordOf(s, r.trace)).finding?.class, "sqli", label);
  }
  assertEquals(up.seen.length, 0);
  const benign = ibm037(BENIGN);
  const r = await post(s, benign, `${form}; charset=ibm037`);
  assertEquals(r.status, 200);
  assertEquals(up.seen.at(-1), benign);
});

Deno.test("a text body in a charset the engine cannot decode is refused with 400", async () => {
  await using up = byteUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const r = await post(s, ibm037(ATTACK), "application/x-www-form-urlencoded; charset=ibm1047");
  assertEquals(r.status, 400);
  const record = await recordOf(s, r.trace);
  assertEquals(record.action, "block");
  assertEquals(record.finding?.rule, "protocol.unsupported_charset");
  assertEquals(record.finding?.location, "header:content-type");
  // Two charsets that disagree are as unreadable; a multipart body's own charset is not read.
  const two = await post(s, ibm037(BENIGN), "text/plain; charset=utf-8; charset=ibm037");
  assertEquals(two.status, 400);
  const multipart = new TextEncoder().encode(
    '--B\r\nContent-Disposition: form-data; name="q"\r\n\r\nwinter jacket\r\n--B--\r\n',
  );
  const ok = await post(s, multipart, "multipart/form-data; boundary=B; charset=x-unknown");
  assertEquals(ok.status, 200);
  assertEquals(up.seen.length, 1);
});

Deno.test("at low and on a monitored site an unknown charset is logged, not refused", async () => {
  await using up = byteUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url], level: "low" }), SYSTEM);
  s.dataPlane.sites.create(
    siteInput({ name: "monitored", hosts: ["watch.test"], upstreams: [up.url], mode: "monitor" }),
    SYSTEM,
  );
  const r = await post(s, new TextEncoder().encode(BENIGN), "text/plain; charset=x-unknown");
  assertEquals(r.status, 200);
  assertEquals((await recordOf(s, r.trace)).finding?.rule, "protocol.unsupported_charset");
  const w = await hostFetch(`${s.dataUrl}/api/search`, "watch.test", {
    method: "POST",
    body: BENIGN,
    headers: { "content-type": "text/plain; charset=x-unknown" },
  });
  await w.body?.cancel();
  assertEquals(w.status, 200);
  const record = await recordOf(s, w.headers.get("x-waf-trace-id") ?? "");
  assertEquals(record.action, "log");
  assertEquals(up.seen.length, 2);
});
