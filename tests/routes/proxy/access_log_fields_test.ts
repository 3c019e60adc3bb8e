/**
 * Hostile request fields through the own HTTP/1.1 server into the access log, as rows go now
 * (issue 13: serialised to row text at push, inserted from the text 16 rows a statement): no
 * field can split a row, forge another record's fields or trace id, or lose its neighbours; what
 * is stored is what was sent, with secrets masked; a lookup right after the answer finds it.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { bytes } from "../../_helpers/raw_socket.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { addSite } from "../../_helpers/protection.ts";

const latin1 = (b: Uint8Array) => {
  let s = "";
  for (const c of b) s += String.fromCharCode(c);
  return s;
};

Deno.test("request fields with quotes, backslashes, line separators and bytes above 0x7f are stored as sent, one row each; secrets masked", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const forged = '","trace_id":"forged0000000000000000000000000000","x":"';
  // U+2028 as its UTF-8 bytes, a latin1 é and ÿ, a quote, a backslash, a JSON fragment.
  const uaBytes = bytes(`ua"\\${forged}`, new Uint8Array([0xe2, 0x80, 0xa8, 0xe9, 0xff]), "}");
  const requests = [
    bytes(
      "GET /a%0Ab%22c%5C%E2%80%A8?token=s3cr3tvalue&q=%0d%0a1 HTTP/1.1\r\nHost: shop.test\r\n",
      "User-Agent: ",
      uaBytes,
      "\r\n\r\n",
    ),
    bytes(
      `GET /search?q=1%27%20OR%20%271%27%3D%271%22%5C%0A${encodeURIComponent(forged)} HTTP/1.1\r\n`,
      "Host: shop.test\r\nAuthorization: Bearer topsecretbearer\r\n\r\n",
    ),
    bytes("GET /plain HTTP/1.1\r\nHost: shop.test\r\n\r\n"),
  ];
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(s.dataUrl).port) });
  const traces: string[] = [];
  const statuses: number[] = [];
  try {
    let buf = "";
    const chunk = new Uint8Array(65536);
    for (const r of requests) {
      await conn.write(r);
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        const len = end < 0 ? null : /\r\ncontent-length: (\d+)/i.exec(buf.slice(0, end));
        if (end >= 0 && len && buf.length >= end + 4 + Number(len[1])) {
          statuses.push(Number(buf.slice(9, 12)));
          traces.push(/\r\nx-waf-trace-id: (\w+)/i.exec(buf.slice(0, end))![1]!);
          buf = buf.slice(end + 4 + Number(len[1]));
          break;
        }
        const n = await conn.read(chunk);
        if (n === null) throw new Error("closed");
        buf += latin1(chunk.subarray(0, n));
      }
    }
  } finally {
    conn.close();
  }
  // The first may be blocked too (its query holds an encoded CRLF): either way it is logged.
  ok(statuses[0] === 200 || statuses[0] === 403, `first: ${statuses[0]}`);
  ok(statuses[1] === 403, `the injection is blocked (${statuses[1]})`);
  assertEquals(statuses[2], 200);
  // Looked up right after the answers: each found, with its own trace id.
  const got = await Promise.all(traces.map((t) => s.dataPlane.accessLog.get(t)));
  for (let i = 0; i < 3; i++) {
    ok(got[i], `record ${i} found`);
    assertEquals(got[i]!.trace_id, traces[i]);
    assertEquals(JSON.parse(got[i]!.record).trace_id, traces[i]);
  }
  const first = JSON.parse(got[0]!.record);
  assertEquals(first.user_agent, latin1(uaBytes));
  assertEquals(first.path, got[0]!.path);
  ok(first.path.startsWith("/a"), first.path);
  ok(!JSON.stringify(first).includes("s3cr3tvalue"), "a secret query value is masked");
  assertEquals(first.query, "token=[masked]&q=%0d%0a1");
  const second = JSON.parse(got[1]!.record);
  assertEquals(got[1]!.action, "block");
  ok(second.finding !== null, "the finding is stored");
  ok(!got[1]!.record.includes("topsecretbearer"), "the bearer token is never stored");
  assertEquals(JSON.parse(got[2]!.record).path, "/plain");
  // Exactly these three rows: nothing split, nothing forged.
  const rows = await s.dataPlane.accessLog.list({ limit: 100 });
  assertEquals(rows.map((r) => r.trace_id).sort(), traces.slice().sort());
  ok(rows.every((r) => !r.trace_id.startsWith("forged")));
});
