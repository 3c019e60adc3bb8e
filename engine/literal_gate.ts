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
 *
 * The same pass also keeps where each triple occurs (a chain of positions per triple): when
 * every match of a pattern starts at most `reach` characters before one of its literals (the
 * pattern's parts before the literal have a bounded width), the pattern is tried only at the
 * positions from `reach` before each occurrence of a literal up to it, in order, as a sticky
 * pattern; the first that matches is the match a scan from the start finds (see
 * {@link GatedRegExp}). A long text of prose holds `system`, `name`, `class` or `for` a few
 * times: the pattern is tried there, not from every one of 16 K characters.
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
 * What one text holds: its codes and code pairs, a byte each, and its code triples, a bit each
 * (32 KB, which stays in the nearest caches, where a byte each, 256 KB, did not: the pass's
 * cost was its misses there).
 */
class Table {
  text = "";
  /** The last slice of `text` this table answered for, and where it starts in `text`. */
  slice = "";
  sliceShift = 0;
  /** Whether `text` is all ASCII: its lower-case copy then has the same codes, place by place. */
  ascii = false;
  /** `text` in lower case, made when a detector's lower-case copy of it is first seen. */
  lower: string | undefined;
  readonly one = new Uint8Array(64);
  readonly two = new Uint8Array(64 * 64);
  readonly three = new Int32Array((64 * 64 * 64) >> 5);
  /**
   * Per triple a positional pattern's literal starts with ({@link WANTED}), where its last
   * occurrence starts; valid where `three` holds it.
   */
  readonly head = new Int32Array(64 * 64 * 64);
  /** Per position, where the previous occurrence of the triple starting there starts, or -1. */
  next = new Int32Array(0);
  /** {@link wantedVersion} when the text was read: later patterns' triples have no chains. */
  version = 0;

  fill(text: string): void {
    this.text = text;
    this.slice = "";
    this.lower = undefined;
    this.one.fill(0);
    this.two.fill(0);
    this.three.fill(0);
    const n = text.length;
    if (this.next.length < n) this.next = new Int32Array(n);
    this.version = wantedVersion;
    // An ASCII text is read as its UTF-8 bytes, the same codes place by place: a typed array
    // reads faster than a (sliced) string's charCodeAt.
    if (BYTES.length < n) BYTES = new Uint8Array(n);
    const { read, written } = ENCODER.encodeInto(text, BYTES.subarray(0, n));
    if (read === n && written === n) {
      this.#fillBytes(BYTES, n);
      this.ascii = true;
    } else this.ascii = this.#fillText(text, n) < 128;
  }

  /**
   * The pass over a text's bytes (an ASCII text) or its characters, one loop each so each reads
   * one kind of unit: the first pair starts with code 0 ("a"), a pair too many only means
   * "maybe"; triples are kept from the third character on, with the chain of where each wanted
   * one starts. Returns the units or'ed together.
   */
  #fillBytes(units: Uint8Array, n: number): number {
    const one = this.one;
    const two = this.two;
    const three = this.three;
    const next = this.next;
    const head = this.head;
    const wanted = WANTED;
    let p = 0;
    let wide = 0;
    for (let i = 0; i < n; i++) {
      const u = units[i]!;
      wide |= u;
      const c = CODE[u]!;
      p = ((p << 6) | c) & 0x3ffff;
      one[c] = 1;
      two[p & 0xfff] = 1;
      if (i >= 2) {
        const w = p >> 5;
        const bit = 1 << (p & 31);
        const old = three[w]!;
        if ((wanted[w]! & bit) !== 0) {
          const start = i - 2;
          next[start] = (old & bit) !== 0 ? head[p]! : -1;
          head[p] = start;
        }
        three[w] = old | bit;
      }
    }
    return wide;
  }

  /** {@link #fillBytes} for a text with characters above ASCII. */
  #fillText(units: string, n: number): number {
    const one = this.one;
    const two = this.two;
    const three = this.three;
    const next = this.next;
    const head = this.head;
    const wanted = WANTED;
    let p = 0;
    let wide = 0;
    for (let i = 0; i < n; i++) {
      const u = units.charCodeAt(i);
      wide |= u;
      const c = CODE[u]!;
      p = ((p << 6) | c) & 0x3ffff;
      one[c] = 1;
      two[p & 0xfff] = 1;
      if (i >= 2) {
        const w = p >> 5;
        const bit = 1 << (p & 31);
        const old = three[w]!;
        if ((wanted[w]! & bit) !== 0) {
          const start = i - 2;
          next[start] = (old & bit) !== 0 ? head[p]! : -1;
          head[p] = start;
        }
        three[w] = old | bit;
      }
    }
    return wide;
  }

  /**
   * Pushes onto `out` every start, in the text `shift` characters into this table's text and
   * `length` long, from `reach` before an occurrence of `literal` (three codes or more) up to
   * it; false once `out` would pass `limit` entries.
   */
  starts(
    literal: Uint8Array,
    reach: number,
    shift: number,
    length: number,
    out: number[],
    limit: number,
  ): boolean {
    const t = (literal[0]! << 12) | (literal[1]! << 6) | literal[2]!;
    if (!this.#has(t)) return true;
    const text = this.text;
    const next = this.next;
    const n = literal.length;
    for (let at = this.head[t]!; at >= 0; at = next[at]!) {
      const o = at - shift;
      if (o < 0) break;
      if (o + n > length) continue;
      let k = 3;
      while (k < n && CODE[text.charCodeAt(at + k)] === literal[k]) k++;
      if (k < n) continue;
      const from = o - reach < 0 ? 0 : o - reach;
      if (out.length + (o - from + 1) > limit) return false;
      for (let s = from; s <= o; s++) out.push(s);
    }
    return true;
  }

  /** False only when `codes` cannot occur in the text. */
  mayHold(codes: Uint8Array): boolean {
    const n = codes.length;
    if (n === 1) return this.one[codes[0]!] === 1;
    if (n === 2) return this.two[(codes[0]! << 6) | codes[1]!] === 1;
    for (let i = 2; i < n; i++) {
      if (!this.#has((codes[i - 2]! << 12) | (codes[i - 1]! << 6) | codes[i]!)) return false;
    }
    return true;
  }

  /** Whether the triple `t` occurs in the text. */
  #has(t: number): boolean {
    return (this.three[t >> 5]! & (1 << (t & 31))) !== 0;
  }
}

/**
 * The first triples of the literals of every positional pattern made so far: the table keeps
 * where those occur (a chain a triple costs a few stores a character, so only these).
 */
const WANTED = new Int32Array((64 * 64 * 64) >> 5);
/** Counts the triples added to {@link WANTED}. */
let wantedVersion = 0;

/** Adds the first triples of `codes` to {@link WANTED}; the version that then holds them. */
function want(codes: readonly Uint8Array[]): number {
  for (const c of codes) {
    const t = (c[0]! << 12) | (c[1]! << 6) | c[2]!;
    if ((WANTED[t >> 5]! & (1 << (t & 31))) === 0) {
      WANTED[t >> 5] = WANTED[t >> 5]! | (1 << (t & 31));
      wantedVersion++;
    }
  }
  return wantedVersion;
}

/** The bytes of an ASCII text being read into a table. */
let BYTES = new Uint8Array(0);
const ENCODER = new TextEncoder();

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
  const n = text.length;
  const w = t.text;
  if (n > w.length) return undefined;
  let shift = placeIn(w, text);
  // A detector's lower-case copy of the window (or of a part of it): an ASCII text's copy has
  // its codes at the same places.
  if (shift < 0 && t.ascii && n >= MIN_GATED) shift = placeIn(t.lower ??= w.toLowerCase(), text);
  if (shift < 0) return undefined;
  t.slice = text;
  t.sliceShift = shift;
  return t;
}

/** Where `text` lies in `w` when it is `w`, its start or its end; -1 otherwise. */
function placeIn(w: string, text: string): number {
  const n = text.length;
  if (w.length === n) return w === text ? 0 : -1;
  return w.slice(0, n) === text ? 0 : w.slice(w.length - n) === text ? w.length - n : -1;
}

/** Where `text` starts in the table's text (the table {@link tableOf} gave for it). */
function shiftOf(table: Table, text: string): number {
  return text === table.text ? 0 : table.sliceShift;
}

/** Most starts a pattern is tried at before it scans the text instead. */
const MAX_STARTS = 384;
/** The starts to try, reused by every positional search (one runs at a time). */
const STARTS: number[] = [];
const NO_STARTS: readonly number[] = [];

/**
 * Where a pattern can match in `text`: undefined when the table does not know the text or
 * cannot say (scan it all), an empty list when none of `need` occurs, else, when `reach` is
 * finite, the starts to try in ascending order (possibly repeated), or undefined when they are
 * too many.
 */
function startsIn(need: Need, text: string): readonly number[] | undefined {
  if (text.length < MIN_GATED) return undefined;
  const table = tableOf(text);
  if (table === undefined) return undefined;
  let may = false;
  for (const codes of need.codes) {
    if (table.mayHold(codes)) {
      may = true;
      break;
    }
  }
  if (!may) return NO_STARTS;
  // A pattern whose triples the table did not chain (made after it read its text) scans.
  if (!need.positional || need.version > table.version) return undefined;
  const shift = shiftOf(table, text);
  const out = STARTS;
  out.length = 0;
  for (const codes of need.codes) {
    if (!table.starts(codes, need.reach, shift, text.length, out, MAX_STARTS)) return undefined;
  }
  if (out.length > 1) out.sort((a, b) => a - b);
  return out;
}

/**
 * A pattern that first asks whether its literals can occur in a long text. `exec` is what
 * `test`, `match`, `replace` and `split` call, so all of them see the gate; a skipped `exec`
 * answers as a failed one does (`null`, and `lastIndex` back to 0 for a global or sticky one).
 */
class GatedRegExp extends RegExp {
  readonly #need: Need | undefined;
  /** The pattern made sticky, to try it at one start (positional search only). */
  #sticky: RegExp | undefined;
  /**
   * The same pattern as a plain one, for short texts when it keeps no `lastIndex`: the
   * built-in `test` and `exec` of a plain pattern skip the look-up of an overridden `exec`.
   */
  readonly #plain: RegExp | undefined;

  constructor(pattern: string | RegExp, flags?: string) {
    super(pattern, flags);
    const need = needOf(this.source, this.flags);
    // A global or sticky pattern starts where `lastIndex` says: it is only gated.
    this.#need = need === undefined || !need.positional
      ? need
      : this.global || this.sticky
      ? { ...need, positional: false }
      : { ...need, version: want(need.codes) };
    this.#plain = this.global || this.sticky ? undefined : new RegExp(this.source, this.flags);
  }

  override test(text: string): boolean {
    const s = String(text);
    if (s.length < MIN_GATED && this.#plain !== undefined) return this.#plain.test(s);
    return this.exec(s) !== null;
  }

  override exec(text: string): RegExpExecArray | null {
    const s = String(text);
    if (s.length < MIN_GATED && this.#plain !== undefined) return this.#plain.exec(s);
    const need = this.#need;
    const starts = need === undefined ? undefined : startsIn(need, s);
    if (starts === undefined) return super.exec(s);
    if (starts.length === 0) {
      if (this.global || this.sticky) this.lastIndex = 0;
      return null;
    }
    // Every match starts at one of `starts`, so the first start that matches, tried in order,
    // is where a scan from the start finds its match, and the sticky pattern's match there is
    // the scan's: the same pattern at the same position of the same text.
    const sticky = this.#sticky ??= new RegExp(this.source, this.flags + "y");
    let last = -1;
    for (const at of starts) {
      if (at === last) continue;
      last = at;
      sticky.lastIndex = at;
      const m = sticky.exec(s);
      if (m !== null) return m;
    }
    return null;
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
  const need = needOf(re.source, re.flags);
  return need === undefined ? re : new GatedRegExp(re.source, re.flags);
}

/** What a pattern needs: one of its literals, and how far before one a match can start. */
interface Need {
  readonly codes: readonly Uint8Array[];
  /** Most characters from a match's start to the start of the literal it holds. */
  readonly reach: number;
  /** Whether the pattern can be tried at the literals' places: `reach` is bounded, and
   * every literal is three codes or more (the table keeps where triples are). */
  readonly positional: boolean;
  /** The {@link wantedVersion} from which tables chain its literals' first triples. */
  readonly version: number;
}

/** Most characters a positional pattern's literal can lie after the match's start. */
const MAX_REACH = 24;

/** Literal sets by flags and source: `split` builds a new pattern of the same kind per call. */
const NEEDS = new Map<string, Need | undefined>();

/**
 * The literals one of which every match of the pattern contains, as codes; undefined when the
 * pattern has none (or a syntax this reader does not know, which it then leaves alone).
 */
export function literalsOf(source: string, flags: string): Uint8Array[] | undefined {
  return needOf(source, flags)?.codes as Uint8Array[] | undefined;
}

/**
 * How far before the literal it holds a match of the pattern can start, at most (Infinity
 * when unbounded); undefined when the pattern has no literal set.
 */
export function reachOf(source: string, flags: string): number | undefined {
  return needOf(source, flags)?.reach;
}

function needOf(source: string, flags: string): Need | undefined {
  const key = `${flags}/${source}`;
  if (NEEDS.has(key)) return NEEDS.get(key);
  const need = readLiterals(source, flags);
  NEEDS.set(key, need);
  return need;
}

function readLiterals(source: string, flags: string): Need | undefined {
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
  const codes = need.map((s) => Uint8Array.from(s, (ch) => CODE[ch.charCodeAt(0)]!));
  const reach = reachIn(info);
  const positional = reach <= MAX_REACH && codes.every((c) => c.length >= 3);
  return { codes, reach, positional, version: 0 };
}

/**
 * What a piece of pattern matches: `exact`, every string it can match (when few), or else
 * `need`, strings one of which every match contains; neither when nothing is known. `width`
 * is the most characters the piece matches (Infinity when unbounded); `reach` the most
 * characters between the piece's start and the start of the `need` literal a match holds.
 */
interface Info {
  readonly exact?: readonly string[];
  readonly need?: readonly string[];
  readonly reach?: number;
  readonly width: number;
}

const EMPTY: Info = { exact: [""], width: 0 };
const UNBOUNDED: Info = { width: Infinity };

function required(info: Info): readonly string[] | undefined {
  if (info.exact !== undefined) return info.exact.includes("") ? undefined : info.exact;
  return info.need;
}

/** An exact set's literals start where the piece starts. */
function reachIn(info: Info): number {
  return info.exact !== undefined ? 0 : info.reach ?? Infinity;
}

function unique(xs: readonly string[]): string[] {
  return [...new Set(xs)];
}

/** Folds a string as the table does, so `exact` sets deduplicate across case. */
function fold(s: string): string {
  return s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** A literal set and how far after the piece's start its literals start, at most. */
interface Placed {
  readonly set: readonly string[];
  readonly reach: number;
}

/**
 * The better of two literal sets: the longer shortest literal, then the fewer literals, then
 * the nearer to the start.
 */
function better(a: Placed | undefined, b: Placed): Placed {
  if (a === undefined) return b;
  const la = Math.min(...a.set.map((s) => s.length));
  const lb = Math.min(...b.set.map((s) => s.length));
  if (lb !== la) return lb > la ? b : a;
  if (b.set.length !== a.set.length) return b.set.length < a.set.length ? b : a;
  return b.reach < a.reach ? b : a;
}

/** A recursive reader of JavaScript pattern syntax (the parts the engine's patterns use). */
class Reader {
  at = 0;

  constructor(readonly src: string, readonly unicode: boolean) {}

  /** A character's width: two code units in unicode mode (an astral character). */
  get unit(): number {
    return this.unicode ? 2 : 1;
  }

  /** Any one character: nothing known but its width. */
  get any(): Info {
    return { width: this.unit };
  }

  alternation(): Info {
    const branches: Info[] = [this.sequence()];
    while (this.src[this.at] === "|") {
      this.at++;
      branches.push(this.sequence());
    }
    if (branches.length === 1) return branches[0]!;
    const width = Math.max(...branches.map((b) => b.width));
    if (branches.every((b) => b.exact !== undefined)) {
      const all = unique(branches.flatMap((b) => b.exact!));
      if (all.length <= MAX_EXACT) return { exact: all, width };
    }
    const need: string[] = [];
    let reach = 0;
    for (const b of branches) {
      const r = required(b);
      if (r === undefined) return { width };
      need.push(...r);
      reach = Math.max(reach, reachIn(b));
    }
    return { need: unique(need), reach, width };
  }

  sequence(): Info {
    let run: string[] = [""];
    /** Where the run of exact pieces starts, at most; -1 before its first piece. */
    let runStart = -1;
    let width = 0;
    let exact = true;
    let best: Placed | undefined;
    const flush = () => {
      if (!run.includes("")) best = better(best, { set: run, reach: runStart });
      run = [""];
      runStart = -1;
    };
    while (this.at < this.src.length && this.src[this.at] !== "|" && this.src[this.at] !== ")") {
      const item = this.quantified();
      if (item.exact !== undefined && run.length * item.exact.length <= MAX_EXACT) {
        if (runStart < 0) runStart = width;
        run = unique(run.flatMap((a) => item.exact!.map((b) => a + b)));
        width += item.width;
        continue;
      }
      exact = false;
      flush();
      if (item.exact !== undefined) {
        run = [...item.exact];
        runStart = width;
      } else if (item.need !== undefined) {
        best = better(best, { set: item.need, reach: width + reachIn(item) });
      }
      width += item.width;
    }
    if (exact) return { exact: run, width };
    flush();
    return best === undefined ? { width } : { need: best.set, reach: best.reach, width };
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
    const width = atom.width === 0 ? 0 : atom.width * max;
    if (min === 0) {
      if (max === 1 && atom.exact !== undefined && atom.exact.length < MAX_EXACT) {
        return { exact: unique(["", ...atom.exact]), width };
      }
      return { width };
    }
    // The first repetition holds the literal, as the piece alone does.
    const r = required(atom);
    return r === undefined ? { width } : { need: r, reach: reachIn(atom), width };
  }

  atom(): Info {
    const src = this.src;
    const c = src[this.at++]!;
    if (c === "(") return this.group();
    if (c === "[") return this.charClass();
    if (c === ".") return this.any;
    if (c === "^" || c === "$") return EMPTY;
    if (c === "\\") return this.escape(false);
    if (c === "*" || c === "+" || c === "?" || c === ")") throw new Error("syntax");
    if (this.unicode && (c === "{" || c === "}" || c === "]")) throw new Error("syntax");
    return { exact: [fold(c)], width: this.unit };
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
    return known && set.length > 0 && set.length <= 8 ? { exact: set, width: this.unit } : this.any;
  }

  /** After a backslash: a literal character, a class, or an assertion. */
  escape(inClass: boolean): Info {
    const src = this.src;
    const c = src[this.at++];
    if (c === undefined) throw new Error("syntax");
    const unit = this.unit;
    if (c === "b") return inClass ? { exact: ["\b"], width: unit } : EMPTY;
    if (c === "B") return EMPTY;
    if ("dDwWsS".includes(c)) return this.any;
    const simple: Record<string, string> = { n: "\n", r: "\r", t: "\t", v: "\v", f: "\f" };
    if (simple[c] !== undefined) return { exact: [simple[c]!], width: unit };
    if (c === "0" && !/[0-9]/.test(src[this.at] ?? "")) return { exact: ["\0"], width: unit };
    if (/[0-9]/.test(c) || c === "k" || c === "p" || c === "P" || c === "c") {
      // Backreferences, names, properties and control letters: consumed as unknown.
      if (c === "k" || c === "p" || c === "P") {
        const close = src.indexOf(c === "k" ? ">" : "}", this.at);
        if (close < 0) throw new Error("syntax");
        this.at = close + 1;
      } else if (c === "c") this.at++;
      else while (/[0-9]/.test(src[this.at] ?? "")) this.at++;
      // A backreference matches what its group did: any width.
      return c === "p" || c === "P" || c === "c" ? this.any : UNBOUNDED;
    }
    if (c === "x") {
      const hex = src.slice(this.at, this.at + 2);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new Error("syntax");
      this.at += 2;
      return { exact: [fold(String.fromCharCode(parseInt(hex, 16)))], width: unit };
    }
    if (c === "u") {
      if (src[this.at] === "{") {
        const close = src.indexOf("}", this.at);
        if (close < 0) throw new Error("syntax");
        const cp = parseInt(src.slice(this.at + 1, close), 16);
        this.at = close + 1;
        return { exact: [fold(String.fromCodePoint(cp))], width: unit };
      }
      const hex = src.slice(this.at, this.at + 4);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new Error("syntax");
      this.at += 4;
      return { exact: [fold(String.fromCharCode(parseInt(hex, 16)))], width: unit };
    }
    return { exact: [fold(c)], width: unit };
  }
}
