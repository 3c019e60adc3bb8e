/**
 * A linear, bounded XML reader for inspection (XML APIs, SOAP, RSS, SVG uploads).
 *
 * It reports element text and attribute values with their place in the document
 * (`/Envelope/Body/login/user`, `/root/a@probe`), each text node as a parser hands it to the
 * application: comments and processing instructions dropped, CDATA sections unwrapped and joined
 * with the text around them (`UNI<!---->ON` is `UNION`), and the internal general entities the
 * document's own DTD declares resolved, within bounds (a billion laughs costs the bounds). External
 * entities are not fetched (the XXE detector judges the DTD itself); character references and the
 * predefined entities are left for the normaliser, which decodes them as an XML parser would.
 * Every construct is found with one forward `indexOf`, so the cost is linear in the text, and
 * malformed markup degrades to text.
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
/** Internal entities read from a DTD (a longer replacement text than 4,096 is not one). */
const MAX_ENTITIES = 64;
/** Nesting of entities inside entity values that is expanded. */
const MAX_ENTITY_DEPTH = 4;
/**
 * Characters entity expansion may add to one document: far more than a document that uses
 * entities for what they are for, far less than what an expansion bomb asks for.
 */
const MAX_EXPANSION = 256 * 1024;
/** `<!ENTITY name "value">` or with single quotes; a parameter entity (`%`) is not one. */
const ENTITY_DECL = /<!ENTITY\s+([A-Za-z_:][\w.:-]*)\s+(?:"([^"]{0,4096})"|'([^']{0,4096})')/g;
/** The part of an internal subset read for declarations (real documents declare a few, first). */
const MAX_SUBSET = 16384;
const ENTITY_REF = /&([A-Za-z_:][\w.:-]*);/g;

/** The internal entities of a document and what expanding them has cost so far. */
class Entities {
  readonly #values = new Map<string, string>();
  #budget = MAX_EXPANSION;

  /** Reads the general entities an internal subset declares (the first declaration wins). */
  declare(subset: string): void {
    const head = subset.length > MAX_SUBSET ? subset.slice(0, MAX_SUBSET) : subset;
    for (const m of head.matchAll(ENTITY_DECL)) {
      if (this.#values.size >= MAX_ENTITIES) return;
      const name = m[1]!;
      if (!this.#values.has(name)) {
        this.#values.set(name, m[2] ?? m[3] ?? "");
      }
    }
  }

  /** The text with the declared entities replaced; the rest stays for the normaliser. */
  expand(text: string, depth = 0): string {
    if (this.#values.size === 0 || text.indexOf("&") < 0) return text;
    return text.replace(ENTITY_REF, (ref, name: string) => {
      const value = this.#values.get(name);
      if (value === undefined || depth >= MAX_ENTITY_DEPTH || this.#budget < value.length) {
        return ref;
      }
      this.#budget -= value.length;
      return this.expand(value, depth + 1);
    });
  }
}

/**
 * Reads an XML document.
 *
 * @param text the document, possibly truncated
 * @param sink called for each non-blank text run and each attribute value
 * @returns true when at least one element was read
 */
export function readXml(text: string, sink: XmlSink): boolean {
  const paths: string[] = [""];
  const entities = new Entities();
  let elements = 0;
  let textStart = 0;
  /** The current text node's pieces before `textStart`: text and CDATA around comments. */
  let pieces: string[] = [];
  let i = 0;
  const n = text.length;
  const keep = (end: number) => {
    if (end > textStart) pieces.push(entities.expand(text.slice(textStart, end)));
  };
  const flush = (end: number): boolean => {
    keep(end);
    if (pieces.length === 0) return true;
    const t = pieces.length === 1 ? pieces[0]! : pieces.join("");
    pieces = [];
    return t.trim().length === 0 || sink(paths[paths.length - 1]! || "/", t);
  };
  while (i < n) {
    const lt = text.indexOf("<", i);
    if (lt < 0) break;
    if (text.startsWith("<!--", lt)) {
      // A comment is no part of the text around it: the parser hands over one node.
      keep(lt);
      i = skipPast(text, "-->", lt + 4);
      textStart = i;
    } else if (text.startsWith("<![CDATA[", lt)) {
      keep(lt);
      const close = text.indexOf("]]>", lt + 9);
      pieces.push(text.slice(lt + 9, close < 0 ? n : close));
      i = close < 0 ? n : close + 3;
      textStart = i;
    } else if (text.startsWith("<?", lt)) {
      keep(lt);
      i = skipPast(text, "?>", lt + 2);
      textStart = i;
    } else if (text.startsWith("<!", lt)) {
      if (!flush(lt)) return true;
      i = skipDeclaration(text, lt + 2, entities);
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
      const read = readStartTag(
        text,
        lt + 1,
        paths,
        (path, value) => sink(path, entities.expand(value)),
      );
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

/**
 * Skips `<!DOCTYPE ...>` with its internal subset, or any other `<!...>` declaration; the
 * subset's general entities are declared in `entities`.
 */
function skipDeclaration(text: string, from: number, entities: Entities): number {
  const gt = text.indexOf(">", from);
  const bracket = text.indexOf("[", from);
  if (bracket >= 0 && (gt < 0 || bracket < gt)) {
    const close = text.indexOf("]", bracket);
    entities.declare(text.slice(bracket + 1, close < 0 ? text.length : close));
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
