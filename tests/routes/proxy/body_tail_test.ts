/**
 * A body past the prefix the engine reads whole (issue #37, item 6), through the real data plane
 * with a raw recording upstream as the oracle: an attack behind 1 MiB of padding, plain, chunked
 * or in 1 KB of gzip, is judged as the body streams, and the upstream never receives the whole
 * request; benign large bodies still stream through byte for byte; past what is judged, the
 * site's `oversize_action` decides.
 */
import * as zlib from "node:zlib";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import { startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startTestServer, type TestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { byteUpstream, chunked } from "../../_helpers/byte_upstream.ts";
import { TailJudge } from "../../../routes/proxy/body_tail.ts";

const FORM = "application/x-www-form-urlencoded";
const ATTACK = "q=1'%20UNION%20SELECT%20username,password%20FROM%20users--";
const PADDED = `pad=${"a".repeat(1024 * 1024)}&${ATTACK}`;
const text = (s: string) => new TextEncoder().encode(s);
const gzip = (b: Uint8Array) => new Uint8Array(zlib.gzipSync(b, { level: 9 }));

/** A raw upstream answering 200 to every whole request it reads. */
function rawUpstream() {
  return startRawUpstream(async (peer) => {
    while ((await peer.readRequest()) !== null) {
      await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    }
  });
}

async function post(
  s: TestServer,
  body: BodyInit,
  headers: Record<string, string>,
  host = "shop.test",
) {
  const r = await hostFetch(`${s.dataUrl}/submit`, host, { method: "POST", body, headers });
  await r.body?.cancel();
  const row = await s.dataPlane.accessLog.get(r.headers.get("x-waf-trace-id") ?? "");
  const record = JSON.parse(row!.record) as {
    action: string;
    finding: { rule: string; location: string } | null;
    chain: Array<{ check: string; result: string; detail?: string }>;
  };
  return { status: r.status, record };
}

const tailEntry = (r: { record: { chain: Array<{ check: string; result: string }> } }) =>
  r.record.chain.find((e) => e.check === "body_tail")?.result;

Deno.test("an attack behind 1 MiB of padding is blocked and never reaches the upstream whole", async () => {
  await using up = rawUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const declared = await post(s, PADDED, { "content-type": FORM });
  assertEquals(declared.status, 403);
  assertEquals(declared.record.finding?.rule, "sqli.union");
  assertEquals(declared.record.finding?.location, "form:q");
  assertEquals(tailEntry(declared), "block");
  const streamed = await post(s, chunked(text(PADDED), 16384), { "content-type": FORM });
  assertEquals(streamed.status, 403);
  assertEquals(streamed.record.finding?.rule, "sqli.union");
  // The compressed variant: about a kilobyte on the wire, buffered, decoded past the prefix.
  const small = gzip(text(PADDED));
  ok(small.length < 4096, `${small.length} bytes of gzip`);
  const zipped = await post(s, small, { "content-type": FORM, "content-encoding": "gzip" });
  assertEquals(zipped.status, 403);
  assertEquals(zipped.record.finding?.rule, "sqli.union");
  // The oracle: not one whole request reached the upstream.
  assertEquals(up.requests.length, 0);
});

Deno.test("the tail is judged in every body shape: JSON, XML, multipart, text", async () => {
  await using up = rawUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(
    siteInput({ upstreams: [up.url], inspect_body_bytes: 64 * 1024 }),
    SYSTEM,
  );
  const pad = "a".repeat(300_000);
  const value = "1' UNION SELECT username,password FROM users--";
  const multipart = `--B\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\n` +
    `Content-Type: application/octet-stream\r\n\r\n${"\u0001\u0002".repeat(150_000)}\r\n` +
    `--B\r\nContent-Disposition: form-data; name="q"\r\n\r\n${value}\r\n--B--\r\n`;
  for (
    const [type, body] of [
      ["application/json", JSON.stringify({ pad, user: { q: value } })],
      [
        "application/xml",
        `<r><pad>${pad}</pad><q>1' UNI<!---->ON SELECT password FROM t--</q></r>`,
      ],
      ["multipart/form-data; boundary=B", multipart],
      ["text/plain", `${pad} ${value}`],
    ]
  ) {
    const r = await post(s, body!, { "content-type": type! });
    assertEquals(r.status, 403, type);
    assertEquals(r.record.finding?.rule, "sqli.union", type);
  }
  assertEquals(up.requests.length, 0);
});

Deno.test("benign large bodies stream through byte for byte, judged to their end", async () => {
  await using up = byteUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const form = Array.from({ length: 90_000 }, (_, i) => `item${i}=cats+%26+dogs+or+1+or+2`)
    .join("&");
  const json = JSON.stringify(
    Array.from({ length: 40_000 }, (_, i) => ({ id: i, note: "Tom & Jerry; select one or two" })),
  );
  const file = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7919) % 256);
  const head = text(
    `--B\r\nContent-Disposition: form-data; name="f"; filename="photo.jpg"\r\n` +
      `Content-Type: image/jpeg\r\n\r\n`,
  );
  const multipart = new Uint8Array([...head, ...file, ...text("\r\n--B--\r\n")]);
  for (
    const [type, body] of [
      [FORM, text(form)],
      ["application/json", text(json)],
      ["multipart/form-data; boundary=B", multipart],
    ] as const
  ) {
    ok(body.length > 2 * 1024 * 1024);
    const r = await post(s, body, { "content-type": type });
    assertEquals(r.status, 200, type);
    assertEquals(tailEntry(r), "pass", type);
    assertEquals(up.seen.at(-1), body, type);
  }
});

Deno.test("a body still streams: the upstream has the first megabytes before the client sent the rest", async () => {
  await using up = rawUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  let release!: () => void;
  const held = new Promise<void>((r) => release = r);
  const piece = text(`${"a".repeat(65536)}`);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (sent === 48) await held;
      if (sent === 64) return c.close();
      c.enqueue(sent === 0 ? text("pad=") : piece);
      sent++;
    },
  });
  const answer = hostFetch(`${s.dataUrl}/submit`, "shop.test", {
    method: "POST",
    body,
    headers: { "content-type": FORM },
  });
  const t0 = Date.now();
  while ((up.received[0]?.length ?? 0) < 2 * 1024 * 1024 && Date.now() - t0 < 20_000) {
    await new Promise((r) => setTimeout(r, 20));
  }
  ok((up.received[0]?.length ?? 0) >= 2 * 1024 * 1024, "upstream got the first 2 MiB");
  assertEquals(up.requests.length, 0);
  release();
  const r = await answer;
  await r.body?.cancel();
  assertEquals(r.status, 200);
});

Deno.test("a monitored site passes an attack past the prefix and logs it", async () => {
  await using up = rawUpstream();
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url], mode: "monitor" }), SYSTEM);
  const r = await post(s, PADDED, { "content-type": FORM });
  assertEquals(r.status, 200);
  assertEquals(r.record.action, "log");
  assertEquals(r.record.finding?.rule, "sqli.union");
  assertEquals(tailEntry(r), "log");
});

Deno.test("past what is judged, oversize_action decides: a decoded body is blocked by default at balanced", async () => {
  await using up = byteUpstream();
  await using s = await startTestServer();
  // 3 MiB decoded from a few kilobytes of gzip, on sites that accept 2 MiB.
  const body = gzip(text(`note=${"winter jacket ".repeat(230_000)}`));
  const headers = { "content-type": FORM, "content-encoding": "gzip" };
  const cases = [
    ["default.test", { level: "balanced" }, 413, "oversize"],
    ["strict.test", { level: "strict" }, 403, undefined],
    ["low.test", { level: "low" }, 200, "oversize"],
    ["log.test", { oversize_action: "log" }, 200, "oversize"],
    ["pass.test", { oversize_action: "pass" }, 200, "oversize"],
    ["block.test", { oversize_action: "block", level: "low" }, 413, "oversize"],
  ] as const;
  for (const [host, settings] of cases) {
    s.dataPlane.sites.create(
      siteInput({
        name: host,
        hosts: [host],
        upstreams: [up.url],
        max_body_bytes: 2 << 20,
        ...settings,
      }),
      SYSTEM,
    );
  }
  for (const [host, , status, entry] of cases) {
    const r = await post(s, body, headers, host);
    assertEquals(r.status, status, host);
    if (entry !== undefined) assertEquals(tailEntry(r), entry, host);
    const rule = r.record.finding?.rule;
    if (host === "pass.test") assertEquals(rule, "protocol.padded_body", host);
    else if (host === "strict.test") assertEquals(rule, "protocol.padded_body", host);
    else assertEquals(rule, "protocol.oversize_body", host);
  }
  // Low, log and pass reached the upstream, with the bytes sent.
  assertEquals(up.seen, [body, body, body]);
});

Deno.test("TailJudge applies oversize_action to a plain body past its limit", async () => {
  const judge = (oversize: "block" | "log" | "pass") =>
    new TailJudge({
      request: { contentType: "text/plain", headers: [] },
      inspect: { level: "balanced" },
      judged: 0,
      limit: 200_000,
      oversize,
      enforce: true,
    });
  const body = text("plain words ".repeat(30_000));
  const outcomes: Array<[boolean, string | undefined, string | undefined]> = [];
  for (const action of ["block", "log", "pass"] as const) {
    const j = judge(action);
    await j.write(body);
    await j.end();
    assertEquals(j.oversized, true);
    outcomes.push([j.stop, j.blocking?.ruleId, j.logged?.ruleId]);
  }
  assertEquals(outcomes, [
    [true, "protocol.oversize_body", undefined],
    [false, undefined, "protocol.oversize_body"],
    [false, undefined, undefined],
  ]);
  // An attack within the limit is judged; one past it is the oversize action's.
  const within = judge("pass");
  await within.write(text(`${"a ".repeat(50_000)}1' union select password from users--`));
  await within.end();
  assertEquals(within.blocking?.ruleId, "sqli.union");
});
