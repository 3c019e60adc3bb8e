/**
 * The bot challenge's page and endpoint. The page carries a signed puzzle; its script finds a
 * counter whose SHA-256 over `nonce:counter` starts with the required zero bits (a small
 * SHA-256 in plain JavaScript, because `crypto.subtle` only exists on secure origins) and
 * posts the answer to {@link CHALLENGE_PATH}. On success the server sets the clearance cookie
 * and sends the browser back: a 303 to the original URL for GET; for a form POST the page
 * re-submits the original form fields after the answer is accepted. Clients without
 * JavaScript stay on the page and never reach the upstream.
 */
import { escapeHtml } from "./status_page.ts";

export const CHALLENGE_PATH = "/.well-known/waf/challenge";

const SHA256_JS =
  `function sha256(s){var K=[],H=[],i,j,p=2;for(;K.length<64;p++){for(j=2;j*j<=p&&p%j;j++);if(j*j>p){if(H.length<8)H.push(Math.pow(p,1/2)*4294967296|0);K.push(Math.pow(p,1/3)*4294967296|0)}}` +
  `var b=unescape(encodeURIComponent(s)),l=b.length,w=[],h=H.slice();for(i=0;i<l;i++)w[i>>2]|=b.charCodeAt(i)<<(24-8*(i&3));w[l>>2]|=128<<(24-8*(l&3));var n=((l+8)>>6)*16+15;w[n]=l*8;` +
  `for(i=0;i<=n;i+=16){var W=[],a=h.slice();for(j=0;j<16;j++)W[j]=w[i+j]|0;for(j=0;j<64;j++){if(j>15){var x=W[j-15],y=W[j-2];W[j]=(W[j-16]+((x>>>7|x<<25)^(x>>>18|x<<14)^(x>>>3))+W[j-7]+((y>>>17|y<<15)^(y>>>19|y<<13)^(y>>>10)))|0}` +
  `var e=a[4],t1=a[7]+((e>>>6|e<<26)^(e>>>11|e<<21)^(e>>>25|e<<7))+((e&a[5])^(~e&a[6]))+K[j]+(W[j]|0),c=a[0],t2=((c>>>2|c<<30)^(c>>>13|c<<19)^(c>>>22|c<<10))+((c&a[1])^(c&a[2])^(a[1]&a[2]));a=[(t1+t2)|0].concat(a);a[4]=(a[4]+t1)|0;a.length=8}` +
  `for(j=0;j<8;j++)h[j]=(h[j]+a[j])|0}return h}`;

const SOLVER_JS = `${SHA256_JS}
function zeros(h){var z=0;for(var i=0;i<8;i++){if(h[i]===0){z+=32;continue}return z+Math.clz32(h[i])}return z}
(function(){var f=document.getElementById("waf-challenge"),d=+f.dataset.difficulty,nonce=f.dataset.nonce,i=0;
function step(){for(var k=0;k<5000;k++,i++){if(zeros(sha256(nonce+":"+i))>=d){f.answer.value=String(i);return done()}}setTimeout(step,0)}
function done(){var r=f.dataset.replay;if(!r){f.submit();return}
fetch(f.action,{method:"POST",body:new URLSearchParams(new FormData(f)),credentials:"same-origin",redirect:"manual"}).then(function(){
var g=document.createElement("form");g.method="POST";g.action=f.ret.value;new URLSearchParams(atob(r)).forEach(function(v,k){var x=document.createElement("input");x.type="hidden";x.name=k;x.value=v;g.appendChild(x)});document.body.appendChild(g);g.submit()})}
step()})();`;

export interface ChallengePageInput {
  readonly token: string;
  readonly nonce: string;
  readonly difficulty: number;
  /** Path and query to return to (same origin). */
  readonly returnTo: string;
  /** The original urlencoded form body, re-submitted after a POST challenge. */
  readonly replay?: string;
  readonly traceId: string;
  /** A per-response CSP nonce for the inline script and style. */
  readonly cspNonce: string;
}

/** The challenge page (403, no-store, a CSP that only allows its own inline script). */
export function challengePage(input: ChallengePageInput): Response {
  const replay = input.replay === undefined
    ? ""
    : ` data-replay="${escapeHtml(btoa(input.replay))}"`;
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>Checking your browser</title>
<style nonce="${input.cspNonce}">body{font-family:system-ui,sans-serif;display:flex;min-height:100vh;margin:0;align-items:center;justify-content:center;background:#f5f6f8;color:#1f2933}main{background:#fff;border-radius:8px;padding:2rem 2.5rem;max-width:34rem}</style></head>
<body><main><h1>Checking your browser</h1><p>This takes a moment and needs JavaScript.</p>
<form id="waf-challenge" method="POST" action="${CHALLENGE_PATH}" data-nonce="${
    escapeHtml(input.nonce)
  }" data-difficulty="${input.difficulty}"${replay}>
<input type="hidden" name="token" value="${
    escapeHtml(input.token)
  }"><input type="hidden" name="answer" value="">
<input type="hidden" name="ret" value="${escapeHtml(input.returnTo)}"></form>
<noscript><p>Please enable JavaScript to continue.</p></noscript>
<p>traceId: <code>${input.traceId}</code></p></main>
<script nonce="${input.cspNonce}">${SOLVER_JS}</script></body></html>`;
  return new Response(body, {
    status: 403,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-waf-trace-id": input.traceId,
      "x-waf-challenge": "1",
      "content-security-policy":
        `default-src 'none'; script-src 'nonce-${input.cspNonce}'; style-src 'nonce-${input.cspNonce}'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
    },
  });
}

/** Only same-origin paths are accepted as a return target (no open redirect). */
export function safeReturn(value: string | null): string {
  if (value === null || !value.startsWith("/") || value.startsWith("//") || value.includes("\\")) {
    return "/";
  }
  return value;
}
