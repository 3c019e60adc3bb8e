/**
 * A small SQL tokenizer covering the dialect features attackers use across MySQL, MSSQL,
 * PostgreSQL, Oracle and SQLite: every quote style (with doubled-quote and backslash
 * escapes), hex/binary/decimal numbers, `--`, `#` and block comments, MySQL executable
 * comments `/*! ... *\/` (whose content is code, not comment), variables, operators and
 * bracketed identifiers.
 *
 * The tokenizer never fails: unknown characters become `other` tokens, unterminated strings
 * and comments run to the end of the input.
 */

/** Token kinds; `word` covers keywords, identifiers and function names (lower-cased). */
export type SqlTokenKind =
  | "str"
  | "num"
  | "word"
  | "ident"
  | "var"
  | "op"
  | "logic"
  | "lparen"
  | "rparen"
  | "comma"
  | "semi"
  | "dot"
  | "comment"
  | "other";

export interface SqlToken {
  readonly kind: SqlTokenKind;
  /** Lower-cased text for words, logic and operators; the quote character for strings. */
  readonly text: string;
  /** For strings and block comments: whether the closing delimiter was present. */
  readonly closed: boolean;
  /** For words: whether `(` follows (possibly after spaces), i.e. a function call. */
  readonly call: boolean;
  /** Offset of the first character in the lexed text. */
  readonly start: number;
  /** Offset just past the token. */
  readonly end: number;
}

/**
 * Tokens the rules read together: a longer value is read in further windows of this many
 * tokens (see `sqli.ts`), so the bound caps the cost of one reading, not how far into a value
 * an injection is seen.
 */
export const MAX_SQL_TOKENS = 160;

/** Words that are logical connectives in every dialect. */
const LOGIC_WORDS: ReadonlySet<string> = new Set(["and", "or", "xor", "not", "div"]);
const TWO_CHAR_OPS: ReadonlySet<string> = new Set([
  "<>",
  "!=",
  "<=",
  ">=",
  "::",
  ":=",
  "<<",
  ">>",
  "!<",
  "!>",
  "->",
  "||",
  "&&",
  "==",
  // PostgreSQL JSON, array and pattern operators.
  "@>",
  "<@",
  "?|",
  "?&",
  "@?",
  "~*",
  "!~",
  "#>",
  "#-",
]);
/** The two-character operators by their characters' codes (`c1 << 16 | c2`), read without a copy. */
const TWO_CHAR_CODES: ReadonlySet<number> = new Set(
  [...TWO_CHAR_OPS].map((op) => (op.charCodeAt(0) << 16) | op.charCodeAt(1)),
);
const SINGLE_OPS = "=<>+-*/%^|&~!:?{}";
/** One-character strings of ASCII, shared by the tokens instead of a copy each. */
const ASCII_CHARS: readonly string[] = Array.from(
  { length: 128 },
  (_, c) => String.fromCharCode(c),
);

/** The character at `at` as a string, shared for ASCII. */
function charAt(text: string, at: number): string {
  const c = text.charCodeAt(at);
  return c < 128 ? ASCII_CHARS[c]! : text[at]!;
}
const HEX_DIGIT = /[0-9a-fA-F]/;
const EXPONENT_START = /[0-9+-]/;

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isWordStart(c: number): boolean {
  const l = c | 0x20;
  // Non-ASCII letters form identifiers, but MySQL also reads U+00A0 as a space.
  return (l >= 97 && l <= 122) || c === 95 || c === 36 || (c > 0x7f && c !== 0xa0);
}

function isWordPart(c: number): boolean {
  return isWordStart(c) || isDigit(c);
}

/**
 * Tokens already read from a text that agrees with the one being lexed, to take instead of
 * reading again: `tokens` of `text`, where the lexed text's position `i` is the donor's
 * `i + shift`. With `plus`, the two texts are the same length and differ only where the
 * donor holds `+` (the lexed text has a space there: the form-encoded reading); without it,
 * the lexed text is the donor's from `shift` on (what follows a closing quote).
 */
export interface SqlDonor {
  readonly text: string;
  readonly tokens: readonly SqlToken[];
  readonly shift: number;
  readonly plus: boolean;
}

/**
 * Splits text into SQL tokens.
 *
 * @param text the text to read as SQL
 * @param limit tokens produced at most
 * @param donor tokens of an agreeing text, taken where they are what this text gives
 * @returns the tokens of the whole text (or the first `limit`), each token read once
 */
export function lexSql(text: string, limit = Infinity, donor?: SqlDonor): SqlToken[] {
  return lexInto(text, [], 0, limit, donor);
}

/**
 * Lexes the rest of `text` after `tokens`, the first tokens {@link lexSql} gave for it with a
 * limit: the lexer carries no state but its position, so the result is what `lexSql(text)`
 * gives, without reading the first part again.
 *
 * @param text the text `tokens` were read from
 * @param tokens its first tokens; extended in place
 * @param donor as for {@link lexSql}
 * @returns `tokens`, now all of the text's
 */
export function lexRest(text: string, tokens: SqlToken[], donor?: SqlDonor): SqlToken[] {
  return lexInto(text, tokens, tokens.at(-1)?.end ?? 0, Infinity, donor);
}

/**
 * Where the lexer reads a token's characters: a token is a function of the text from its
 * start to this index (inclusive) and of nothing else. A word reads on over spaces to see a
 * `(`; every other token reads at most one character past its end (a number's exponent, a
 * string's doubled quote) or three past its start (`#>>`, `<=>`, `->>`).
 */
function reachOf(text: string, t: SqlToken): number {
  if (t.kind === "word" || t.kind === "logic") {
    let j = t.end;
    while (j < text.length && isSpace(text.charCodeAt(j))) j++;
    return j;
  }
  return Math.max(t.end + 1, t.start + 3);
}

/**
 * Takes the donor's tokens from position `i` on while each is what lexing here would give:
 * the donor's lexer stood at the same place (a token starts there) and read the same
 * characters. Returns the position after the last token taken, or `i` when none was.
 */
function take(
  text: string,
  out: SqlToken[],
  at: number,
  limit: number,
  donor: SqlDonor,
  cursor: { k: number; plus: number },
): number {
  const tokens = donor.tokens;
  const shift = donor.shift;
  let i = at;
  let k = cursor.k;
  while (k < tokens.length && tokens[k]!.start - shift < i) k++;
  while (out.length < limit) {
    const t = tokens[k];
    if (t === undefined || t.start - shift !== i) break;
    if (donor.plus) {
      // A `+` where the token reads makes the texts differ there: read it afresh.
      if (cursor.plus < i) cursor.plus = nextPlus(donor.text, i);
      if (cursor.plus <= reachOf(text, t)) break;
      out.push(t);
    } else {
      out.push(
        shift === 0 ? t : {
          kind: t.kind,
          text: t.text,
          closed: t.closed,
          call: t.call,
          start: t.start - shift,
          end: t.end - shift,
        },
      );
    }
    i = t.end - shift;
    k++;
    // Spaces between tokens are skipped alike; the next token is taken where it starts.
    while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  }
  cursor.k = k;
  return i;
}

/** The first `+` at or after `at`; Infinity when there is none. */
function nextPlus(text: string, at: number): number {
  const p = text.indexOf("+", at);
  return p < 0 ? Infinity : p;
}

function lexInto(
  text: string,
  out: SqlToken[],
  from: number,
  limit: number,
  donor?: SqlDonor,
): SqlToken[] {
  const n = text.length;
  let i = from;
  const cursor = donor === undefined ? undefined : { k: 0, plus: -1 };
  // A closed token that is not a call; strings and block comments say whether they closed.
  const add = (kind: SqlTokenKind, value: string, start: number, end: number) => {
    out.push({ kind, text: value, closed: true, call: false, start, end });
  };
  while (i < n && out.length < limit) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (donor !== undefined) {
      const taken = take(text, out, i, limit, donor, cursor!);
      if (taken !== i) {
        i = taken;
        continue;
      }
    }
    const start = i;
    const next = i + 1 < n ? text.charCodeAt(i + 1) : 0;
    if (c === 39 || c === 34) {
      i = skipString(text, i);
      const closed = text.charCodeAt(i - 1) === c && i - start > 1;
      out.push({ kind: "str", text: ASCII_CHARS[c]!, closed, call: false, start, end: i });
      continue;
    }
    if (c === 96 || c === 91) {
      // `name` (MySQL) and [name] (MSSQL) are identifiers, never strings.
      const close = text.indexOf(c === 96 ? "`" : "]", i + 1);
      i = close < 0 ? n : close + 1;
      add("ident", text.slice(start + 1, close < 0 ? n : close).toLowerCase(), start, i);
      continue;
    }
    if (c === 35 && (next === 62 || next === 45) && pgHashOperator(text, i)) {
      // PostgreSQL's `#>`, `#>>` and `#-` (JSON path operators), not a MySQL `#` comment.
      i += text.charCodeAt(i + 2) === 62 ? 3 : 2;
      add("op", text.slice(start, i), start, i);
      continue;
    }
    if (c === 35 || (c === 45 && next === 45)) {
      const eol = text.indexOf("\n", i);
      i = eol < 0 ? n : eol + 1;
      add("comment", c === 35 ? "#" : "--", start, i);
      continue;
    }
    if (c === 47 && next === 42) {
      if (text.charCodeAt(i + 2) === 33) {
        // MySQL runs the content of /*! ... */ (optionally versioned): lex it as code.
        i += 3;
        while (i < n && isDigit(text.charCodeAt(i))) i++;
        continue;
      }
      const close = text.indexOf("*/", i + 2);
      i = close < 0 ? n : close + 2;
      out.push({ kind: "comment", text: "/*", closed: close >= 0, call: false, start, end: i });
      continue;
    }
    if (c === 42 && next === 47) {
      // The end of an executable comment whose start was consumed above.
      i += 2;
      continue;
    }
    if (isDigit(c) || (c === 46 && isDigit(next))) {
      i = skipNumber(text, i);
      add("num", text.slice(start, i), start, i);
      continue;
    }
    if (
      c === 64 &&
      (next === 62 || next === 63 || (next === 64 && !isWordStart(text.charCodeAt(i + 2))))
    ) {
      // `@>`, `@?` and `@@` before a space: PostgreSQL operators, not variables.
      add("op", text.slice(start, i += 2), start, i);
      continue;
    }
    if (c === 64) {
      i++;
      if (text.charCodeAt(i) === 64) i++;
      while (i < n && (isWordPart(text.charCodeAt(i)) || text.charCodeAt(i) === 46)) i++;
      add("var", text.slice(start, i).toLowerCase(), start, i);
      continue;
    }
    if (isWordStart(c)) {
      let upper = c >= 65 && c <= 90;
      i++;
      for (let d = text.charCodeAt(i); i < n && isWordPart(d); d = text.charCodeAt(++i)) {
        if (d >= 65 && d <= 90) upper = true;
      }
      // N'..', X'..', B'..', E'..' prefixes belong to the string that follows.
      if (i - start === 1 && (text[i] === "'") && "nNxXbBeE".includes(text[start]!)) {
        i = skipString(text, i);
        const closed = text[i - 1] === "'" && i - start > 2;
        out.push({ kind: "str", text: "'", closed, call: false, start, end: i });
        continue;
      }
      // Most words are lower case already: skip the copy `toLowerCase` would make.
      const word = upper || c > 0x7f ? text.slice(start, i).toLowerCase() : text.slice(start, i);
      let j = i;
      while (j < n && isSpace(text.charCodeAt(j))) j++;
      const call = text.charCodeAt(j) === 40;
      // The connectives are two or three letters: longer words skip the set's hashing.
      const kind = word.length <= 3 && LOGIC_WORDS.has(word) ? "logic" : "word";
      out.push({ kind, text: word, closed: true, call, start, end: i });
      continue;
    }
    if (c === 40) add("lparen", "(", start, ++i);
    else if (c === 41) add("rparen", ")", start, ++i);
    else if (c === 44) add("comma", ",", start, ++i);
    else if (c === 59) add("semi", ";", start, ++i);
    else if (c === 46) add("dot", ".", start, ++i);
    else if (TWO_CHAR_CODES.has((c << 16) | next)) {
      // `<=>`, `->>` and `!~*` are the three-character operators.
      const third = text.charCodeAt(i + 2);
      const long = (c === 60 && next === 61 && third === 62) ||
        (c === 45 && next === 62 && third === 62) || (c === 33 && next === 126 && third === 42);
      i += long ? 3 : 2;
      const logic = (c === 124 && next === 124) || (c === 38 && next === 38);
      add(logic ? "logic" : "op", text.slice(start, i), start, i);
    } else if (c < 128 && SINGLE_OPS.includes(ASCII_CHARS[c]!)) {
      add("op", ASCII_CHARS[c]!, start, ++i);
    } else {
      add("other", charAt(text, i), start, ++i);
    }
  }
  return out;
}

/**
 * `#>`, `#>>` or `#-` followed by a space or a quote, as PostgreSQL's JSON path operators are
 * written; MySQL's `#` comments (`admin'#-`) rarely continue that way.
 */
function pgHashOperator(text: string, at: number): boolean {
  const after = text.charCodeAt(at + (text.charCodeAt(at + 2) === 62 ? 3 : 2));
  return isSpace(after) || after === 39 || after === 47;
}

/** Returns the index just past the string starting at `at` (or the end of the text). */
function skipString(text: string, at: number): number {
  const quote = text.charCodeAt(at);
  let i = at + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 92) {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (text.charCodeAt(i + 1) === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return text.length;
}

function skipNumber(text: string, at: number): number {
  let i = at;
  const n = text.length;
  if (text[i] === "0" && (text[i + 1] === "x" || text[i + 1] === "X")) {
    i += 2;
    while (i < n && HEX_DIGIT.test(text[i]!)) i++;
    return i;
  }
  if (text[i] === "0" && (text[i + 1] === "b" || text[i + 1] === "B")) {
    i += 2;
    while (i < n && (text[i] === "0" || text[i] === "1")) i++;
    return i;
  }
  while (i < n && isDigit(text.charCodeAt(i))) i++;
  if (text[i] === ".") {
    i++;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
  }
  if ((text[i] === "e" || text[i] === "E") && EXPONENT_START.test(text[i + 1] ?? "")) {
    i += 2;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
  }
  return i;
}
