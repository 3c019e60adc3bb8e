/**
 * CSS as an XSS vehicle: script-running CSS (IE `expression()`, bindings, `javascript:` URLs)
 * and the shapes that only make sense when someone fights the CSS parser or a sanitiser.
 *
 * Style that editors and browsers write is plain declarations: `color: red; width: 300px`.
 * Escapes (`\63olor`), comments, braces inside an attribute, a `url(` whose argument runs on
 * into further declarations, and SVG documents pulled in as images, fonts or filters are what
 * html5sec-style vectors use to smuggle script or restyle the page, never what a toolbar emits.
 */

/** CSS that runs script (IE expressions, bindings) or pulls attacker styles. */
export const SCRIPT_CSS =
  /expression\s*\(|behaviou?r\s*:|-moz-binding|(?:^|[\s;{"'])binding\s*:|javascript:|@import/;
/** A comment; one left open runs to the end, as the CSS parser reads it (and a run of `/*` is read once). */
const CSS_COMMENT = /\/\*[\s\S]*?(?:\*\/|$)/g;
const CSS_HEX_ESCAPE = /\\([0-9a-fA-F]{1,6})\s?/g;
const CSS_CHAR_ESCAPE = /\\([^0-9a-fA-F\n])/g;
/** A `\` escape in a declaration: only hand-written obfuscation needs one. */
const CSS_ESCAPE = /\\[0-9a-fA-F]|\\[a-zA-Z]/;
/** `url(` whose argument contains what ends a declaration or opens a comment. */
const URL_BREAKOUT = /url\(\s*['"]?(?!data:)[^()'"]*?(?:[;{}]|\/\*)/;
/** An SVG document used as a CSS resource: it brings its own script-capable DOM. */
const URL_SVG = /url\(\s*['"]?(?:data:image\/svg|[^()'"]*\.svg(?:[#?)'"\s]|$))/;
const BRACES = /[{}]/;
/** A quoted CSS string holding a line break or a further declaration (`'foo\n;color:red'`). */
const STRING_BREAKOUT = /[:,(]\s*(['"])(?=[^'"]*\1)[^'"\n;]*[\n;][^'"]*?(?<![a-z-])[a-z-]+\s*:/;

/** A CSS verdict: rule name without the `xss.` prefix and a score. */
export interface CssVerdict {
  readonly rule: string;
  readonly score: number;
}

/**
 * CSS as the browser reads it: escapes resolved (`\6a ava\script`), comments removed,
 * lower case.
 */
export function cssText(css: string): string {
  let text = css;
  if (text.includes("\\")) {
    text = text.replace(CSS_HEX_ESCAPE, (_, hex: string) => {
      const cp = parseInt(hex, 16);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
    }).replace(CSS_CHAR_ESCAPE, "$1");
  }
  return text.replace(CSS_COMMENT, "").toLowerCase();
}

/**
 * Judges CSS text: a `style` attribute value or the content of a `<style>` element.
 *
 * @param css the CSS as written
 * @param inline true for a `style` attribute, where braces are never needed
 * @returns the strongest verdict, or undefined for plain declarations
 */
export function judgeCss(css: string, inline: boolean): CssVerdict | undefined {
  const read = cssText(css);
  if (SCRIPT_CSS.test(read)) return { rule: "style_script", score: 80 };
  const svg = URL_SVG.exec(read);
  // Inline SVG is attacker markup; an SVG file may just be a designer's background image.
  if (svg !== null && svg[0].includes("data:")) return { rule: "css_svg", score: 70 };
  if (URL_BREAKOUT.test(css)) return { rule: "css_breakout", score: 70 };
  // Icon fonts write `content: "\e600"` in style sheets; inline styles have no such need.
  if (inline && CSS_ESCAPE.test(css)) return { rule: "css_escape", score: 70 };
  if (inline && (BRACES.test(css) || STRING_BREAKOUT.test(css))) {
    return { rule: "css_breakout", score: 70 };
  }
  if (svg !== null) return { rule: "css_svg", score: 60 };
  if (inline && css.includes("/*")) return { rule: "css_comment", score: 60 };
  return undefined;
}
