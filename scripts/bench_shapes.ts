/**
 * CPU cost of adversarial body shapes against a plain body of the same size (issue #37, item 4).
 *
 * Each shape is a request body built to the same size as the plain one (prose in a form field);
 * the engine inspects each at `balanced` with its default budget, and the script prints each
 * shape's cost per byte as a ratio against the plain body's, measured in the same run (the
 * plain body is measured between the shapes, and the ratio uses the nearest measurement).
 * `--detectors` adds, per shape, the detectors' own cost on 16 KB windows of the decoded text
 * (what the inspector hands them), against the same detectors on plain prose.
 *
 * `--proxy` measures the whole data plane instead: nginx as the upstream and the WAF (`main.ts
 * serve`, the benchmark sites of `bench_proxy.ts`), each shape POSTed `--runs` times to the
 * protected site, the WAF process's CPU time per request (from `/proc`) against the plain body's.
 *
 * ```sh
 * deno task bench:shapes                      # 1 MiB bodies, every shape
 * deno task bench:shapes --size 65536 --only nest,entity --detectors
 * deno task bench:shapes --proxy --runs 4 --only tag,entity
 * ```
 */
import { parseArgs } from "node:util";
import { inspect } from "../engine/inspect.ts";
import { normalize } from "../engine/normalize.ts";
import { sqli } from "../engine/sqli.ts";
import { xss } from "../engine/xss.ts";
import { DETECTORS } from "../engine/detectors.ts";
import type { Detector, DetectorInput, EngineRequest } from "../engine/types.ts";
import { cpuMs, cpuTicks, ensure, freePort } from "./bench_kit.ts";
import { startNginxUpstream, startWaf } from "./bench_proxy.ts";

interface Shape {
  readonly name: string;
  readonly type: string;
  /** The body, `size` bytes long (give or take a unit). */
  readonly make: (size: number) => string;
}

const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";
const TEXT = "text/plain";
const XML = "text/xml";

const PROSE = "the quick brown fox jumps over the lazy dog while a customer writes a review ";

/** `unit` repeated after `head` to `size` characters, then `tail`. */
function fill(head: string, unit: string, size: number, tail = ""): string {
  const n = Math.max(0, Math.floor((size - head.length - tail.length) / unit.length));
  return head + unit.repeat(n) + tail;
}

/** `open` repeated, the inner value, `close` repeated: a nesting `size` characters deep. */
function nest(head: string, open: string, inner: string, close: string, size: number): string {
  const n = Math.max(
    0,
    Math.floor((size - head.length - inner.length) / (open.length + close.length)),
  );
  return head + open.repeat(n) + inner + close.repeat(n);
}

const form = (unit: string) => (size: number) => fill("q=", unit, size);

const SHAPES: readonly Shape[] = [
  { name: "plain", type: FORM, make: form(PROSE.replaceAll(" ", "+")) },
  { name: "plain-raw", type: FORM, make: form(PROSE) },
  { name: "plain-text", type: TEXT, make: (n) => fill("", PROSE, n) },
  { name: "tag-open", type: FORM, make: form("<a ") },
  { name: "tag-open-nospace", type: FORM, make: form("<a") },
  { name: "lt-run", type: FORM, make: form("<") },
  { name: "tag-attr", type: FORM, make: form("<a href=x ") },
  { name: "tag-event", type: FORM, make: form("<a onx=") },
  { name: "tag-close", type: FORM, make: form("</a>") },
  { name: "tag-pair", type: FORM, make: form("<b>x</b>") },
  { name: "html-comment-open", type: FORM, make: form("<!--") },
  { name: "cdata-open", type: FORM, make: form("<![CDATA[") },
  { name: "pi-open", type: FORM, make: form("<?") },
  { name: "asp-open", type: FORM, make: form("<%") },
  { name: "script-word", type: FORM, make: form("script ") },
  { name: "svg-on", type: FORM, make: form("<svg on") },
  { name: "javascript-colon", type: FORM, make: form("javascript:") },
  { name: "bracket-nest", type: FORM, make: form("[") },
  { name: "bracket-nest-json", type: JSON_TYPE, make: (n) => nest("", "[", "1", "]", n) },
  { name: "object-nest-json", type: JSON_TYPE, make: (n) => nest("", '{"a":', "1", "}", n) },
  { name: "json-many-keys", type: JSON_TYPE, make: (n) => fill("{", '"a b":"c d",', n, '"z":1}') },
  { name: "json-many-strings", type: JSON_TYPE, make: (n) => fill("[", '"a b",', n, '"z"]') },
  {
    name: "json-escaped-json",
    type: JSON_TYPE,
    make: (n) => fill('{"a":"', '{\\"a\\":', n, '1"}'),
  },
  { name: "brace-run", type: FORM, make: form("{") },
  { name: "paren-open", type: FORM, make: form("(") },
  { name: "paren-close", type: FORM, make: form(")") },
  { name: "paren-pair", type: FORM, make: form("(a)") },
  { name: "quote-single", type: FORM, make: form("'") },
  { name: "quote-double", type: FORM, make: form('"') },
  { name: "quote-space", type: FORM, make: form("' ") },
  { name: "quote-word", type: FORM, make: form("'a ") },
  { name: "backtick", type: FORM, make: form("`") },
  { name: "comment-open", type: FORM, make: form("/*") },
  { name: "comment-close", type: FORM, make: form("*/") },
  { name: "comment-empty", type: FORM, make: form("a/**/") },
  { name: "dash-comment", type: FORM, make: form("-- ") },
  { name: "hash", type: FORM, make: form("#") },
  { name: "dollar-brace", type: FORM, make: form("${") },
  { name: "double-brace", type: FORM, make: form("{{") },
  { name: "dollar-paren", type: FORM, make: form("$(") },
  { name: "arith", type: FORM, make: form("$((") },
  { name: "hash-brace", type: FORM, make: form("#{") },
  { name: "percent-brace", type: FORM, make: form("%{") },
  { name: "jndi-open", type: FORM, make: form("${jndi:") },
  { name: "entity-hex", type: FORM, make: form("&#x41;") },
  { name: "entity-dec", type: FORM, make: form("&#65;") },
  { name: "entity-named", type: FORM, make: form("&lt;") },
  { name: "entity-amp", type: FORM, make: form("&") },
  { name: "entity-broken", type: FORM, make: form("&#") },
  { name: "pct-encoded", type: FORM, make: form("%41") },
  { name: "pct-lt", type: FORM, make: form("%3Ca%20") },
  { name: "pct-double", type: FORM, make: form("%2541") },
  { name: "pct-u", type: FORM, make: form("%u0041") },
  { name: "pct-broken", type: FORM, make: form("%") },
  { name: "js-escape", type: FORM, make: form("\\u0041") },
  { name: "hex-escape", type: FORM, make: form("\\x41") },
  { name: "backslash", type: FORM, make: form("\\") },
  { name: "plus-run", type: FORM, make: form("+") },
  { name: "utf7", type: FORM, make: form("+ADw-") },
  { name: "many-params", type: FORM, make: (n) => fill("", "a=1&", n) },
  { name: "many-params-lt", type: FORM, make: (n) => fill("", "a=<&", n) },
  { name: "many-params-sql", type: FORM, make: (n) => fill("", "a=1'&", n) },
  { name: "many-names", type: FORM, make: (n) => fill("", "a<b=1&", n) },
  { name: "word-space", type: FORM, make: form("a ") },
  { name: "digits-space", type: FORM, make: form("1 ") },
  { name: "digit-comma", type: FORM, make: form("1,") },
  { name: "sql-or", type: FORM, make: form("or 1=1 ") },
  { name: "sql-select", type: FORM, make: form("select ") },
  {
    // `select` then a hundred words joined by `+` and no `from`, as raw text: the hot spans'
    // `select ... from` trigger once split each run of words in every way (seconds a window).
    name: "sql-select-plus-words",
    type: TEXT,
    make: (n) => fill("", `select+${Array.from({ length: 100 }, (_, i) => `w${i}`).join("+")} `, n),
  },
  { name: "sql-union", type: FORM, make: form("union select ") },
  { name: "sql-and", type: FORM, make: form("and ") },
  { name: "sql-char", type: FORM, make: form("char(") },
  { name: "sql-hex", type: FORM, make: form("0x41 ") },
  { name: "sql-concat", type: FORM, make: form("concat(") },
  { name: "sql-semicolon", type: FORM, make: form("; ") },
  { name: "equals", type: FORM, make: form("=") },
  { name: "dot-run", type: FORM, make: form(".") },
  { name: "dotdot-slash", type: FORM, make: form("../") },
  { name: "dotdot-backslash", type: FORM, make: form("..\\") },
  { name: "slash-run", type: FORM, make: form("/") },
  { name: "etc-path", type: FORM, make: form("/etc/") },
  { name: "semicolon", type: FORM, make: form(";") },
  { name: "pipe", type: FORM, make: form("|") },
  { name: "amp-amp", type: FORM, make: form("&&") },
  { name: "cmd-chain", type: FORM, make: form(";a") },
  { name: "cmd-pipe-word", type: FORM, make: form("|a ") },
  { name: "dollar", type: FORM, make: form("$") },
  { name: "ifs", type: FORM, make: form("$IFS") },
  { name: "glob", type: FORM, make: form("/?") },
  { name: "crlf", type: FORM, make: form("%0d%0a") },
  { name: "newline-raw", type: TEXT, make: (n) => fill("", "a\r\n", n) },
  { name: "header-like", type: TEXT, make: (n) => fill("", "\r\nX-A: b", n) },
  { name: "url-run", type: FORM, make: form("http://") },
  { name: "at-run", type: FORM, make: form("@") },
  { name: "colon-run", type: FORM, make: form(":") },
  { name: "base64", type: FORM, make: form("QUFB") },
  {
    name: "base64-code",
    type: FORM,
    make: (n) => fill("q=", btoa("<a b='c'>").replaceAll("=", ""), n),
  },
  {
    name: "base64-json",
    type: JSON_TYPE,
    make: (n) => fill('{"a":"', btoa('{"a":"b c"}'), n, '"}'),
  },
  { name: "long-token", type: FORM, make: form("a1") },
  { name: "long-word", type: FORM, make: form("abcdefgh") },
  { name: "fullwidth", type: FORM, make: form("ａ") },
  { name: "accents", type: FORM, make: form("é ") },
  { name: "java-class", type: FORM, make: form("java.lang.") },
  { name: "php-open", type: FORM, make: form("<?php ") },
  { name: "serialized", type: FORM, make: form('O:1:"a":') },
  { name: "ldap-paren", type: FORM, make: form("(&(") },
  { name: "xpath", type: FORM, make: form("' or '") },
  { name: "nosql", type: JSON_TYPE, make: (n) => nest("", '{"$ne":', "1", "}", n) },
  { name: "ssti", type: FORM, make: form("{{7*7}}") },
  { name: "ssi", type: FORM, make: form("<!--#") },
  { name: "css", type: FORM, make: form("expression(") },
  { name: "mail-header", type: FORM, make: form("%0aBcc:") },
  { name: "xml-nest", type: XML, make: (n) => nest("", "<a>", "x", "</a>", n) },
  { name: "xml-attrs", type: XML, make: (n) => fill("<a ", 'b="c d" ', n, "/>") },
  { name: "xml-comment", type: XML, make: (n) => fill("<a>", "<!---->", n, "</a>") },
  { name: "xml-entity", type: XML, make: (n) => fill("<a>", "&amp;", n, "</a>") },
  { name: "json-tag-attr", type: JSON_TYPE, make: (n) => fill('{"q":"', "<a href=x ", n, '"}') },
  { name: "text-tag-attr", type: TEXT, make: (n) => fill("", "<a href=x ", n) },
  { name: "json-amp-amp", type: JSON_TYPE, make: (n) => fill('{"q":"', "&&", n, '"}') },
  { name: "text-entity-amp", type: TEXT, make: (n) => fill("", "&", n) },
  { name: "pct-layers", type: FORM, make: (n) => fill("q=", "%25", n, "41") },
  { name: "entity-layers", type: FORM, make: (n) => fill("q=%26", "amp%3B", n, "lt%3B") },
  {
    name: "base64-nested",
    type: FORM,
    make: (n) => fill("q=", btoa(btoa(btoa("<a href='x'>"))), n),
  },
  { name: "json-backslashes", type: JSON_TYPE, make: (n) => fill('{"q":"', "\\\\", n, '"}') },
  {
    name: "json-unicode-escapes",
    type: JSON_TYPE,
    make: (n) => fill('{"q":"', "\\u003c", n, '"}'),
  },
  { name: "or-star", type: FORM, make: form("or*") },
  { name: "amp-amp-quote", type: FORM, make: form("%26%26'") },
  // Found by a random search over short units of SQL, shell, markup and template syntax.
  { name: "eval-subst", type: FORM, make: form("eval($(") },
  { name: "and-glob-line", type: FORM, make: form("and%0d%0a/*") },
  { name: "sleep-template-subst", type: FORM, make: form("sleep({%$(") },
  { name: "serial-sleep-line", type: FORM, make: form("s:sleep(%0d%0a") },
  { name: "on-amp-amp", type: FORM, make: form("on=%26%26") },
  { name: "comment-amp-amp", type: FORM, make: form("*/%26%26") },
  { name: "select-slashes", type: FORM, make: form("select//") },
  { name: "subst-amp-amp", type: FORM, make: form("$(%26%26") },
  { name: "amp-cmd-quote", type: FORM, make: form('%26cmd"') },
  { name: "amp-comment-amp", type: FORM, make: form("%26/*%26") },
  { name: "amp-amp-star-brace", type: FORM, make: form("%26%26*{") },
  { name: "tag-tab-plus", type: FORM, make: form("<a%09%2B") },
  { name: "cdata-end-select", type: FORM, make: form("]]>select?") },
  { name: "bang-select-star", type: FORM, make: form("!select*") },
  { name: "exec-amp", type: FORM, make: form("exec(%26") },
  { name: "or-tag-bang", type: FORM, make: form("or<a!") },
  { name: "graphql", type: JSON_TYPE, make: (n) => nest('{"query":"', "{a", "", "}", n) + '"}' },
];

const MULTIPART_BOUNDARY = "b0undary";
const MULTIPART: Shape = {
  name: "multipart-many",
  type: `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`,
  make: (n) =>
    fill(
      "",
      `--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\n\r\na b\r\n`,
      n,
      `--${MULTIPART_BOUNDARY}--\r\n`,
    ),
};

const ENCODER = new TextEncoder();

function request(shape: Shape, body: Uint8Array): EngineRequest {
  return {
    method: "POST",
    path: "/submit",
    query: "",
    headers: [["content-type", shape.type], ["user-agent", "bench/1"]],
    body,
  };
}

/** Least CPU time of `runs` inspections, in milliseconds (the least disturbed by other load). */
function timeInspect(req: EngineRequest, runs: number): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = cpuMs();
    inspect(req, { level: "balanced" });
    best = Math.min(best, cpuMs() - t0);
  }
  return best;
}

const DETECTOR_LIST: ReadonlyArray<readonly [string, Detector]> = [
  ["sqli", sqli],
  ["xss", xss],
  ...DETECTORS.map((d) => [d.name, d] as const),
];

/** Milliseconds each detector takes on the decoded text, in 16 KB windows. */
function timeDetectors(text: string, runs: number): Map<string, number> {
  const decoded = normalize(text, "space").text;
  const windows: DetectorInput[] = [];
  for (let at = 0; at < decoded.length; at += 12288) {
    const part = decoded.slice(at, at + 16384);
    windows.push({
      input: { source: "form", name: "q", value: part },
      location: "form:q",
      decoded: part,
      raw: part,
    });
  }
  const out = new Map<string, number>();
  for (const [name, detector] of DETECTOR_LIST) {
    let best = Infinity;
    for (let r = 0; r < runs; r++) {
      const t0 = cpuMs();
      for (const w of windows) detector(w);
      best = Math.min(best, cpuMs() - t0);
    }
    out.set(name, best);
  }
  return out;
}

/** One shape's measurement: milliseconds per request and the cost per byte against plain. */
export interface ShapeCost {
  readonly name: string;
  readonly ms: number;
  readonly ratio: number;
  readonly note: string;
}

/** The shapes whose name contains one of `only` (all without), the plain body first. */
export function shapesOf(only?: readonly string[]): Shape[] {
  return [...SHAPES, MULTIPART].filter((s) =>
    s.name === "plain" || only === undefined || only.some((o) => s.name.includes(o))
  );
}

/**
 * The engine's cost per byte of each shape against the plain body's, measured in one run.
 *
 * @param size body size in bytes
 * @param runs inspections per measurement (the least CPU time counts)
 * @param only name fragments of the shapes to measure (all without)
 * @param detectors also print each shape's slowest detectors against plain prose
 */
export function engineShapes(
  size: number,
  runs: number,
  only?: readonly string[],
  detectors = false,
): ShapeCost[] {
  const shapes = shapesOf(only);
  const plain = SHAPES[0]!;
  const plainReq = request(plain, ENCODER.encode(plain.make(size)));
  const plainText = plain.make(size).slice(2);
  // Warm-up: every shape once, so the JIT has seen each path before anything is measured.
  for (const shape of shapes) timeInspect(request(shape, ENCODER.encode(shape.make(size))), 1);
  timeInspect(plainReq, 2);
  const basePerDetector = detectors ? timeDetectors(plainText.slice(0, 65536), runs) : undefined;
  const out: ShapeCost[] = [];
  for (const shape of shapes) {
    const text = shape.make(size);
    const body = ENCODER.encode(text);
    const before = timeInspect(plainReq, runs);
    const ms = timeInspect(request(shape, body), runs);
    const after = timeInspect(plainReq, runs);
    const base = Math.min(before, after);
    const ratio = (ms / body.length) / (base / plainReq.body!.length);
    const r = inspect(request(shape, body), { level: "balanced" });
    let note = `${r.findings.length} ${r.blocking?.ruleId ?? "-"}${r.truncated ? " budget" : ""}`;
    if (basePerDetector !== undefined) {
      const own = timeDetectors(text.slice(0, 65536), runs);
      const slow = [...own].map(([n, t]) =>
        [n, t / Math.max(basePerDetector.get(n)!, 0.05)] as const
      )
        .filter(([, x]) => x > 3).sort((a, b) => b[1] - a[1]).slice(0, 5);
      if (slow.length > 0) {
        note += `; detectors x plain: ${slow.map(([n, x]) => `${n} ${x.toFixed(1)}`).join(", ")}`;
      }
    }
    out.push({ name: shape.name, ms, ratio, note });
  }
  return out;
}

/** The WAF process's CPU per request of each shape against the plain body's, through the proxy. */
export async function proxyShapes(
  size: number,
  runs: number,
  only?: readonly string[],
): Promise<ShapeCost[]> {
  await ensure("nginx", "nginx");
  const dir = await Deno.makeTempDir({ prefix: "waf-shapes-" });
  const upstreamPort = freePort();
  const dataPort = freePort();
  const children: Deno.ChildProcess[] = [];
  try {
    children.push(await startNginxUpstream(dir, upstreamPort));
    const waf = await startWaf(dir, `http://127.0.0.1:${upstreamPort}`, dataPort, freePort());
    children.push(waf);
    const post = async (shape: Shape, body: Uint8Array) => {
      // A raw request: `fetch` does not send the Host header it is given.
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: dataPort });
      const head = `POST /submit HTTP/1.1\r\nHost: on.bench\r\nContent-Type: ${shape.type}\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      const writer = conn.writable.getWriter();
      await writer.write(ENCODER.encode(head));
      await writer.write(body);
      writer.releaseLock();
      const answer = await new Response(conn.readable).text();
      const status = Number(answer.slice(9, 12));
      if (status !== 200 && status !== 403) {
        throw new Error(`Unexpected status ${status} for shape "${shape.name}"`);
      }
    };
    /** CPU milliseconds of the WAF per request, over `runs` requests. */
    const cost = async (shape: Shape, body: Uint8Array) => {
      const before = cpuTicks(waf.pid);
      for (let i = 0; i < runs; i++) await post(shape, body);
      return ((cpuTicks(waf.pid) - before) * 10) / runs;
    };
    const shapes = shapesOf(only);
    const plain = SHAPES[0]!;
    const plainBody = ENCODER.encode(plain.make(size));
    for (const shape of shapes) await post(shape, ENCODER.encode(shape.make(size)));
    const out: ShapeCost[] = [];
    for (const shape of shapes) {
      const body = ENCODER.encode(shape.make(size));
      const before = await cost(plain, plainBody);
      const ms = await cost(shape, body);
      const after = await cost(plain, plainBody);
      const base = Math.max(1, (before + after) / 2);
      out.push({
        name: shape.name,
        ms,
        ratio: (ms / body.length) / (base / plainBody.length),
        note: "",
      });
    }
    return out;
  } finally {
    for (const c of children) {
      try {
        c.kill("SIGTERM");
      } catch {
        // already gone
      }
      await c.status;
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Prints a table of shape costs and the worst one; returns the worst ratio. */
export function printShapes(rows: readonly ShapeCost[], size: number, what: string): number {
  console.log(`${what}, body ${size} bytes; ratio = cost per byte / plain body's (form prose)`);
  console.log("shape".padEnd(22), "ms".padStart(9), "ratio".padStart(8), " findings");
  let worst = { name: "", ratio: 0 };
  for (const r of rows) {
    if (r.name !== "plain" && r.ratio > worst.ratio) worst = r;
    console.log(
      r.name.padEnd(22),
      r.ms.toFixed(1).padStart(9),
      r.ratio.toFixed(2).padStart(8),
      ` ${r.note}`,
    );
  }
  console.log(`worst: ${worst.name} at ${worst.ratio.toFixed(2)}x the plain body's cost per byte`);
  return worst.ratio;
}

if (import.meta.main) {
  const { values: args } = parseArgs({
    args: Deno.args,
    options: {
      size: { type: "string", default: String(1 << 20) },
      runs: { type: "string", default: "3" },
      only: { type: "string" },
      detectors: { type: "boolean", default: false },
      proxy: { type: "boolean", default: false },
    },
  });
  const size = Number(args.size);
  const runs = Number(args.runs);
  const only = args.only?.split(",");
  if (args.proxy) {
    printShapes(await proxyShapes(size, runs, only), size, "WAF process CPU per request");
  } else printShapes(engineShapes(size, runs, only, args.detectors), size, "engine CPU (inspect)");
}
