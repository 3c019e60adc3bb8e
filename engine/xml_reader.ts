/**
 * A linear, bounded XML reader for inspection (XML APIs, SOAP, RSS, SVG uploads).
 *
 * It reports element text (CDATA included) and attribute values with their place in the
 * document (`/Envelope/Body/login/user`, `/root/a@probe`). It resolves nothing: no DTD, no
 * external or internal entities (the XXE detector judges the DTD itself); character
 * references and the predefined entities are left for the normaliser, which decodes them as
 * an XML parser would. Every construct is found with one forward `indexOf`, so the cost is
 * linear in the text, and malformed markup degrades to text.
 */

/** Receives one value; returns false to stop reading. */
export type XmlSink = (path: string, value: string) => boolean;

/** Open elements that extend a path; deeper elements keep the deepest path. */
const MAX_DEPTH = 32;
const NAME_START = /[A-Za-z_:]/;
const NAME_END = /[\s/>=]/;
const SPACE = /\s/;
const VALUE_END = /[\s>]/;
/** Open elements searched for the match of an end tag, so stray end tags cost a constant. */
const CLOSE_SEARCH = 64;

/**
 * Reads an XML document.
 *
 * @param text the document, possibly truncated
 * @param sink called for each non-blank text run and each attribute value
 * @returns true when at least one element was read
 */
export function readXml(text: string, sink: XmlSink): boolean {
  const paths: string[] = [""];
  let elements = 0;
  let textStart = 0;
  let i = 0;
  const n = text.length;
  const flush = (end: number): boolean => {
    if (end > textStart) {
      const t = text.slice(textStart, end);
      if (t.trim().length > 0) return sink(paths[paths.length - 1]! || "/", t);
    }
    return true;
  };
  while (i < n) {
    const lt = text.indexOf("<", i);
    if (lt < 0) break;
    if (text.startsWith("<!--", lt)) {
      if (!flush(lt)) return true;
      i = skipPast(text, "-->", lt + 4);
      textStart = i;
    } else if (text.startsWith("<![CDATA[", lt)) {
      if (!flush(lt)) return true;
      const close = text.indexOf("]]>", lt + 9);
      const body = text.slice(lt + 9, close < 0 ? n : close);
      if (body.trim().length > 0 && !sink(paths[paths.length - 1]! || "/", body)) return true;
      i = close < 0 ? n : close + 3;
      textStart = i;
    } else if (text.startsWith("<?", lt)) {
      if (!flush(lt)) return true;
      i = skipPast(text, "?>", lt + 2);
      textStart = i;
    } else if (text.startsWith("<!", lt)) {
      if (!flush(lt)) return true;
      i = skipDeclaration(text, lt + 2);
      textStart = i;
    } else if (text.charCodeAt(lt + 1) === 47 /* / */) {
      if (!flush(lt)) return true;
      const gt = text.indexOf(">", lt + 2);
      const name = text.slice(lt + 2, gt < 0 ? n : gt).trim();
      closeElement(paths, name);
      i = gt < 0 ? n : gt + 1;
      textStart = i;
    } else if (NAME_START.test(text[lt + 1] ?? "")) {
      if (!flush(lt)) return true;
      elements++;
      const read = readStartTag(text, lt + 1, paths, sink);
      if (read < 0) return true;
      i = read;
      textStart = i;
    } else {
      // `a < b`: a lone angle bracket is text.
      i = lt + 1;
    }
  }
  flush(n);
  return elements > 0;
}

function skipPast(text: string, close: string, from: number): number {
  const at = text.indexOf(close, from);
  return at < 0 ? text.length : at + close.length;
}

/** Skips `<!DOCTYPE ...>` with its internal subset, or any other `<!...>` declaration. */
function skipDeclaration(text: string, from: number): number {
  const gt = text.indexOf(">", from);
  const bracket = text.indexOf("[", from);
  if (bracket >= 0 && (gt < 0 || bracket < gt)) {
    const close = text.indexOf("]", bracket);
    return close < 0 ? text.length : skipPast(text, ">", close);
  }
  return gt < 0 ? text.length : gt + 1;
}

function closeElement(paths: string[], name: string): void {
  // Pop to the matching element; a stray end tag pops nothing.
  const stop = Math.max(1, paths.length - CLOSE_SEARCH);
  for (let k = paths.length - 1; k >= stop; k--) {
    if (paths[k]!.endsWith(`/${name}`)) {
      paths.length = k;
      return;
    }
  }
}

/**
 * Reads `name attr="v" ...>` from just after `<`.
 *
 * @returns the index after the tag, or -1 when the sink asked to stop
 */
function readStartTag(text: string, from: number, paths: string[], sink: XmlSink): number {
  const n = text.length;
  let i = from;
  while (i < n && !NAME_END.test(text[i]!)) i++;
  const name = text.slice(from, i);
  const parent = paths[paths.length - 1]!;
  const path = paths.length > MAX_DEPTH ? parent : `${parent}/${name}`;
  while (i < n) {
    const c = text[i]!;
    if (c === ">") {
      paths.push(path);
      return i + 1;
    }
    if (c === "/" && text[i + 1] === ">") return i + 2;
    if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "/") {
      i++;
      continue;
    }
    const attrStart = i;
    while (i < n && !NAME_END.test(text[i]!)) i++;
    if (i === attrStart) {
      i++;
      continue;
    }
    const attr = text.slice(attrStart, i);
    while (i < n && SPACE.test(text[i]!)) i++;
    if (text[i] !== "=") continue;
    i++;
    while (i < n && SPACE.test(text[i]!)) i++;
    const quote = text[i];
    let value: string;
    if (quote === '"' || quote === "'") {
      const close = text.indexOf(quote, i + 1);
      value = text.slice(i + 1, close < 0 ? n : close);
      i = close < 0 ? n : close + 1;
    } else {
      const start = i;
      while (i < n && !VALUE_END.test(text[i]!)) i++;
      value = text.slice(start, i);
    }
    if (!attr.startsWith("xmlns") && !sink(`${path}@${attr}`, value)) return -1;
  }
  paths.push(path);
  return n;
}
