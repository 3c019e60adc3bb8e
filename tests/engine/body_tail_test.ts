/**
 * Tests of engine/body_tail.ts and engine/json_track.ts: the rest of a body, judged in windows
 * that reopen their context, finds an attack anywhere in it and reads long benign bodies as their
 * upstream does (issue #37, item 6).
 */
import assert from "node:assert/strict";
import { BodyTail, TAIL_WINDOW } from "../../engine/body_tail.ts";
import { inspect } from "../../engine/inspect.ts";
import { JsonTrack } from "../../engine/json_track.ts";
import type { Finding } from "../../engine/types.ts";

const enc = new TextEncoder();
const ATTACK = "1' UNION SELECT username,password FROM users--";

/** Feeds `body` in `chunk`-byte pieces, judging every window at balanced. */
function judge(type: string, body: string | Uint8Array, judged = 0, chunk = 7777) {
  const tail = new BodyTail({ contentType: type, headers: [["host", "shop.test"]] }, judged);
  const bytes = typeof body === "string" ? enc.encode(body) : body;
  const windows: number[] = [];
  const run = (ws: ReturnType<BodyTail["write"]>) => {
    for (const w of ws) {
      windows.push(w.body!.length);
      tail.record(inspect(w, { level: "balanced" }));
    }
  };
  for (let i = 0; i < bytes.length; i += chunk) run(tail.write(bytes.subarray(i, i + chunk)));
  run(tail.end());
  return { blocking: tail.blocking as Finding | undefined, windows, tail };
}

const pad = (n: number) => "a".repeat(n);
const FORM = "application/x-www-form-urlencoded";

Deno.test("BodyTail finds an attack behind padding in a form, whole field or deep in a long one", () => {
  const behind = judge(FORM, `pad=${pad(1 << 20)}&q=${encodeURIComponent(ATTACK)}`);
  assert.equal(behind.blocking?.ruleId, "sqli.union");
  assert.equal(behind.blocking?.location, "form:q");
  // Inside a value longer than a window: the next window starts with the field's name.
  const inside = judge(FORM, `q=${pad(200_000)}%20${encodeURIComponent(ATTACK)}${pad(100)}`);
  assert.equal(inside.blocking?.location, "form:q");
  // Windows are at most a window long, plus their context.
  assert.ok(inside.windows.every((n) => n <= TAIL_WINDOW + 16), String(inside.windows));
});

Deno.test("BodyTail cuts a form after `&`, so a field up to a window long is judged whole", () => {
  // Fields that straddle any fixed 64 KiB grid: each still lies whole in one window.
  const fields = Array.from({ length: 40 }, (_, i) => `f${i}=${pad(5000 + i * 97)}`);
  fields.splice(27, 0, `q=${pad(3000)}%20${encodeURIComponent(ATTACK)}`);
  const r = judge(FORM, fields.join("&"));
  assert.equal(r.blocking?.location, "form:q");
  const benign = judge(FORM, fields.filter((f) => !f.startsWith("q=")).join("&"));
  assert.equal(benign.blocking, undefined);
});

Deno.test("BodyTail reopens JSON containers, XML, multipart parts and plain text", () => {
  const cases: Array<[string, string, string]> = [
    ["application/json", JSON.stringify({ pad: pad(300_000), user: { q: ATTACK } }), "json:user.q"],
    [
      "application/json",
      `{"pad":"${pad(300_000)}","q":"1\\u0027 UNION SELECT username,password FROM users--"}`,
      "json:q",
    ],
    ["application/xml", `<r><p>${pad(300_000)}</p><q>${ATTACK}</q></r>`, "xml:/q"],
    [
      "application/xml",
      `<r><p>${pad(300_000)}</p><q>1' UNI<!---->ON SEL<!---->ECT username FROM users--</q></r>`,
      "xml:/q",
    ],
    ["text/plain", `${pad(300_000)} ${ATTACK}`, "body"],
    [
      "multipart/form-data; boundary=B",
      `--B\r\nContent-Disposition: form-data; name="q"\r\n\r\n${
        pad(300_000)
      } ${ATTACK}\r\n--B--\r\n`,
      "multipart:q",
    ],
  ];
  for (const [type, body, location] of cases) {
    assert.equal(judge(type, body).blocking?.location, location, `${type}: ${body.slice(-60)}`);
  }
});

Deno.test("BodyTail skips a binary file part and judges the field after it", () => {
  const binary = "\u0001\u0002\u00ff".repeat(100_000);
  const body = `--B\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\n` +
    `Content-Type: application/octet-stream\r\n\r\n${binary}\r\n` +
    `--B\r\nContent-Disposition: form-data; name="q"\r\n\r\n${ATTACK}\r\n--B--\r\n`;
  assert.equal(judge("multipart/form-data; boundary=B", body).blocking?.location, "multipart:q");
  // A text file full of SQL is a document: judged as an upload, it passes.
  const csv = `--B\r\nContent-Disposition: form-data; name="f"; filename="notes.csv"\r\n` +
    `Content-Type: text/csv\r\n\r\n${
      '1,"select * from users where id = 1 or 1=1"\n'.repeat(20_000)
    }` +
    "\r\n--B--\r\n";
  assert.equal(judge("multipart/form-data; boundary=B", csv).blocking, undefined);
});

Deno.test("BodyTail leaves the judged prefix to the caller and reads a charset's text", () => {
  // The attack in the first bytes was the prefix inspection's to find.
  const r = judge(FORM, `q=${encodeURIComponent(ATTACK)}&pad=${pad(300_000)}`, 200_000);
  assert.equal(r.blocking, undefined);
  // UTF-16 without a byte order mark, cut at even offsets.
  const text = `${pad(200_001)} ${ATTACK}`;
  const utf16 = Uint8Array.from(Array.from(text).flatMap((c) => [c.charCodeAt(0), 0]));
  assert.equal(judge("text/plain; charset=utf-16", utf16, 0, 9999).blocking?.ruleId, "sqli.union");
});

Deno.test("BodyTail passes long benign bodies of every shape", () => {
  const records = JSON.stringify(
    Array.from({ length: 20_000 }, (_, i) => ({
      id: i,
      note: "Tom & Jerry | cats; pick 1 or 2 items",
      q: "select one or two",
    })),
  );
  const form = Array.from({ length: 30_000 }, (_, i) => `f${i}=cats+%26+dogs+or+what%3F+why%3F`)
    .join("&");
  const xml = `<feed>${
    "<entry><title>Select one or two &amp; more</title></entry>".repeat(20_000)
  }</feed>`;
  for (const [type, body] of [["application/json", records], [FORM, form], ["text/xml", xml]]) {
    const r = judge(type!, body!);
    assert.equal(r.blocking, undefined, `${type}: ${r.blocking?.ruleId} ${r.blocking?.evidence}`);
    assert.ok(r.windows.length > 5);
  }
});

Deno.test("JsonTrack names the containers and the open string at a byte offset", () => {
  const doc = enc.encode('{"user":{"roles":["admin","x"],"notes":"a long note');
  const track = new JsonTrack();
  track.feed(doc, 0, 24);
  assert.equal(track.prefix(), '{"user":{"roles":["');
  track.feed(doc, 24, doc.length);
  assert.equal(track.prefix(), '{"user":{"notes":"');
  const closed = new JsonTrack();
  const whole = enc.encode('{"a":[1,{"b":"\\"}"}],"c":2}');
  closed.feed(whole, 0, whole.length);
  assert.equal(closed.prefix(), "");
});
