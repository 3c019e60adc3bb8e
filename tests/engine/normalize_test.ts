import assert from "node:assert/strict";
import {
  decodeBase64Code,
  decodeBase64Runs,
  decodeJsEscapes,
  decodeUtf7,
  MAX_VALUE_CHARS,
  normalize,
  percentDecode,
} from "../../engine/normalize.ts";
import { decodeEntities } from "../../engine/entities.ts";

Deno.test("normalize() peels double percent encoding", () => {
  assert.equal(normalize("%2527%2520or%25201%253D1").text, "' or 1=1");
});

Deno.test("normalize() stops after a bounded number of layers", () => {
  assert.equal(normalize("%252525252525252527").text, "%252527");
  // Four layers are peeled (a scanner's evasion), as are the three applications decode.
  assert.equal(normalize("%25252527%252520or%2525201=1").text, "' or 1=1");
});

Deno.test("normalize() reads + as a space only in form encoding", () => {
  assert.equal(normalize("a+b", "space").text, "a b");
  assert.equal(normalize("a+b").text, "a+b");
});

Deno.test("normalize() removes NUL bytes", () => {
  assert.equal(normalize("<scr%00ipt>").text, "<script>");
});

Deno.test("normalize() cuts values at the analysis limit and says so", () => {
  const result = normalize("a".repeat(MAX_VALUE_CHARS + 10));
  assert.equal(result.text.length, MAX_VALUE_CHARS);
  assert.equal(result.truncated, true);
});

Deno.test("percentDecode() keeps malformed escapes literally", () => {
  assert.equal(percentDecode("100% %zz %4"), "100% %zz %4");
});

Deno.test("percentDecode() maps overlong UTF-8 to its character", () => {
  assert.equal(percentDecode("%c0%ae%c0%ae%c0%af"), "../");
  assert.equal(percentDecode("%e0%80%ae"), ".");
});

Deno.test("percentDecode() decodes IIS %u escapes", () => {
  assert.equal(percentDecode("%u003cscript%u003e"), "<script>");
});

Deno.test("percentDecode() decodes multi-byte UTF-8", () => {
  assert.equal(percentDecode("%E7%BF%BB"), "翻");
});

Deno.test("decodeEntities() decodes numeric references without semicolons and with zeros", () => {
  assert.equal(decodeEntities("&#106&#x61;&#0000118;a"), "java");
});

Deno.test("decodeEntities() decodes named references and leaves unknown ones", () => {
  assert.equal(decodeEntities("&lt;a&gt; &colon; &NewLine; &bogus;"), "<a> : \n &bogus;");
});

Deno.test("decodeJsEscapes() decodes unicode, hex and octal escapes", () => {
  assert.equal(decodeJsEscapes("\\u0061\\x6c\\145\\u{72}t"), "alert");
});

Deno.test("decodeUtf7() turns UTF-7 shifted ASCII into characters", () => {
  assert.equal(decodeUtf7("+ADw-script+AD4-"), "<script>");
});

Deno.test("decodeBase64Code() only returns printable text, code-like when embedded", () => {
  assert.equal(decodeBase64Code(btoa("<script>alert(1)</script>")), "<script>alert(1)</script>");
  assert.equal(decodeBase64Code("dGhpcyBpcyBwbGFpbg=="), "this is plain");
  assert.equal(decodeBase64Code("dGhpcyBpcyBwbGFpbg==", true), undefined);
  assert.equal(decodeBase64Code("d41d8cd98f00b204e9800998ecf8427e"), undefined);
});

Deno.test("decodeBase64Code() reads code in every alignment and alphabet but not random tokens", () => {
  const code = "<svg onload=alert(1)>";
  const b64 = btoa(code);
  assert.equal(decodeBase64Code(b64), code);
  assert.equal(decodeBase64Code(b64.replace(/=+$/, "")), code);
  assert.equal(
    decodeBase64Code(btoa("' or 1=1-- ?>").replaceAll("+", "-").replaceAll("/", "_")),
    "' or 1=1-- ?>",
  );
  for (
    const token of ["9f86d081884c7d659a2feaa0c55ad015", "eyJhbGciOiJIUzI1NiJ9", "Zm9vYmFyYmF6cXV4"]
  ) {
    const out = decodeBase64Code(token);
    assert.ok(out === undefined || /[<>'"();${}`|=/]/.test(out), token);
  }
  assert.equal(decodeBase64Code("x8Kz9QmT4vLp2wRb"), undefined);
});

Deno.test("decodeBase64Runs() finds base64 inside serialised values", () => {
  const value = `s:44:"${btoa("' and 1=2 union select 1,2,3 -- ")}"`;
  assert.deepEqual(decodeBase64Runs(value), ["' and 1=2 union select 1,2,3 -- "]);
});

/** Every maximal run read a character at a time: what the sampling scan must find. */
function runsOneByOne(value: string): string[] {
  const out: string[] = [];
  const digit = /[A-Za-z0-9+/]/;
  let start = -1;
  for (let i = 0; i <= value.length; i++) {
    if (i < value.length && digit.test(value[i]!)) {
      if (start < 0) start = i;
      continue;
    }
    if (start >= 0 && i - start >= 12) {
      let end = i;
      while (end < value.length && end - i < 2 && value[end] === "=") end++;
      const text = decodeBase64Code(value.slice(start, end), true);
      if (text !== undefined) {
        out.push(text);
        if (out.length >= 4) break;
      }
    }
    start = -1;
  }
  return out;
}

Deno.test("decodeBase64Runs() finds the runs a character-by-character scan finds", () => {
  const code = ["' or 1=1 --", "<script>alert(1)</script>", "$(id)", "{{7*7}}", "a;b|c"];
  const runs = code.map((c) => btoa(c));
  let compared = 0;
  for (let seed = 0; seed < 400; seed++) {
    // Runs of every length and offset among words, padding and other runs, up to five.
    const parts: string[] = [];
    for (let k = 0; k < 1 + (seed % 7); k++) {
      const r = (seed * 31 + k * 17) % 11;
      if (r < 3) parts.push(runs[(seed + k) % runs.length]!);
      else if (r < 5) parts.push("x".repeat((seed + k) % 26));
      else if (r < 7) parts.push(runs[k % runs.length]!.slice((seed + k) % 9));
      else parts.push(["the", "order", "==", "=", " ", "%", "ab+/cd"][(seed + k) % 7]!);
      parts.push(["", " ", "=", "==", '"', "-"][(seed + 2 * k) % 6]!);
    }
    const value = parts.join("");
    for (const text of [value, value.slice(seed % 5), `${value} ${value}`]) {
      assert.deepEqual(decodeBase64Runs(text), runsOneByOne(text), JSON.stringify(text));
      compared++;
    }
  }
  assert.equal(compared, 1200);
  // The shortest runs (12 digits: nine bytes) at every offset, after a word that is too short.
  for (const run of [btoa("' or 1=1-"), btoa("<svg/onload=x>")]) {
    for (let at = 0; at < 30; at++) {
      for (const lead of ["-", "abcdefghijk-", "ab-"]) {
        const text = `${lead.repeat(at)}${run}-${run}`;
        const found = decodeBase64Runs(text);
        assert.deepEqual(found, runsOneByOne(text), JSON.stringify(text));
        assert.equal(found.length, 2, JSON.stringify(text));
      }
    }
  }
});

/** The layered decoding `normalize()` runs on every encoded value, spelled out. */
function layered(value: string): string {
  let text = value;
  for (let layer = 0; layer < 3; layer++) {
    let next = decodeJsEscapes(decodeEntities(percentDecode(text, layer === 0)));
    if (next.includes("+A")) next = decodeUtf7(next);
    if (next === text) break;
    text = next;
  }
  return text.replaceAll("\0", "");
}

Deno.test("normalize() decodes a value whose only escape is + as the layers do", () => {
  const fixed = ["correct+horse+battery", "+AGA-", "+ADw-script+AD4-", "++A", "a+\0+b", "x+"];
  // Every string up to five characters over an alphabet around UTF-7 and NUL, plus longer ones
  // drawn from it with a fixed seed.
  const alphabet = ["+", "A", "a", "-", "D", "w", "\0", " ", "<", "/"];
  const all: string[] = [...fixed];
  const grow = (prefix: string, left: number) => {
    if (prefix.includes("+")) all.push(prefix);
    if (left > 0) { for (const c of alphabet) grow(prefix + c, left - 1); }
  };
  grow("", 5);
  let seed = 42;
  for (let i = 0; i < 2000; i++) {
    let s = "+";
    for (let k = 0; k < 24; k++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      s += alphabet[seed % alphabet.length];
    }
    all.push(s);
  }
  for (const value of all) {
    assert.equal(normalize(value, "space").text, layered(value), JSON.stringify(value));
  }
  assert.equal(normalize("correct+horse+battery", "space").text, "correct horse battery");
});

Deno.test("percentDecode: form escapes decoded at once read as the general decoder reads them", () => {
  // A lone `%` at the end is kept as it is and sends any text through the general decoder.
  const pieces = [
    "a",
    "Z",
    "0",
    " ",
    "+",
    "%41",
    "%2B",
    "%2b",
    "%25",
    "%5B",
    "%5d",
    "%20",
    "%00",
    "%7F",
    "%80",
    "%C3%A9",
    "%C3",
    "%e2%80%99",
    "%F0%9F%98%80",
    "%u0041",
    "%U00e9",
    "%zz",
    "%4",
    "%",
    "&amp;",
    "é",
    "\u2019",
    "\ud83d",
    "items",
    "=",
    "&",
    "%26",
    "%3D",
    "%22",
    "'",
  ];
  let seed = 7;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  for (let round = 0; round < 4000; round++) {
    let s = "";
    const length = 20 + Math.floor(next() * 200);
    while (s.length < length) s += pieces[Math.floor(next() * pieces.length)];
    for (const plus of [false, true]) {
      assert.equal(percentDecode(s + "%", plus), percentDecode(s, plus) + "%", JSON.stringify(s));
    }
  }
});
