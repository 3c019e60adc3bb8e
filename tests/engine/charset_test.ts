/**
 * Tests of engine/charset.ts and the engine reading bodies in their declared charset: EBCDIC,
 * UTF-16 and UTF-32 bodies that passed as UTF-8 (issue #37, item 7), and ASP.NET's reading of
 * percent escapes under the declared charset.
 */
import assert from "node:assert/strict";
import { bodyCharset, type Charset, decodeBodyText } from "../../engine/charset.ts";
import { inspect } from "../../engine/inspect.ts";
import type { EngineRequest } from "../../engine/types.ts";

const ATTACK = "q=1' UNION SELECT username,password FROM users--";
/** ATTACK in IBM037, 500, 875 and 1140 alike (Python's codecs, generated from the same tables). */
const ATTACK_EBCDIC = "987ef17d40e4d5c9d6d540e2c5d3c5c3e340a4a28599958194856b9781a2a2a696998440" +
  "c6d9d6d440a4a28599a26060";

function charset(label: string): Charset {
  const c = bodyCharset(`text/plain; charset=${label}`);
  assert.equal(c.kind, "charset", label);
  return (c as { charset: Charset }).charset;
}

/** Text to bytes in a single-byte charset, by inverting its decoding of every byte. */
function encodeWith(c: Charset, text: string): Uint8Array {
  const all = c.decode(Uint8Array.from({ length: 256 }, (_, i) => i));
  return Uint8Array.from(text, (ch) => {
    const b = all.indexOf(ch);
    assert.ok(b >= 0, `${JSON.stringify(ch)} has no byte in ${c.name}`);
    return b;
  });
}

function utf16(text: string, order: "le" | "be", bom: boolean): Uint8Array {
  const out: number[] = bom ? (order === "le" ? [0xff, 0xfe] : [0xfe, 0xff]) : [];
  for (let i = 0; i < text.length; i++) {
    const u = text.charCodeAt(i);
    if (order === "le") out.push(u & 0xff, u >> 8);
    else out.push(u >> 8, u & 0xff);
  }
  return Uint8Array.from(out);
}

function utf32(text: string, order: "le" | "be", bom: boolean): Uint8Array {
  const out: number[] = [];
  for (const cp of [...(bom ? [0xfeff] : []), ...Array.from(text, (c) => c.codePointAt(0)!)]) {
    const b = [cp >>> 24, (cp >>> 16) & 0xff, (cp >>> 8) & 0xff, cp & 0xff];
    out.push(...(order === "be" ? b : b.reverse()));
  }
  return Uint8Array.from(out);
}

function post(type: string, body: Uint8Array): EngineRequest {
  return {
    method: "POST",
    path: "/search",
    query: "",
    headers: [["host", "shop.example.com"], ["content-type", type]],
    body,
  };
}

Deno.test("bodyCharset() decodes the EBCDIC code pages by their tables", () => {
  const bytes = Uint8Array.fromHex(ATTACK_EBCDIC);
  for (const label of ["ibm037", "IBM500", "cp875", "ibm01140", "ebcdic-cp-us", "x-IBM875"]) {
    assert.equal(charset(label).decode(bytes), ATTACK, label);
  }
  // Where the pages differ: 1140 is 037 with the euro sign, 500 moves brackets, 875 is Greek.
  assert.equal(charset("ibm1140").decode(Uint8Array.fromHex("9ff5")), "€5");
  assert.equal(charset("ibm037").decode(Uint8Array.fromHex("9ff5")), "¤5");
  assert.equal(charset("ibm500").decode(Uint8Array.fromHex("4aa75a4f")), "[x]!");
  assert.equal(charset("ibm037").decode(Uint8Array.fromHex("baa7bb5a")), "[x]!");
  assert.equal(charset("cp875").decode(Uint8Array.fromHex("419bb3aa8a")), "Αθήνα");
});

Deno.test("bodyCharset() reads UTF-16 and UTF-32 in either order, with or without a mark", () => {
  const text = "q=1' UNION SELECT é€ю𝄞";
  for (const order of ["le", "be"] as const) {
    for (const bom of [true, false]) {
      assert.equal(charset("utf-16").decode(utf16(text, order, bom)), text, `16 ${order} ${bom}`);
      assert.equal(charset("utf-32").decode(utf32(text, order, bom)), text, `32 ${order} ${bom}`);
      assert.equal(charset(`utf-16${order}`).decode(utf16(text, order, bom)), text);
      assert.equal(charset(`UTF-32${order.toUpperCase()}`).decode(utf32(text, order, bom)), text);
    }
  }
  // .NET's names for the two orders of UTF-16.
  assert.equal(charset("unicode").decode(utf16(text, "le", false)), text);
  assert.equal(charset("unicodeFFFE").decode(utf16(text, "be", false)), text);
});

Deno.test("bodyCharset() knows the ISO-8859 and Windows families and refuses the rest", () => {
  assert.equal(charset("iso-8859-7").decode(Uint8Array.fromHex("e1e2e3")), "αβγ");
  assert.equal(charset("windows-1251").decode(Uint8Array.fromHex("fe")), "ю");
  assert.equal(charset("windows-1250").name, "windows-1250");
  for (const none of ["", "utf-8", "UTF8", '"utf-8"', "utf-7"]) {
    assert.equal(bodyCharset(`application/json; charset=${none}`).kind, "utf-8", none);
  }
  assert.equal(bodyCharset("application/json").kind, "utf-8");
  for (const label of ["x-unknown", "ibm1047", "iso-2022-kr", "a".repeat(60)]) {
    assert.equal(bodyCharset(`text/plain; charset=${label}`).kind, "unknown", label);
  }
  // Two charsets that disagree: which one the upstream takes is anyone's guess.
  assert.equal(bodyCharset("text/plain; charset=utf-8; charset=ibm037").kind, "unknown");
  assert.equal(bodyCharset("text/plain; charset=utf-8; charset=UTF-8").kind, "utf-8");
  assert.equal(decodeBodyText(Uint8Array.fromHex("c1"), "text/plain; charset=ibm037"), "A");
});

const CASES = [
  "1' UNION SELECT username,password FROM users--",
  "' or 1=1--",
  "<script>alert(1)</script>",
  "; cat /etc/passwd",
];

function bodies(value: string): Array<[string, string]> {
  const xml = value.replaceAll("&", "&amp;").replaceAll("<", "&lt;");
  return [
    ["application/x-www-form-urlencoded", `q=${value}&page=1`],
    ["application/json", JSON.stringify({ q: value, page: 1 })],
    ["application/xml", `<r><q>${xml}</q></r>`],
    ["text/plain", value],
  ];
}

Deno.test("inspect() judges EBCDIC bodies as their upstream reads them", () => {
  const missed: string[] = [];
  for (const label of ["ibm037", "ibm500", "cp875", "ibm01140"]) {
    const c = charset(label);
    for (const value of CASES) {
      for (const [type, text] of bodies(value)) {
        const r = inspect(post(`${type}; charset=${label}`, encodeWith(c, text)), {
          level: "balanced",
        });
        if (r.blocking === undefined) missed.push(`${label} ${type} ${value}`);
      }
    }
    const benign = encodeWith(c, "q=winter+jacket&size=M&note=please+select+one+or+two");
    const r = inspect(post(`application/x-www-form-urlencoded; charset=${label}`, benign), {
      level: "balanced",
    });
    assert.equal(r.blocking, undefined, label);
  }
  assert.deepEqual(missed, []);
});

Deno.test("inspect() judges UTF-16 and UTF-32 bodies as their upstream reads them", () => {
  const missed: string[] = [];
  for (const value of CASES) {
    for (const [type, text] of bodies(value)) {
      for (const order of ["le", "be"] as const) {
        for (
          const [label, body] of [
            ["utf-16", utf16(text, order, false)],
            ["utf-16", utf16(text, order, true)],
            ["utf-32", utf32(text, order, false)],
          ] as const
        ) {
          const r = inspect(post(`${type}; charset=${label}`, body), { level: "balanced" });
          if (r.blocking === undefined) missed.push(`${label} ${order} ${type} ${value}`);
        }
      }
    }
  }
  assert.deepEqual(missed, []);
});

Deno.test("inspect() reads a form's percent escapes in its charset, as ASP.NET does", () => {
  const hex = (b: Uint8Array) => Array.from(b, (x) => `%${x.toString(16).padStart(2, "0")}`);
  const value = "1' UNION SELECT username,password FROM users--";
  const missed: string[] = [];
  for (
    const [label, bytes] of [
      ["utf-16", utf16(value, "le", false)],
      ["utf-16", utf16(value, "be", true)],
      ["utf-32", utf32(value, "le", false)],
      ["ibm037", encodeWith(charset("ibm037"), value)],
    ] as const
  ) {
    const body = new TextEncoder().encode(`page=1&q=${hex(bytes).join("")}`);
    const r = inspect(post(`application/x-www-form-urlencoded; charset=${label}`, body), {
      level: "balanced",
    });
    if (r.blocking?.location !== "form:q") missed.push(`${label}: ${r.blocking?.location}`);
  }
  assert.deepEqual(missed, []);
  // Escapes of plain text in a Windows charset read the same as before.
  const plain = new TextEncoder().encode("q=caf%e9+cr%e8me&n=2");
  const r = inspect(post("application/x-www-form-urlencoded; charset=windows-1252", plain), {
    level: "balanced",
  });
  assert.equal(r.blocking, undefined);
});

Deno.test("inspect() reads a multipart part in the charset it declares", () => {
  const part = (type: string, body: Uint8Array) => {
    const head = new TextEncoder().encode(
      '--B\r\nContent-Disposition: form-data; name="q"\r\n' + `Content-Type: ${type}\r\n\r\n`,
    );
    const tail = new TextEncoder().encode("\r\n--B--\r\n");
    const out = new Uint8Array(head.length + body.length + tail.length);
    out.set(head);
    out.set(body, head.length);
    out.set(tail, head.length + body.length);
    return out;
  };
  const value = "1' UNION SELECT username,password FROM users--";
  for (
    const [type, body] of [
      ["text/plain; charset=ibm037", encodeWith(charset("ibm037"), value)],
      ["text/plain; charset=utf-16", utf16(value, "be", false)],
    ] as const
  ) {
    const r = inspect(post("multipart/form-data; boundary=B", part(type, body)), {
      level: "balanced",
    });
    assert.equal(r.blocking?.ruleId, "sqli.union", type);
  }
});
