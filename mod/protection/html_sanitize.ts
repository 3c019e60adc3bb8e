/**
 * The one wrapper of `linkedom`: sanitises operator-supplied block-page HTML (specification
 * section 4.5). The page is parsed into a DOM and rebuilt from an allow list, never patched
 * with regular expressions, so mixed case, entity-encoded schemes and malformed nesting are
 * judged after the parser has resolved them exactly as a browser would.
 *
 * - Only {@link ALLOWED_TAGS} (the specification's list) survive; {@link DROPPED_WITH_CONTENT}
 *   (script, SVG, MathML, frames, plugins, templates, forms and their controls...) go with
 *   everything inside them; any other tag is unwrapped (its text and allowed children stay).
 *   HTML comments and CDATA are removed.
 * - Attributes starting with `on`, `formaction`, `action`, `method`, `srcdoc`, `srcset` and
 *   namespaced attributes are removed.
 * - `meta` keeps only `charset`; a `meta` with `http-equiv` (refresh, header injection) is
 *   removed entirely.
 * - URL attributes (`href`, `src`, ...) keep only absolute `http:`, `https:`, `mailto:` and
 *   `tel:` URLs; `img` `src` additionally accepts `data:image/<type>;base64,...`. Relative URLs
 *   are dropped too: a block page is served on every protected host and path, where a relative
 *   link would point somewhere the operator did not mean.
 * - `style` elements and attributes lose `@import` rules and every `javascript:`, `vbscript:`,
 *   `expression(`, `behavior:` and `-moz-binding`, checked after CSS comments and escapes are
 *   decoded (so `expr\65ssion(` is caught), repeated until none is left (so removal cannot
 *   splice a new one together), and `<` is removed so the text cannot close its element.
 */
import { parseHTML } from "linkedom";

/** Exactly the tags of specification rule 4.5.1; nothing else survives as an element. */
export const ALLOWED_TAGS: ReadonlySet<string> = new Set([
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
]);

/**
 * Removed together with their content: containers of active content (scripts, frames, plugins,
 * foreign namespaces, templates) and of forms and their controls (a login form on a page users
 * trust is a phishing kit; a control's label is no text worth keeping). Any other tag outside
 * {@link ALLOWED_TAGS} is formatting and is unwrapped: its text stays.
 */
export const DROPPED_WITH_CONTENT: ReadonlySet<string> = new Set([
  "script",
  "noscript",
  "template",
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "param",
  "svg",
  "math",
  "base",
  "link",
  "form",
  "input",
  "button",
  "select",
  "option",
  "optgroup",
  "datalist",
  "textarea",
  "keygen",
  "isindex",
  "output",
  "xmp",
  "plaintext",
  "noembed",
  "noframes",
  "portal",
  "video",
  "audio",
  "source",
  "track",
  "canvas",
  "dialog",
]);

const REMOVED_ATTRIBUTES: ReadonlySet<string> = new Set([
  "formaction",
  "action",
  "method",
  "srcdoc",
  "srcset",
  "ping",
]);
const URL_ATTRIBUTES: ReadonlySet<string> = new Set([
  "href",
  "src",
  "background",
  "poster",
  "cite",
  "longdesc",
  "lowsrc",
  "dynsrc",
  "usemap",
]);
const SAFE_SCHEMES = /^(?:https?|mailto|tel):/i;
const DATA_IMAGE = /^data:image\/[a-z0-9.+-]+;base64,[a-z0-9+/=\s]*$/i;
// deno-lint-ignore no-control-regex -- browsers ignore these characters inside a URL scheme
const URL_IGNORED = /[\x00-\x20\x7f]/g;

const CSS_COMMENT = /\/\*[\s\S]*?(?:\*\/|$)/g;
const CSS_ESCAPE = /\\(?:([0-9a-fA-F]{1,6})\s?|([\s\S]))/g;
const CSS_IMPORT = /@import\b[^;]*(?:;|$)/gi;
const CSS_FORBIDDEN = /javascript:|vbscript:|expression\(|behavior:|-moz-binding|@import/gi;

function decodeCss(text: string): string {
  return text.replace(CSS_COMMENT, "").replace(CSS_ESCAPE, (_m, hex: string, ch: string) => {
    if (hex) {
      const cp = parseInt(hex, 16);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
    }
    return ch === "\n" ? "" : ch;
  });
}

/** Cleans CSS text for a style element or attribute. */
export function sanitizeCss(text: string): string {
  let css = decodeCss(text).replace(/</g, "").replace(CSS_IMPORT, "");
  for (let previous = ""; previous !== css;) {
    previous = css;
    css = css.replace(CSS_FORBIDDEN, "");
  }
  return css;
}

/** Keeps an absolute http(s)/mailto/tel URL (or an image data URI for `img src`). */
export function safeUrl(value: string, allowDataImage: boolean): string | undefined {
  const compact = value.replace(URL_IGNORED, "");
  if (SAFE_SCHEMES.test(compact)) return value.trim();
  if (allowDataImage && DATA_IMAGE.test(value.trim())) return value.trim();
  return undefined;
}

interface DomNode {
  nodeType: number;
  tagName?: string;
  childNodes: ArrayLike<DomNode>;
  parentNode: DomNode | null;
  textContent: string | null;
  attributes?: ArrayLike<{ name: string; value: string }>;
  getAttribute?(name: string): string | null;
  setAttribute?(name: string, value: string): void;
  removeAttribute?(name: string): void;
  removeChild(child: DomNode): void;
  insertBefore(child: DomNode, ref: DomNode): void;
}

const ELEMENT = 1;
const TEXT = 3;

function cleanAttributes(el: DomNode, tag: string, removed: string[]): void {
  for (const { name, value } of Array.from(el.attributes ?? [])) {
    const lower = name.toLowerCase();
    let keep = true;
    if (tag === "meta") keep = lower === "charset";
    else if (lower.startsWith("on") || REMOVED_ATTRIBUTES.has(lower) || lower.includes(":")) {
      keep = false;
    } else if (URL_ATTRIBUTES.has(lower)) {
      const safe = safeUrl(value, tag === "img" && lower === "src");
      if (safe === undefined) keep = false;
    } else if (lower === "style") {
      el.setAttribute!(name, sanitizeCss(value));
    }
    if (!keep) {
      el.removeAttribute!(name);
      removed.push(`${tag}@${lower}`);
    }
  }
}

function walk(node: DomNode, removed: string[]): void {
  for (const child of Array.from(node.childNodes)) {
    if (child.nodeType === TEXT) continue;
    if (child.nodeType !== ELEMENT) {
      node.removeChild(child);
      removed.push(child.nodeType === 8 ? "comment" : `node(${child.nodeType})`);
      continue;
    }
    const tag = child.tagName!.toLowerCase();
    if (
      DROPPED_WITH_CONTENT.has(tag) ||
      (tag === "meta" && child.getAttribute!("http-equiv") !== null)
    ) {
      node.removeChild(child);
      removed.push(tag === "meta" ? "meta[http-equiv]" : tag);
      continue;
    }
    if (!ALLOWED_TAGS.has(tag)) {
      walk(child, removed);
      for (const grandchild of Array.from(child.childNodes)) node.insertBefore(grandchild, child);
      node.removeChild(child);
      removed.push(`<${tag}> (unwrapped)`);
      continue;
    }
    cleanAttributes(child, tag, removed);
    if (tag === "style") child.textContent = sanitizeCss(child.textContent ?? "");
    else if (tag === "title") child.textContent = (child.textContent ?? "").replace(/</g, "");
    else walk(child, removed);
  }
}

export interface SanitizeResult {
  /** The cleaned document, always a full `<!DOCTYPE html>` page. */
  readonly html: string;
  /** What was removed, for the operator (e.g. `script`, `a@href`, `comment`). */
  readonly removed: readonly string[];
}

/** Sanitises a block-page template (a full document or a fragment). */
export function sanitizeHtml(input: string): SanitizeResult {
  const source = /<html[\s>]/i.test(input)
    ? input
    : `<!DOCTYPE html><html><head></head><body>${input}</body></html>`;
  // linkedom's types assume the browser DOM library, which this project does not load.
  const { document } = parseHTML(source) as unknown as {
    document: { documentElement: DomNode & { outerHTML: string } };
  };
  const root = document.documentElement;
  const removed: string[] = [];
  // Treat the root like any element: its attributes are cleaned, its children walked.
  cleanAttributes(root, "html", removed);
  walk(root, removed);
  return { html: `<!DOCTYPE html>${root.outerHTML}`, removed };
}
