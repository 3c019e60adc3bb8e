/**
 * What a regular expression costs RE2: an estimate of the size of its compiled program.
 *
 * RE2 matches in time linear in the input, but the constant grows with the program: when its
 * DFA cannot cache the states an input leads through, each character costs up to one step per
 * instruction. Counted repetitions are what make programs large, because RE2 writes a
 * repetition out: `x{1,1000}` is a thousand copies of `x`, and `[\s\S]{1,1000}` three times over
 * is some 24,000 instructions, where a 10 KB body took half a minute. `re2-wasm` does not expose
 * RE2's own `ProgramSize()`, so the size is estimated from the pattern: each atom counts what
 * RE2 compiles it to (a character its UTF-8 bytes, a class its byte ranges), repetitions
 * multiply what they repeat (through nesting), alternatives and groups add their jumps and
 * captures. The estimate errs on the large side for classes beyond ASCII.
 *
 * @example
 * ```ts
 * import { programSize } from "./re2_cost.ts";
 * programSize("union\\s+select"); // 27
 * programSize("[\\s\\S]{1,1000}[\\s\\S]{1,1000}[\\s\\S]{1,1000}z") > 20_000; // true
 * ```
 */

/**
 * Estimated instructions a pattern may compile to; larger ones are refused where a pattern is
 * saved (custom rules, ACL and API-security patterns), with this limit in the message.
 */
export const MAX_PROGRAM_SIZE = 1000;

/** What the pattern's program always holds: the match instruction and the unanchored loop. */
const BASE = 3;
/** A class with characters beyond ASCII (a negated class, `.`, `\S`): its UTF-8 byte ranges. */
const WIDE_CLASS = 8;
/** A Unicode property (`\p{L}`): hundreds of ranges, each a few byte ranges in UTF-8. */
const PROPERTY_CLASS = 256;
/** JavaScript's `\s` in Unicode mode: ASCII spaces and a dozen Unicode ones. */
const SPACE_CLASS = 12;

/** Reads a pattern left to right, summing what each part compiles to. */
class Estimator {
  #at = 0;

  constructor(readonly pattern: string, readonly ignoreCase: boolean) {}

  /** The whole pattern's size. */
  total(): number {
    let size = this.#alternation();
    // A stray `)` (RE2 refuses it earlier): the rest is counted too.
    while (this.#at < this.pattern.length) {
      this.#at++;
      size += this.#alternation();
    }
    return size + BASE;
  }

  #peek(): string | undefined {
    return this.pattern[this.#at];
  }

  #alternation(): number {
    let size = this.#sequence();
    while (this.#peek() === "|") {
      this.#at++;
      size += this.#sequence() + 1;
    }
    return size;
  }

  #sequence(): number {
    let size = 0;
    for (let c = this.#peek(); c !== undefined && c !== "|" && c !== ")"; c = this.#peek()) {
      const atom = this.#atom();
      size += this.#quantified(atom);
    }
    return size;
  }

  /** An atom's size times its quantifier's copies, if one follows. */
  #quantified(atom: number): number {
    const c = this.#peek();
    let size = atom;
    if (c === "*" || c === "+" || c === "?") {
      this.#at++;
      size = atom + 1;
    } else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.pattern.slice(this.#at));
      if (m === null) return atom + this.#literalRest();
      this.#at += m[0].length;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? undefined : Number(m[3]);
      size = max === undefined ? min * atom + atom + 1 : max * atom + (max - min);
    } else return atom;
    if (this.#peek() === "?") this.#at++;
    return size;
  }

  /** A `{` that opens no repetition is a literal brace. */
  #literalRest(): number {
    this.#at++;
    return 1;
  }

  #atom(): number {
    const c = this.pattern[this.#at]!;
    if (c === "(") return this.#group();
    if (c === "[") return this.#class();
    if (c === "\\") return this.#escape();
    this.#at++;
    if (c === ".") return WIDE_CLASS;
    if (c === "^" || c === "$") return 1;
    // A literal: its code point's UTF-8 bytes (a surrogate pair is one code point).
    const code = this.pattern.codePointAt(this.#at - 1)!;
    if (code > 0xffff) this.#at++;
    return this.#literal(code);
  }

  #literal(code: number): number {
    const bytes = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    // Case folding beyond ASCII adds the other case's bytes.
    return this.ignoreCase && code >= 0x80 ? bytes * 2 : bytes;
  }

  #group(): number {
    this.#at++;
    let capture = 2;
    if (this.#peek() === "?") {
      const m = /^\?(?:<([A-Za-z_][\w]*)>|P<[A-Za-z_]\w*>|[a-zA-Z-]*:|[a-zA-Z-]*\)|[=!]|<[=!])/
        .exec(this.pattern.slice(this.#at));
      const head = m?.[0] ?? "?";
      this.#at += head.length;
      // Named groups capture; `(?:`, `(?i)` and look-arounds (refused by RE2) do not.
      capture = m?.[1] !== undefined || head.startsWith("?P<") ? 2 : 0;
      if (head.endsWith(")")) return 0;
    }
    const size = this.#alternation();
    if (this.#peek() === ")") this.#at++;
    return size + capture;
  }

  /** A bracket class: its ranges as byte ranges, wide when it reaches beyond ASCII. */
  #class(): number {
    this.#at++;
    let negated = false;
    if (this.#peek() === "^") {
      negated = true;
      this.#at++;
    }
    let ranges = 0;
    let wide = negated;
    let extra = 0;
    let first = true;
    while (this.#at < this.pattern.length) {
      const c = this.pattern[this.#at]!;
      if (c === "]" && !first) {
        this.#at++;
        break;
      }
      first = false;
      if (c === "\\") {
        const e = this.pattern[this.#at + 1];
        this.#at += 2;
        if (e === "p" || e === "P") {
          this.#skipBraces();
          extra += PROPERTY_CLASS;
        } else if (e === "S" || e === "W" || e === "D") wide = true;
        else if (e === "s") extra += SPACE_CLASS;
        else if (e === "w") ranges += 4;
        else if (e === "d") ranges += 1;
        else if (e === "u" || e === "x") {
          const code = this.#escapedCode(e);
          if (code >= 0x80) wide = true;
          ranges += 1;
        } else ranges += 1;
        continue;
      }
      const code = this.pattern.codePointAt(this.#at)!;
      this.#at += code > 0xffff ? 2 : 1;
      if (code >= 0x80) wide = true;
      if (this.pattern[this.#at] === "-" && this.pattern[this.#at + 1] !== "]") {
        this.#at++;
        const to = this.pattern.codePointAt(this.#at) ?? 0;
        this.#at += to > 0xffff ? 2 : 1;
        if (to >= 0x80) wide = true;
      }
      ranges += 1;
    }
    // Case folding doubles the letter ranges.
    if (this.ignoreCase) ranges *= 2;
    return (wide ? WIDE_CLASS + ranges * 3 : ranges * 2) + extra;
  }

  /** A `\uXXXX`, `\u{...}` or `\xXX` escape's code point (the escape letter already read). */
  #escapedCode(kind: string): number {
    const rest = this.pattern.slice(this.#at);
    const m = kind === "x"
      ? /^[0-9a-fA-F]{2}/.exec(rest)
      : /^\{[0-9a-fA-F]+\}|^[0-9a-fA-F]{4}/.exec(rest);
    if (m === null) return kind.charCodeAt(0);
    this.#at += m[0].length;
    return parseInt(m[0].replace(/[{}]/g, ""), 16);
  }

  #skipBraces(): void {
    if (this.#peek() !== "{") return;
    const close = this.pattern.indexOf("}", this.#at);
    this.#at = close < 0 ? this.pattern.length : close + 1;
  }

  #escape(): number {
    const e = this.pattern[this.#at + 1];
    this.#at += 2;
    switch (e) {
      case undefined:
        return 1;
      case "d":
        return 2;
      case "w":
        return 8;
      case "s":
        return SPACE_CLASS;
      case "D":
      case "W":
      case "S":
        return WIDE_CLASS + 12;
      case "b":
      case "B":
      case "A":
      case "z":
        return 1;
      case "p":
      case "P":
        this.#skipBraces();
        return PROPERTY_CLASS;
      case "u":
      case "x":
        return this.#literal(this.#escapedCode(e));
      default:
        return 1;
    }
  }
}

/**
 * Estimates the number of instructions RE2 compiles `pattern` to.
 *
 * @param pattern the expression source (JavaScript syntax, Unicode mode), already accepted by RE2
 * @param ignoreCase whether it is matched case-insensitively
 * @returns the estimated program size, at least 1
 */
export function programSize(pattern: string, ignoreCase = false): number {
  return new Estimator(pattern, ignoreCase).total();
}
