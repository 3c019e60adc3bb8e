/**
 * Literal gates for the detectors' regular expressions on long texts.
 *
 * A 16 KB window of ordinary prose or JSON passes every detector's cheap gate, so some hundred
 * regular expressions each scan all of it, most from every position. Each pattern needs some
 * literal text to match (`phpinfo`, `java.`, `etc/`, `::`): {@link gated} reads that set from
 * the pattern once, and before a long text is scanned, tests whether any of those literals can
 * occur in it. The test reads a table of the text's characters, pairs and triples, built in one
 * pass and shared by every gated pattern that reads the same text; a triple table answers
 * "maybe" for a literal whose triples all occur, "no" only when one does not, so a pattern is
 * skipped only where it cannot match and every match is the one the pattern finds by itself.
 * The idea is Google Code Search's trigram index (Russ Cox, "Regular Expression Matching with a
 * Trigram Index", 2012), and RE2's prefilter, applied to one text.
 */

/** Texts shorter than this are scanned directly: the table would cost more than the scan. */
const MIN_GATED = 1024;
/** Most strings a node's exact set or a literal set keeps before giving up on it. */
const MAX_EXACT = 64;
const MAX_NEED = 512;

/**
 * Six-bit codes of UTF-16 units: letters folded to one case, digits, the common punctuation,
 * one code for the other ASCII characters and one for all others. A code shared by two characters only makes "maybe" more
 * frequent; the same folding applies to text and literal.
 */
const CODE = new Uint8Array(65536).fill(62);
{
  CODE.fill(63, 0, 128);
  for (let c = 0; c < 26; c++) {
    CODE[97 + c] = c;
    CODE[65 + c] = c;
  }
  for (let d = 0; d < 10; d++) CODE[48 + d] = 26 + d;
  // The punctuation patterns are made of; the rest share the last code.
  const punct = " (){}$_.:/\\<>[]=;'\"%#@&|*+-";
  for (let k = 0; k < punct.length && 36 + k < 62; k++) CODE[punct.charCodeAt(k)] = 36 + k;
  for (const ws of [9, 10, 11, 12, 13]) CODE[ws] = CODE[32]!;
}

/**
 * What one text holds: its codes, code pairs and code triples, a byte each (a store a
 * character, no read-modify-write, is what keeps the pass at a few nanoseconds a character).
 */
class Table {
  text = "";
  /** The last slice of `text` this table answered for. */
  slice = "";
  readonly one = new Uint8Array(64);
  readonly two = new Uint8Array(64 * 64);
  readonly three = new Uint8Array(64 * 64 * 64);

  fill(text: string): void {
    this.text = text;
    this.slice = "";
    const one = this.one;
    const two = this.two;
    const three = this.three;
    one.fill(0);
    two.fill(0);
    three.fill(0);
    // The first two triples start with code 0 ("a"): a triple too many only means "maybe".
    let p = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = CODE[text.charCodeAt(i)]!;
      p = ((p << 6) | c) & 0x3ffff;
      one[c] = 1;
      two[p & 0xfff] = 1;
      three[p] = 1;
    }
  }

  /** False only when `codes` cannot occur in the text. */
  mayHold(codes: Uint8Array): boolean {
    const n = codes.length;
    if (n === 1) return this.one[codes[0]!] === 1;
    if (n === 2) return this.two[(codes[0]! << 6) | codes[1]!] === 1;
    const three = this.three;
    for (let i = 2; i < n; i++) {
      if (three[(codes[i - 2]! << 12) | (codes[i - 1]! << 6) | codes[i]!] === 0) return false;
    }
    return true;
  }
}

/** The table of the window being judged (see {@link gateOn}). */
const WINDOW = new Table();

/**
 * Reads the text the detectors are about to judge into the gates' table: one pass, after which
 * every gated pattern run on that text, on its first or last part (a detector's cut at 16 KB,
 * the text without a window's lead-in), skips itself where its literals are absent. Patterns
 * run on any other text scan it as usual.
 *
 * @param text the decoded window or value
 */
export function gateOn(text: string): void {
  if (text.length >= MIN_GATED && text !== WINDOW.text) WINDOW.fill(text);
}

function tableOf(text: string): Table | undefined {
  const t = WINDOW;
  if (text === t.text || text === t.slice) return t;
  // A slice of the window holds no triple the window does not. Comparing a cut of the window
  // (a view, no copy) is some hundred times faster than `startsWith` on a text built by
  // concatenation (a window's lead-in), which reads it a character at a time.
  const w = t.text;
  const n = text.length;
  if (w.length > n && (w.slice(0, n) === text || w.slice(w.length - n) === text)) {
    t.slice = text;
    return t;
  }
  return undefined;
}

/** Whether any of `need` may occur in `text` (true for texts the table does not know). */
function mayMatch(need: readonly Uint8Array[], text: string): boolean {
  if (text.length < MIN_GATED) return true;
  const table = tableOf(text);
  if (table === undefined) return true;
  for (const codes of need) if (table.mayHold(codes)) return true;
  return false;
}

/**
 * A pattern that first asks whether its literals can occur in a long text. `exec` is what
 * `test`, `match`, `replace` and `split` call, so all of them see the gate; a skipped `exec`
 * answers as a failed one does (`null`, and `lastIndex` back to 0 for a global or sticky one).
 */
class GatedRegExp extends RegExp {
  readonly #need: readonly Uint8Array[];

  constructor(pattern: string | RegExp, flags?: string) {
    super(pattern, flags);
    this.#need = literalsOf(this.source, this.flags) ?? [];
  }

  override exec(text: string): RegExpExecArray | null {
    const s = String(text);
    if (this.#need.length > 0 && !mayMatch(this.#need, s)) {
      if (this.global || this.sticky) this.lastIndex = 0;
      return null;
    }
    return super.exec(s);
  }
}

/**
 * `re` behind its literal gate: the same matches, found only after a cheap test that the text
 * can hold one. A pattern with no literal every match needs is returned unchanged.
 *
 * @param re a compiled pattern
 * @returns a pattern with the same source, flags and matches
 *
 * @example
 * ```ts
 * import { gated } from "./literal_gate.ts";
 * const probe = gated(/(?:^|[^.\w$>])(?:phpinfo|getcwd)\s*\(\s*\)/i);
 * probe.test("a long text without either name".repeat(40)); // false, without a scan
 * ```
 */
export function gated(re: RegExp): RegExp {
  const need = literalsOf(re.source, re.flags);
  return need === undefined ? re : new GatedRegExp(re.source, re.flags);
}

/** Literal sets by flags and source: `split` builds a new pattern of the same kind per call. */
const NEEDS = new Map<string, Uint8Array[] | undefined>();

/**
 * The literals one of which every match of the pattern contains, as codes; undefined when the
 * pattern has none (or a syntax this reader does not know, which it then leaves alone).
 */
export function literalsOf(source: string, flags: string): Uint8Array[] | undefined {
  const key = `${flags}/${source}`;
  if (NEEDS.has(key)) return NEEDS.get(key);
  const need = readLiterals(source, flags);
  NEEDS.set(key, need);
  return need;
}

function readLiterals(source: string, flags: string): Uint8Array[] | undefined {
  // Unicode case folding matches `ſ` for `s` and `K` (Kelvin) for `k`: not ASCII folding.
  if (flags.includes("v") || (flags.includes("i") && flags.includes("u"))) return undefined;
  let info: Info;
  try {
    const reader = new Reader(source, flags.includes("u"));
    info = reader.alternation();
    if (reader.at < source.length) return undefined;
  } catch {
    return undefined;
  }
  const need = required(info);
  if (need === undefined || need.length === 0 || need.length > MAX_NEED) return undefined;
  return need.map((s) => Uint8Array.from(s, (ch) => CODE[ch.charCodeAt(0)]!));
}

/**
 * What a piece of pattern matches: `exact`, every string it can match (when few), or else
 * `need`, strings one of which every match contains; neither when nothing is known.
 */
interface Info {
  readonly exact?: readonly string[];
  readonly need?: readonly string[];
}

const ANY: Info = {};
const EMPTY: Info = { exact: [""] };

function required(info: Info): readonly string[] | undefined {
  if (info.exact !== undefined) return info.exact.includes("") ? undefined : info.exact;
  return info.need;
}

function unique(xs: readonly string[]): string[] {
  return [...new Set(xs)];
}

/** Folds a string as the table does, so `exact` sets deduplicate across case. */
function fold(s: string): string {
  return s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** The better of two literal sets: the longer shortest literal, then the fewer literals. */
function better(a: readonly string[] | undefined, b: readonly string[]): readonly string[] {
  if (a === undefined) return b;
  const la = Math.min(...a.map((s) => s.length));
  const lb = Math.min(...b.map((s) => s.length));
  if (lb !== la) return lb > la ? b : a;
  return b.length < a.length ? b : a;
}

/** A recursive reader of JavaScript pattern syntax (the parts the engine's patterns use). */
class Reader {
  at = 0;

  constructor(readonly src: string, readonly unicode: boolean) {}

  alternation(): Info {
    const branches: Info[] = [this.sequence()];
    while (this.src[this.at] === "|") {
      this.at++;
      branches.push(this.sequence());
    }
    if (branches.length === 1) return branches[0]!;
    if (branches.every((b) => b.exact !== undefined)) {
      const all = unique(branches.flatMap((b) => b.exact!));
      if (all.length <= MAX_EXACT) return { exact: all };
    }
    const need: string[] = [];
    for (const b of branches) {
      const r = required(b);
      if (r === undefined) return ANY;
      need.push(...r);
    }
    return { need: unique(need) };
  }

  sequence(): Info {
    let run: string[] = [""];
    let exact = true;
    let best: readonly string[] | undefined;
    const flush = () => {
      if (!run.includes("")) best = better(best, run);
      run = [""];
    };
    while (this.at < this.src.length && this.src[this.at] !== "|" && this.src[this.at] !== ")") {
      const item = this.quantified();
      if (item.exact !== undefined && run.length * item.exact.length <= MAX_EXACT) {
        run = unique(run.flatMap((a) => item.exact!.map((b) => a + b)));
        continue;
      }
      exact = false;
      flush();
      if (item.exact !== undefined) run = [...item.exact];
      else if (item.need !== undefined) best = better(best, item.need);
    }
    if (exact) return { exact: run };
    flush();
    return best === undefined ? ANY : { need: best };
  }

  quantified(): Info {
    const atom = this.atom();
    const src = this.src;
    const c = src[this.at];
    let min: number;
    let max: number;
    if (c === "*" || c === "+" || c === "?") {
      this.at++;
      min = c === "+" ? 1 : 0;
      max = c === "?" ? 1 : Infinity;
    } else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(this.at));
      if (m === null) return atom;
      this.at += m[0].length;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
    } else return atom;
    if (src[this.at] === "?") this.at++;
    if (min === 1 && max === 1) return atom;
    if (min === 0) {
      if (max === 1 && atom.exact !== undefined && atom.exact.length < MAX_EXACT) {
        return { exact: unique(["", ...atom.exact]) };
      }
      return ANY;
    }
    const r = required(atom);
    return r === undefined ? ANY : { need: r };
  }

  atom(): Info {
    const src = this.src;
    const c = src[this.at++]!;
    if (c === "(") return this.group();
    if (c === "[") return this.charClass();
    if (c === ".") return ANY;
    if (c === "^" || c === "$") return EMPTY;
    if (c === "\\") return this.escape(false);
    if (c === "*" || c === "+" || c === "?" || c === ")") throw new Error("syntax");
    if (this.unicode && (c === "{" || c === "}" || c === "]")) throw new Error("syntax");
    return { exact: [fold(c)] };
  }

  group(): Info {
    const src = this.src;
    let zeroWidth = false;
    if (src[this.at] === "?") {
      const head = /^\?(?::|=|!|<=|<!|<[A-Za-z_$][\w$]*>)/.exec(src.slice(this.at));
      if (head === null) throw new Error("syntax");
      zeroWidth = head[0] !== "?:" && !head[0].startsWith("?<") ||
        head[0] === "?<=" || head[0] === "?<!";
      this.at += head[0].length;
    }
    const inner = this.alternation();
    if (src[this.at] !== ")") throw new Error("syntax");
    this.at++;
    return zeroWidth ? EMPTY : inner;
  }

  charClass(): Info {
    const src = this.src;
    const negated = src[this.at] === "^";
    if (negated) this.at++;
    const chars: string[] = [];
    let known = !negated;
    while (true) {
      if (this.at >= src.length) throw new Error("syntax");
      const c = src[this.at++]!;
      if (c === "]") break;
      let ch: string | undefined;
      if (c === "\\") {
        const e = this.escape(true);
        ch = e.exact?.length === 1 && e.exact[0]!.length === 1 ? e.exact[0] : undefined;
      } else ch = c;
      if (ch === undefined) known = false;
      else if (src[this.at] === "-" && src[this.at + 1] !== "]") {
        // A range: skip its end; its characters are not listed.
        this.at++;
        const end = src[this.at++];
        if (end === "\\") this.escape(true);
        known = false;
      } else chars.push(fold(ch));
    }
    const set = unique(chars);
    return known && set.length > 0 && set.length <= 8 ? { exact: set } : ANY;
  }

  /** After a backslash: a literal character, a class, or an assertion. */
  escape(inClass: boolean): Info {
    const src = this.src;
    const c = src[this.at++];
    if (c === undefined) throw new Error("syntax");
    if (c === "b") return inClass ? { exact: ["\b"] } : EMPTY;
    if (c === "B") return EMPTY;
    if ("dDwWsS".includes(c)) return ANY;
    const simple: Record<string, string> = { n: "\n", r: "\r", t: "\t", v: "\v", f: "\f" };
    if (simple[c] !== undefined) return { exact: [simple[c]!] };
    if (c === "0" && !/[0-9]/.test(src[this.at] ?? "")) return { exact: ["\0"] };
    if (/[0-9]/.test(c) || c === "k" || c === "p" || c === "P" || c === "c") {
      // Backreferences, names, properties and control letters: consumed as unknown.
      if (c === "k" || c === "p" || c === "P") {
        const close = src.indexOf(c === "k" ? ">" : "}", this.at);
        if (close < 0) throw new Error("syntax");
        this.at = close + 1;
      } else if (c === "c") this.at++;
      else while (/[0-9]/.test(src[this.at] ?? "")) this.at++;
      return ANY;
    }
    if (c === "x") {
      const hex = src.slice(this.at, this.at + 2);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new Error("syntax");
      this.at += 2;
      return { exact: [fold(String.fromCharCode(parseInt(hex, 16)))] };
    }
    if (c === "u") {
      if (src[this.at] === "{") {
        const close = src.indexOf("}", this.at);
        if (close < 0) throw new Error("syntax");
        const cp = parseInt(src.slice(this.at + 1, close), 16);
        this.at = close + 1;
        return { exact: [fold(String.fromCodePoint(cp))] };
      }
      const hex = src.slice(this.at, this.at + 4);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new Error("syntax");
      this.at += 4;
      return { exact: [fold(String.fromCharCode(parseInt(hex, 16)))] };
    }
    return { exact: [fold(c)] };
  }
}
