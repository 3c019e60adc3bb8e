// Where a finding's evidence lies in the request, as text segments to draw: pure functions.
// Never HTML: the payload is the attacker's text and only ever goes into text nodes.

const ENCODED = /(?:%[0-9a-f]{2})+/gi;

/** `%XX` sequences decoded where they form UTF-8; `+` as a space in a query. */
export function decoded(text, plusIsSpace = false) {
  const s = plusIsSpace ? text.replaceAll("+", " ") : text;
  return s.replace(ENCODED, (m) => {
    try {
      return decodeURIComponent(m);
    } catch {
      return m;
    }
  });
}

const SPECIAL = /[.*+?^${}()|[\]\\]/g;
/** Evidence that was masked or is empty says nothing about where it is. */
const MASKED = /^\[masked: \d+ characters\]$/;

/** A pattern for `evidence` that tolerates case and runs of white space; null if it has none. */
function evidencePattern(evidence) {
  const text = (evidence ?? "").replace(/…$/, "").trim();
  if (text === "" || MASKED.test(text)) return null;
  const source = text.split(/\s+/).map((w) => w.replace(SPECIAL, "\\$&")).join("\\s+");
  return new RegExp(source, "i");
}

/**
 * `text` as segments `{ text, mark }`, the first match of `evidence` within [from, to) marked;
 * one unmarked segment when it is not found there.
 */
export function marked(text, evidence, from = 0, to = text.length) {
  const re = evidencePattern(evidence);
  const m = re ? re.exec(text.slice(from, to)) : null;
  if (!m || m[0] === "") return [{ text, mark: false }];
  const start = from + m.index;
  const end = start + m[0].length;
  return [
    { text: text.slice(0, start), mark: false },
    { text: text.slice(start, end), mark: true },
    { text: text.slice(end), mark: false },
  ].filter((s) => s.text !== "");
}

/**
 * The request line decoded for reading (`GET host/path?query`), with the finding's evidence
 * marked where its location points (`path`, `query:<name>`, `query_name:<name>`); elsewhere in
 * the line when the location is another part of the URL. `where` says what was marked:
 * "request", "header:<name>" (the caller marks that header), or "" (not in what is stored, such
 * as a body).
 */
export function requestSegments(r) {
  const path = decoded(r.path ?? "");
  const head = `${r.method} ${r.host}`;
  const pairs = (r.query ?? "").split("&").filter((p) => p !== "");
  let line = head + path;
  let from = 0;
  let to = -1;
  const location = r.finding?.location ?? "";
  const [source, name = ""] = location.split(/:(.*)/s);
  if (source.startsWith("path")) [from, to] = [head.length, line.length];
  pairs.forEach((pair, i) => {
    const eq = pair.indexOf("=");
    const key = decoded(eq < 0 ? pair : pair.slice(0, eq), true);
    const value = eq < 0 ? "" : decoded(pair.slice(eq + 1), true);
    line += i === 0 ? "?" : "&";
    if (key === name && source === "query_name") {
      [from, to] = [line.length, line.length + key.length];
    }
    line += key;
    if (eq >= 0) line += "=";
    if (key === name && source === "query") [from, to] = [line.length, line.length + value.length];
    line += value;
  });
  if (!r.finding || source === "header") {
    return { segments: [{ text: line, mark: false }], where: r.finding ? location : "" };
  }
  let segments = to >= 0 ? marked(line, r.finding.evidence, from, to) : [{ text: line }];
  // Not where the location points (a nested name, a normalised value): anywhere in the line.
  if (!segments.some((s) => s.mark)) segments = marked(line, r.finding.evidence);
  const where = segments.some((s) => s.mark) ? "request" : "";
  return { segments: segments.map((s) => ({ text: s.text, mark: !!s.mark })), where };
}
