/**
 * Request bodies with a Content-Encoding, through the real data plane: judged decoded, forwarded
 * as sent; a bomb costs the inspection limit; what does not decode is a protocol finding.
 */
import * as zlib from "node:zlib";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import { brotliWindowBits } from "../../../routes/proxy/body_encoding.ts";
import { apiFor } from "../../_helpers/protection.ts";
import { denoJson } from "../../_helpers/process.ts";
import { startTestServer, type TestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { chunked } from "../../_helpers/byte_upstream.ts";

const ATTACK_JSON = JSON.stringify({ q: "1 union select password from users" });
const BENIGN_JSON = JSON.stringify({ q: "blue running shoes", page: 2 });
const ATTACK_FORM = "q=1%27%20union%20select%20password%20from%20users--&x=1";
const BENIGN_FORM = "q=blue+running+shoes&page=2";

const text = (s: string) => new TextEncoder().encode(s);
/** node:zlib's answers as plain Uint8Arrays (a Buffer never deep-equals one). */
const plain = (b: Uint8Array) => new Uint8Array(b.buffer, b.byteOffset, b.length);
const gzipSync = (b: Uint8Array, o: zlib.ZlibOptions = {}) => plain(zlib.gzipSync(b, o));
const deflateSync = (b: Uint8Array) => plain(zlib.deflateSync(b));
const deflateRawSync = (b: Uint8Array) => plain(zlib.deflateRawSync(b));
const brotliCompressSync = (b: Uint8Array) => plain(zlib.brotliCompressSync(b));

const CODINGS: ReadonlyArray<readonly [string, (b: Uint8Array) => Uint8Array]> = [
  ["gzip", (b) => gzipSync(b)],
  ["x-gzip", (b) => gzipSync(b)],
  ["deflate", (b) => deflateSync(b)],
  ["deflate", (b) => deflateRawSync(b)],
  ["br", (b) => brotliCompressSync(b)],
];

/** An upstream that keeps every request body's exact bytes and Content-Encoding. */
function byteUpstream() {
  const seen: Array<{ encoding: string | null; bytes: Uint8Array }> = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const bytes = new Uint8Array(await req.arrayBuffer());
    seen.push({ encoding: req.headers.get("content-encoding"), bytes });
    return new Response("ok");
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function setup(overrides: Record<string, unknown> = {}) {
  const up = byteUpstream();
  const s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url], ...overrides }), SYSTEM);
  return { up, s };
}

async function post(
  s: TestServer,
  body: BodyInit | Uint8Array,
  headers: Record<string, string>,
): Promise<{ status: number; trace: string }> {
  const r = await hostFetch(`${s.dataUrl}/api/search`, "shop.test", {
    method: "POST",
    body: body as BodyInit,
    headers,
  });
  await r.body?.cancel();
  return { status: r.status, trace: r.headers.get("x-waf-trace-id") ?? "" };
}

async function findingOf(s: TestServer, trace: string) {
  const row = await s.dataPlane.accessLog.get(trace);
  if (!row) throw new Error(`no access-log record for ${trace}`);
  return JSON.parse(row.record).finding as { class: string; rule: string; location: string };
}

Deno.test("gzip, x-gzip, deflate (zlib and raw) and br JSON and form attacks are blocked", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  for (const [coding, encode] of CODINGS) {
    for (
      const [type, body] of [
        ["application/json", ATTACK_JSON],
        ["application/x-www-form-urlencoded", ATTACK_FORM],
      ]
    ) {
      const r = await post(s, encode(text(body!)), {
        "content-type": type!,
        "content-encoding": coding,
      });
      assertEquals(r.status, 403, `${coding} ${type}`);
      assertEquals((await findingOf(s, r.trace)).class, "sqli", `${coding} ${type}`);
    }
  }
  assertEquals(up.seen.length, 0);
});

Deno.test("benign encoded bodies pass and the upstream receives the exact bytes sent", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  for (const [coding, encode] of CODINGS) {
    for (
      const [type, body] of [
        ["application/json", BENIGN_JSON],
        ["application/x-www-form-urlencoded", BENIGN_FORM],
      ]
    ) {
      const sent = encode(text(body!));
      const r = await post(s, sent, { "content-type": type!, "content-encoding": coding });
      assertEquals(r.status, 200, `${coding} ${type}`);
      const got = up.seen.at(-1)!;
      assertEquals(got.encoding, coding);
      assertEquals(got.bytes, sent);
    }
  }
});

Deno.test("case and spacing of the coding, identity, and a GET without a body", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  const json = { "content-type": "application/json" };
  const gz = gzipSync(text(ATTACK_JSON));
  assertEquals((await post(s, gz, { ...json, "content-encoding": "GZIP" })).status, 403);
  assertEquals(
    (await post(s, gz, { ...json, "content-encoding": " gzip , identity" })).status,
    403,
  );
  assertEquals(
    (await post(s, ATTACK_JSON, { ...json, "content-encoding": "identity" })).status,
    403,
  );
  assertEquals(
    (await post(s, BENIGN_JSON, { ...json, "content-encoding": "Identity" })).status,
    200,
  );
  assertEquals(up.seen.at(-1)!.bytes, text(BENIGN_JSON));
  const get = await hostFetch(`${s.dataUrl}/api/search?q=shoes`, "shop.test", {
    headers: { "content-encoding": "gzip" },
  });
  await get.body?.cancel();
  assertEquals(get.status, 200);
  // An empty gzip stream is an empty body.
  assertEquals(
    (await post(s, gzipSync(new Uint8Array(0)), { ...json, "content-encoding": "gzip" })).status,
    200,
  );
});

Deno.test("corrupt data, stacked and unknown codings are blocked at balanced, logged at low", async () => {
  const gz = gzipSync(text(BENIGN_JSON));
  const cases: ReadonlyArray<readonly [string, Uint8Array, string]> = [
    ["gzip", text(BENIGN_JSON), "protocol.undecodable_body"],
    ["gzip", new Uint8Array([...gz, 1, 2, 3]), "protocol.undecodable_body"],
    ["deflate", new Uint8Array([0x78, 0x9c, 0xff, 0xff, 0xff, 0xff]), "protocol.undecodable_body"],
    ["gzip, gzip", gzipSync(gz), "protocol.stacked_encoding"],
    ["compress", text(BENIGN_JSON), "protocol.unsupported_encoding"],
    ["zstd", text(BENIGN_JSON), "protocol.unsupported_encoding"],
    // A Brotli stream asking for a 16 MiB window: its decoder would allocate it.
    ["br", brotliWith(text(BENIGN_JSON), 24), "protocol.unsupported_encoding"],
  ];
  {
    const { up, s } = await setup();
    await using _u = up;
    await using _s = s;
    for (const [coding, body, rule] of cases) {
      const r = await post(s, body, {
        "content-type": "application/json",
        "content-encoding": coding,
      });
      assertEquals(r.status, 403, coding);
      const f = await findingOf(s, r.trace);
      assertEquals([f.class, f.rule, f.location], [
        "request-smuggling",
        rule,
        "header:content-encoding",
      ]);
    }
    assertEquals(up.seen.length, 0);
  }
  const { up, s } = await setup({ level: "low" });
  await using _u = up;
  await using _s = s;
  for (const [coding, body, rule] of cases) {
    const r = await post(s, body, {
      "content-type": "application/json",
      "content-encoding": coding,
    });
    assertEquals(r.status, 200, coding);
    assertEquals((await findingOf(s, r.trace)).rule, rule);
    assertEquals(up.seen.at(-1)!.bytes, body);
  }
  // At low the raw bytes are still judged.
  const raw = await post(s, ATTACK_JSON, {
    "content-type": "application/json",
    "content-encoding": "zstd",
  });
  assertEquals(raw.status, 403);
});

Deno.test("a chunked gzip body longer than the inspected prefix: its decoded prefix is judged", async () => {
  const { up, s } = await setup({ inspect_body_bytes: 4096 });
  await using _u = up;
  await using _s = s;
  const headers = { "content-type": "application/json", "content-encoding": "gzip" };
  // Random text does not compress: the compressed body is far longer than the prefix.
  const noise = Array.from({ length: 40_000 }, () => Math.random().toString(36).slice(2)).join("");
  const attack = gzipSync(text(`{"q":"1 union select password from users","n":"${noise}"}`));
  ok(attack.length > 100_000);
  assertEquals((await post(s, chunked(attack, 8192), headers)).status, 403);
  const benign = gzipSync(text(`{"q":"blue shoes","n":"${noise}"}`));
  const passed = await post(s, chunked(benign, 8192), headers);
  assertEquals(
    passed.status,
    200,
    // Failed once in CI at 403 (the compressed bytes judged as text, docs/detection.md): the
    // record says which check refused it.
    (await s.dataPlane.accessLog.get(passed.trace))?.record.slice(0, 2000),
  );
  assertEquals(up.seen.at(-1)!.bytes, benign);
});

/** tests/_helpers/gzip_bomb_memory.ts in a process of its own: its statuses and peak growth. */
function bombsInOwnProcess(): Promise<{ statuses: number[]; grown: number }> {
  const script = new URL("../../_helpers/gzip_bomb_memory.ts", import.meta.url).pathname;
  return denoJson(["run", "-A", script]);
}

Deno.test("a gzip bomb (1 GiB of zeros in about 1 MB) is decoded only up to the inspection limit", async () => {
  const { up, s } = await setup({ max_body_bytes: 8 * 1024 * 1024, level: "strict" });
  await using _u = up;
  await using _s = s;
  // 64 gzip members of 16 MiB of zeros each: 1 GiB decoded (gzip decoders read every member).
  const member = gzipSync(new Uint8Array(16 * 1024 * 1024), { level: 9 });
  const bomb = new Uint8Array(member.length * 64);
  for (let i = 0; i < 64; i++) bomb.set(member, i * member.length);
  ok(bomb.length < 2 * 1024 * 1024, `bomb is ${bomb.length} bytes`);
  const headers = { "content-type": "application/octet-stream", "content-encoding": "gzip" };
  for (let i = 0; i < 4; i++) {
    // A megabyte decoded from a kilobyte, and more to come: padding (blocked at strict).
    const r = await post(s, bomb, headers);
    assertEquals(r.status, 403);
    assertEquals((await findingOf(s, r.trace)).rule, "protocol.padded_body");
  }
  assertEquals(up.seen.length, 0);
  // The memory they cost, measured in a process that serves only them (this one runs other test
  // files beside this one, which move its memory by tens of MB).
  const { statuses, grown } = await bombsInOwnProcess();
  assertEquals(statuses, [403, 403, 403, 403]);
  ok(grown < 256 * 1024 * 1024, `peak memory grew by ${grown >> 20} MiB`);
  // An attack before the zeros is in the decoded prefix.
  const attack = new Uint8Array([...gzipSync(text(ATTACK_JSON)), ...bomb]);
  const r = await post(s, attack, {
    "content-type": "application/json",
    "content-encoding": "gzip",
  });
  assertEquals(r.status, 403);
});

Deno.test("a compressed body padded past the inspected prefix is more than can be judged: 413 at balanced, padding at strict, logged at low", async () => {
  const attack = `"q":"1 union select password from users"}`;
  // 2 MiB of spaces: the decoded prefix (1 MiB) is all padding, the attack follows it.
  const padded = `{"pad":"${" ".repeat(2 * 1024 * 1024)}",${attack}`;
  const plainPadding = `{"pad":"${" ".repeat(2 * 1024 * 1024)}","q":"blue shoes"}`;
  const headers = { "content-type": "application/json", "content-encoding": "gzip" };
  const expected: Record<string, [number, string]> = {
    // The prefix already blocks it as padding.
    strict: [403, "protocol.padded_body"],
    // Past the prefix, text is judged up to 100 bytes per byte sent; this is far more, and a
    // decoded body past what is judged is blocked by default at balanced, logged at low.
    balanced: [413, "protocol.oversize_body"],
    low: [200, "protocol.oversize_body"],
  };
  const bodies = CODINGS.map(([coding, encode]) => {
    const body = encode(text(padded));
    ok(body.length < 20_000, `${coding}: ${body.length} bytes`);
    return [coding, [body, encode(text(plainPadding))]] as const;
  });
  // One server a level, each coding's bodies sent to it in turn.
  for (const level of ["balanced", "strict", "low"]) {
    const { up, s } = await setup({ level });
    await using _u = up;
    await using _s = s;
    for (const [coding, sent] of bodies) {
      const forwarded = up.seen.length;
      for (const body of sent) {
        const r = await post(s, body, { ...headers, "content-encoding": coding });
        assertEquals(r.status, expected[level]![0], `${coding} at ${level}`);
        const f = await findingOf(s, r.trace);
        assertEquals([f.class, f.rule], ["request-smuggling", expected[level]![1]]);
      }
      assertEquals(up.seen.length - forwarded, level === "low" ? 2 : 0, `${coding} at ${level}`);
    }
  }
  const { up, s } = await setup({ inspect_body_bytes: 64 * 1024 });
  await using _u = up;
  await using _s = s;
  // Real data past the prefix is no padding: 200 KB of JSON records (about 8:1 in gzip).
  const records = JSON.stringify(
    Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `user${(i * 7919) % 10007}` })),
  );
  ok(records.length > 64 * 1024);
  assertEquals((await post(s, gzipSync(text(records)), headers)).status, 200);
  // A plain body past the prefix is judged to its end as it streams; the access log says so.
  const r = await post(s, text(`{"pad":"${" ".repeat(100_000)}",${attack}`), {
    "content-type": "application/json",
  });
  assertEquals(r.status, 403);
  const rec = JSON.parse((await s.dataPlane.accessLog.get(r.trace))!.record);
  assertEquals(rec.finding.rule, "sqli.union");
  ok(
    rec.chain.some((e: { check: string; result: string }) =>
      e.check === "body_tail" && e.result === "block"
    ),
  );
  const benign = await post(s, text(`{"pad":"${" ".repeat(100_000)}","q":"blue shoes"}`), {
    "content-type": "application/json",
  });
  assertEquals(benign.status, 200);
  const passed = JSON.parse((await s.dataPlane.accessLog.get(benign.trace))!.record);
  ok(
    passed.chain.some((e: { check: string; result: string }) =>
      e.check === "body_tail" && e.result === "pass"
    ),
  );
});

Deno.test("API schema validation judges a gzip JSON body decoded, and never a decoded prefix cut at the inspection limit", async () => {
  const { up, s } = await setup({ mode: "block", inspect_body_bytes: 4096 });
  await using _u = up;
  await using _s = s;
  const put = await apiFor(s)("PUT", "/api/apisec/config", {
    validation: {
      enabled: true,
      schemas: [{
        id: "search",
        method: "POST",
        path_pattern: "^/api/search$",
        body_schema: { type: "object", required: ["q"] },
        enabled: true,
      }],
    },
  });
  assertEquals(put.status, 200);
  const headers = { "content-type": "application/json", "content-encoding": "gzip" };
  const plainMissing = await post(s, JSON.stringify({ page: 2 }), {
    "content-type": "application/json",
  });
  assertEquals(plainMissing.status, 403);
  // Whole once decoded: the schema sees the JSON, not the gzip bytes (which are longer here).
  assertEquals((await post(s, gzipSync(text(BENIGN_JSON)), headers)).status, 200);
  const missing = await post(s, gzipSync(text(JSON.stringify({ page: 2 }))), headers);
  assertEquals(missing.status, 403);
  assertEquals((await findingOf(s, missing.trace)).class, "api_schema");
  // 20 KB of JSON compresses to under the 4 KiB limit, but decodes past it: the cut prefix is not
  // valid JSON, and the body is valid. (Binary digits compress about 7:1, no padding.)
  const digits = Array.from({ length: 20_000 }, () => (Math.random() < 0.5 ? "0" : "1")).join("");
  const long = gzipSync(text(JSON.stringify({ q: "shoes", items: digits })));
  ok(long.length < 4096, `compressed to ${long.length}`);
  const r = await post(s, long, headers);
  assertEquals(r.status, 200);
  assertEquals(up.seen.at(-1)!.bytes, long);
});

Deno.test("a gzipped multipart body is parsed as multipart; an empty body or a HEAD with a coding passes", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  const multipart = (value: string) =>
    text(
      `--b0undary\r\ncontent-disposition: form-data; name="q"\r\n\r\n${value}\r\n--b0undary--\r\n`,
    );
  const headers = {
    "content-type": "multipart/form-data; boundary=b0undary",
    "content-encoding": "gzip",
  };
  const attack = await post(
    s,
    gzipSync(multipart("1' union select password from users--")),
    headers,
  );
  assertEquals(attack.status, 403);
  const benign = gzipSync(multipart("blue running shoes"));
  assertEquals((await post(s, benign, headers)).status, 200);
  assertEquals(up.seen.at(-1)!.bytes, benign);
  for (const coding of ["gzip", "br", "zstd", ""]) {
    const empty = await post(s, new Uint8Array(0), { "content-encoding": coding });
    assertEquals(empty.status, 200, `empty body, ${coding}`);
    const head = await hostFetch(`${s.dataUrl}/api/search`, "shop.test", {
      method: "HEAD",
      headers: { "content-encoding": coding },
    });
    assertEquals(head.status, 200, `HEAD, ${coding}`);
  }
});

function brotliWith(bytes: Uint8Array, lgwin: number): Uint8Array {
  return new Uint8Array(
    zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_LGWIN]: lgwin } }),
  );
}

Deno.test("a Brotli stream's declared window is read from its first bits, as the encoder wrote it", () => {
  const body = text(BENIGN_JSON.repeat(50));
  for (let lgwin = 10; lgwin <= 24; lgwin++) {
    assertEquals(brotliWindowBits(brotliWith(body, lgwin)), lgwin, `lgwin ${lgwin}`);
  }
  // What encoders declare by default is decoded: 22 (4 MiB).
  assertEquals(brotliWindowBits(new Uint8Array(zlib.brotliCompressSync(body))), 22);
  // A large-window stream (RFC 7932's extension, WBITS in the next byte) is never decoded.
  assertEquals(brotliWindowBits(new Uint8Array([0x11, 30])), 31);
});

/** A gzip member whose header carries `field` (FLG bit `flag`: 4 extra, 8 name, 16 comment). */
function gzipWithField(body: Uint8Array, flag: 4 | 8 | 16, field: Uint8Array): Uint8Array {
  const gz = gzipSync(body);
  const extra = flag === 4 ? [field.length & 0xff, field.length >> 8, ...field] : [...field, 0];
  return new Uint8Array([
    ...gz.subarray(0, 3),
    flag,
    ...gz.subarray(4, 10),
    ...extra,
    ...gz.subarray(10),
  ]);
}

Deno.test("text a gzip header carries (name, comment, extra field) is judged as sent: an upstream that ignores the coding reads it", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  const form = { "content-type": "application/x-www-form-urlencoded", "content-encoding": "gzip" };
  const attack = text(`&q=1' union select password from users--&`);
  for (const flag of [4, 8, 16] as const) {
    const r = await post(s, gzipWithField(text(BENIGN_FORM), flag, attack), form);
    assertEquals(r.status, 403, `flag ${flag}`);
  }
  // `gzip data.txt` names the file: a benign name passes, and the upstream gets the bytes as sent.
  const named = gzipWithField(text(BENIGN_FORM), 8, text("data.txt"));
  assertEquals((await post(s, named, form)).status, 200);
  assertEquals(up.seen.at(-1)!.bytes, named);
});

/** A small deterministic generator (mulberry32), so a failure names the same bodies again. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("the compressed bytes of real gzip JSON bodies are not read as text: none of 300 is blocked", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  const random = seeded(13);
  const words = [
    "order",
    "item",
    "price",
    "blue",
    "shoes",
    "size",
    "city",
    "street",
    "name",
    "tax",
  ];
  const pick = () => words[Math.floor(random() * words.length)];
  const headers = { "content-type": "application/json", "content-encoding": "gzip" };
  const blocked: string[] = [];
  for (let i = 0; i < 300; i++) {
    const records = Array.from({ length: 20 + Math.floor(random() * 200) }, (_, j) => ({
      id: j + Math.floor(random() * 1e6),
      name: `${pick()} ${pick()}`,
      price: Math.round(random() * 1e5) / 100,
      note: `${pick()} ${pick()} ${Math.floor(random() * 36 ** 6).toString(36)}`,
    }));
    const r = await post(s, gzipSync(text(JSON.stringify(records))), headers);
    if (r.status !== 200) {
      blocked.push(`${i}: ${(await s.dataPlane.accessLog.get(r.trace))?.record.slice(0, 300)}`);
    }
  }
  assertEquals(blocked, []);
});

Deno.test("an aes128gcm body (RFC 8188, Web Push) is judged as sent: no coding finding, attacks in its bytes still blocked", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  // An encrypted record: a salt, record size, key id and ciphertext, bytes no one here can read.
  const sealed = new Uint8Array(120).map((_, i) => (i * 151 + 7) & 0xff);
  const r = await post(s, sealed, {
    "content-type": "application/octet-stream",
    "content-encoding": "aes128gcm",
  });
  assertEquals(r.status, 200);
  assertEquals(up.seen.at(-1)!.bytes, sealed);
  const attack = await post(s, ATTACK_JSON, {
    "content-type": "application/json",
    "content-encoding": "AES128GCM",
  });
  assertEquals(attack.status, 403);
  assertEquals((await findingOf(s, attack.trace)).class, "sqli");
});

Deno.test("a gzip header field is judged whole: bytes that cut its text into short runs do not hide an attack in it", async () => {
  const { up, s } = await setup();
  await using _u = up;
  await using _s = s;
  const form = { "content-type": "application/x-www-form-urlencoded", "content-encoding": "gzip" };
  // A form feed or vertical tab is white space to SQL; a control or high byte inside a comment is
  // skipped: an upstream that ignores the coding reads each as the attack, in runs of under 16 bytes.
  const words = ["&q=1'", "union", "select", "password", "from", "users--&"];
  for (const cut of ["\x0c", "\x0b", "/*\x01*/", "/*\xff*/"]) {
    const attack = Uint8Array.from(words.join(cut), (c) => c.charCodeAt(0));
    for (const flag of [4, 8, 16] as const) {
      const r = await post(s, gzipWithField(text(BENIGN_FORM), flag, attack), form);
      assertEquals(r.status, 403, `flag ${flag}, cut ${JSON.stringify(cut)}`);
    }
  }
  // The compressed data after the header is still read only for its long runs.
  const named = gzipWithField(text(BENIGN_FORM), 16, text("nightly export\x01v2"));
  assertEquals((await post(s, named, form)).status, 200);
  assertEquals(up.seen.at(-1)!.bytes, named);
});
