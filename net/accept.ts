/**
 * Content negotiation shared by both planes, on Hono's `Accept`-family parser (which honours
 * q-values, including `q=0` meaning "not acceptable"): whether a client wants JSON instead of an
 * HTML page, and which response encoding it accepts.
 */
import { parseAccept } from "hono/utils/accept";

/** The highest q the header gives `type` (exact, then `main/*`, then `*\/*`); 0 when none. */
function quality(accepts: ReturnType<typeof parseAccept>, type: string): number {
  const main = type.slice(0, type.indexOf("/") + 1) + "*";
  let exact = -1;
  let range = -1;
  let any = -1;
  for (const a of accepts) {
    const t = a.type.toLowerCase();
    if (t === type) exact = Math.max(exact, a.q);
    else if (t === main) range = Math.max(range, a.q);
    else if (t === "*/*" || t === "*") any = Math.max(any, a.q);
  }
  return exact >= 0 ? exact : range >= 0 ? range : Math.max(any, 0);
}

/**
 * True when the client prefers JSON to HTML: it names JSON, and `application/json` ranks above
 * `text/html` by q-value. A tie (`*\/*`, or both listed alike) and a missing header get HTML.
 */
export function wantsJson(req: Request): boolean {
  const header = req.headers.get("accept");
  if (header === null || !header.includes("json")) return false;
  let wants = preferences.get(header);
  if (wants === undefined) {
    const accepts = parseAccept(header);
    wants = quality(accepts, "application/json") > quality(accepts, "text/html");
    if (header.length <= MEMO_LONGEST) {
      if (preferences.size >= MEMO_SIZE) preferences.clear();
      preferences.set(header, wants);
    }
  }
  return wants;
}

/**
 * The answers for the `Accept` values seen last: clients send a handful of distinct values (a
 * browser's, a fetch library's), so the data plane's pages parse each once, not per request.
 * Bounded in count and in the length of a value kept, so odd values cannot grow it.
 */
const preferences = new Map<string, boolean>();
const MEMO_SIZE = 256;
const MEMO_LONGEST = 256;

export type Encoding = "br" | "gzip";

/**
 * The response encoding to use among those enabled: the named one with the highest q above 0,
 * Brotli on a tie; undefined when neither is acceptable. Only codings the client names count
 * (`*` does not opt a client into compression, as before).
 */
export function pickEncoding(
  header: string | null,
  enabled: { readonly brotli: boolean; readonly gzip: boolean },
): Encoding | undefined {
  if (header === null || header === "") return undefined;
  let br = 0;
  let gzip = 0;
  for (const a of parseAccept(header)) {
    const t = a.type.toLowerCase();
    if (t === "br") br = a.q;
    else if (t === "gzip" || t === "x-gzip") gzip = Math.max(gzip, a.q);
  }
  const qBr = enabled.brotli ? br : 0;
  const qGzip = enabled.gzip ? gzip : 0;
  if (qBr > 0 && qBr >= qGzip) return "br";
  if (qGzip > 0) return "gzip";
  return undefined;
}
