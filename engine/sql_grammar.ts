/**
 * Expression-level reading of SQL token streams: operands, comparisons and the vocabulary
 * that gives them meaning. The injection rules in `sqli.ts` are written in these terms, so a
 * keyword only counts where SQL grammar would use it.
 */

import type { SqlToken } from "./sql_lexer.ts";
import {
  BREAKOUT_STATEMENTS,
  LITERAL_WORDS as SELECTABLE_WORDS,
  SQL_TYPES,
} from "./sql_vocabulary.ts";

/** Comparison words that turn two operands into a predicate. */
export const COMPARE_WORDS: ReadonlySet<string> = new Set([
  "like",
  "rlike",
  "regexp",
  "between",
  "in",
  "is",
  "sounds",
  "glob",
  "similar",
]);

/**
 * Postfix null tests of PostgreSQL and SQLite (`email notnull`, `id isnull`): a predicate of one
 * operand. Written with a parenthesis, `isnull(x)` is SQL Server's and MySQL's function instead.
 */
const POSTFIX_NULL_TESTS: ReadonlySet<string> = new Set(["isnull", "notnull"]);

/** Clause keywords: never an operand, they start or end an expression. */
export const CLAUSE_WORDS: ReadonlySet<string> = new Set([
  ...COMPARE_WORDS,
  "select",
  "from",
  "where",
  "union",
  "order",
  "group",
  "having",
  "limit",
  "offset",
  "into",
  "procedure",
  "then",
  "else",
  "end",
  "when",
  "as",
  "on",
  "by",
  "values",
  "set",
  "escape",
]);
const COMPARE_OPS: ReadonlySet<string> = new Set([
  "=",
  "==",
  "<",
  ">",
  "<=",
  ">=",
  "<>",
  "!=",
  "<=>",
  "!<",
  "!>",
  // PostgreSQL: JSON containment and key existence, JSON path match, text search, regex.
  "@>",
  "<@",
  "?",
  "?|",
  "?&",
  "@?",
  "@@",
  "~",
  "~*",
  "!~",
  "!~*",
]);
/** Binary arithmetic and string operators that extend an operand. */
const ARITH_OPS: ReadonlySet<string> = new Set([
  "+",
  "-",
  "*",
  "/",
  "%",
  "^",
  "|",
  "&",
  "<<",
  ">>",
  "::",
  // PostgreSQL and MySQL JSON access: `->`, `->>`, `#>`, `#>>`, and `#-` (delete path).
  "->",
  "->>",
  "#>",
  "#>>",
  "#-",
]);
const ARITH_WORDS: ReadonlySet<string> = new Set(["div", "mod", "collate"]);
const LITERAL_WORDS: ReadonlySet<string> = new Set(["null", "true", "false", "unknown"]);
const UNARY: ReadonlySet<string> = new Set(["-", "+", "~", "!"]);

/** What {@link readOperand} found. */
export interface Operand {
  /** Index just past the operand. */
  readonly end: number;
  /** Only literals (numbers, strings, true/false/null), so its value is attacker-fixed. */
  readonly literal: boolean;
  /** Contains a function call or a parenthesised group (subquery, nested expression). */
  readonly complex: boolean;
  /** Normalised text, to recognise `x=x` and `'a'='a'`. */
  readonly key: string;
  /** The SQL type of a PostgreSQL cast (`::jsonb`) that ends a term, when there is one. */
  readonly cast: boolean;
}

/** Index of the next token that is not a comment, or `tokens.length`. */
export function skipComments(tokens: readonly SqlToken[], at: number): number {
  let i = at;
  while (i < tokens.length && tokens[i]!.kind === "comment") i++;
  return i;
}

/** Index just past the parenthesised group opening at `at` (or the end when unbalanced). */
export function skipGroup(tokens: readonly SqlToken[], at: number): number {
  let depth = 0;
  for (let i = at; i < tokens.length; i++) {
    const k = tokens[i]!.kind;
    if (k === "lparen") depth++;
    else if (k === "rparen" && --depth === 0) return i + 1;
  }
  return tokens.length;
}

/** The content of a string token without its quotes, for comparing literal operands. */
export function stringContent(text: string, token: SqlToken): string {
  return text.slice(token.start + 1, token.closed ? token.end - 1 : token.end);
}

/**
 * Reads one operand (`1`, `'a'`, `@@version`, `t.col`, `f(x)`, `(select 1)`, `-1+2`).
 *
 * @returns undefined when no operand starts at `at`
 */
export function readOperand(
  text: string,
  tokens: readonly SqlToken[],
  at: number,
): Operand | undefined {
  let i = skipComments(tokens, at);
  let literal = true;
  let complex = false;
  let key = "";
  let cast = false;
  for (let terms = 0; terms < 16; terms++) {
    while (i < tokens.length) {
      const t = tokens[i]!;
      if ((t.kind === "op" && UNARY.has(t.text)) || (t.kind === "logic" && t.text === "not")) {
        i = skipComments(tokens, i + 1);
      } else if (t.kind === "word" && t.text === "binary") i = skipComments(tokens, i + 1);
      else break;
    }
    const t = tokens[i];
    if (t === undefined) return undefined;
    if (t.kind === "num") {
      key += t.text;
      i++;
    } else if (t.kind === "str") {
      key += stringContent(text, t);
      i++;
    } else if (t.kind === "var" || t.kind === "ident") {
      literal = false;
      key += t.text;
      i++;
    } else if (t.kind === "lparen") {
      literal = false;
      complex = true;
      const end = skipGroup(tokens, i);
      key += text.slice(t.start, tokens[end - 1]!.end);
      i = end;
    } else if (t.kind === "word" && t.text === "array" && tokens[i + 1]?.kind === "ident") {
      // PostgreSQL's `array['a','b']` constructor: the bracket lexes as an identifier.
      key += text.slice(t.start, tokens[i + 1]!.end);
      i += 2;
    } else if (t.kind === "word" && !CLAUSE_WORDS.has(t.text)) {
      if (!LITERAL_WORDS.has(t.text)) literal = false;
      key += t.text;
      i++;
      if (t.call) {
        complex = true;
        const end = skipGroup(tokens, skipComments(tokens, i));
        key += text.slice(tokens[i]?.start ?? t.end, tokens[end - 1]!.end);
        i = end;
        // MySQL's full-text predicate: `MATCH (col) AGAINST ('x' IN BOOLEAN MODE)` is one operand.
        const a = skipComments(tokens, i);
        const against = tokens[a];
        if (t.text === "match" && against?.kind === "word" && against.text === "against") {
          const close = skipGroup(tokens, skipComments(tokens, a + 1));
          key += text.slice(against.start, tokens[close - 1]!.end);
          i = close;
        }
      }
      while (tokens[i]?.kind === "dot" && tokens[i + 1] !== undefined) {
        key += "." + tokens[i + 1]!.text;
        i += 2;
      }
    } else {
      return undefined;
    }
    const op = tokens[skipComments(tokens, i)];
    const arith = op !== undefined && isArith(op);
    if (!arith) break;
    key += op.text;
    i = skipComments(tokens, skipComments(tokens, i) + 1);
    let more: SqlToken | undefined = op;
    while (more?.text === "::") {
      // `'{}'::jsonb`, `x::double precision`: the type converts the value, it adds no operand.
      const type = castType(tokens, skipComments(tokens, i));
      if (type < 0) return undefined;
      cast = true;
      i = type;
      more = tokens[skipComments(tokens, i)];
      if (more === undefined || !isArith(more)) return { end: i, literal, complex, key, cast };
      key += more.text;
      i = skipComments(tokens, skipComments(tokens, i) + 1);
    }
    if (i >= tokens.length) break;
  }
  return { end: i, literal, complex, key, cast };
}

function isArith(op: SqlToken): boolean {
  return (op.kind === "op" && ARITH_OPS.has(op.text)) ||
    (op.kind === "logic" && (op.text === "||" || op.text === "div")) ||
    (op.kind === "word" && ARITH_WORDS.has(op.text));
}

/**
 * Index just past the SQL type name of a cast starting at `at` (`int`, `double precision`,
 * `varchar(10)`, `text[]`), or -1 when no SQL type starts there.
 */
export function castType(tokens: readonly SqlToken[], at: number): number {
  const t = tokens[at];
  if (t?.kind !== "word" || !SQL_TYPES.has(t.text)) return -1;
  let i = at + 1;
  const second = tokens[i];
  if (second?.kind === "word" && (second.text === "precision" || second.text === "varying")) i++;
  if (tokens[i]?.kind === "lparen" && tokens[i + 1]?.kind === "num") {
    const close = skipGroup(tokens, i);
    if (close - i <= 5) i = close;
  }
  return i;
}

/** What {@link readComparison} found. */
export interface Comparison {
  readonly end: number;
  /** Both sides are literals or the same expression: the outcome is attacker-fixed. */
  readonly fixed: boolean;
  readonly complex: boolean;
}

/**
 * Reads `operand <comparison> operand` (also `x between a and b`, `x in (...)`,
 * `x is [not] null`, `x like y`) starting at `at`.
 */
export function readComparison(
  text: string,
  tokens: readonly SqlToken[],
  at: number,
): Comparison | undefined {
  const direct = readFlatComparison(text, tokens, at);
  if (direct !== undefined) return direct;
  // `('1'='1` and `((1=1))`: the comparison sits inside parentheses the value opened.
  let i = at;
  for (let depth = 0; depth < 3 && tokens[i]?.kind === "lparen"; depth++) {
    i = skipComments(tokens, i + 1);
    const inner = readFlatComparison(text, tokens, i);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

function readFlatComparison(
  text: string,
  tokens: readonly SqlToken[],
  at: number,
): Comparison | undefined {
  const left = readOperand(text, tokens, at);
  if (left === undefined) return undefined;
  let i = skipComments(tokens, left.end);
  let t = tokens[i];
  if (t?.kind === "logic" && t.text === "not") t = tokens[i = skipComments(tokens, i + 1)];
  if (t === undefined) return undefined;
  if (t.kind === "word" && !t.call && POSTFIX_NULL_TESTS.has(t.text)) {
    return { end: t.end, fixed: left.literal, complex: left.complex };
  }
  const isOp = t.kind === "op" && COMPARE_OPS.has(t.text);
  const isWord = t.kind === "word" && COMPARE_WORDS.has(t.text);
  if (!isOp && !isWord) return undefined;
  i++;
  if (t.text === "is") {
    const n = tokens[skipComments(tokens, i)];
    const m = n?.kind === "logic" && n.text === "not" ? tokens[skipComments(tokens, i + 1)] : n;
    if (m?.kind !== "word" || !LITERAL_WORDS.has(m.text)) return undefined;
    return { end: m.end, fixed: left.literal, complex: left.complex };
  }
  if (t.text === "sounds") i = skipComments(tokens, i) + 1;
  const right = readOperand(text, tokens, i);
  if (right === undefined) return undefined;
  const fixed = (left.literal && right.literal) || left.key === right.key;
  return { end: right.end, fixed, complex: left.complex || right.complex };
}

/**
 * `drop table x`, `insert into t`, `create user u identified by`, `grant dba to u`,
 * `update t set c=`: a statement keyword with the word its grammar requires, then a name.
 */
export function statementShape(tokens: readonly SqlToken[], i: number): boolean {
  const word = tokens[i]!.text;
  const need = BREAKOUT_STATEMENTS.get(word);
  if (need === undefined) return false;
  const j = skipComments(tokens, i + 1);
  const next = tokens[j];
  if (word === "update") {
    // `update <table> set <column> =`
    const set = tokens[skipComments(tokens, j + 1)];
    return (next?.kind === "word" || next?.kind === "ident") && set?.kind === "word" &&
      set.text === "set";
  }
  if (next?.kind !== "word" || !need.has(next.text)) return false;
  const name = tokens[skipComments(tokens, j + 1)];
  return name !== undefined &&
    (name.kind === "word" || name.kind === "ident" || name.kind === "var");
}

/** True when what follows SELECT reads as a select list rather than English. */
export function selectList(text: string, tokens: readonly SqlToken[], at: number): boolean {
  let i = skipComments(tokens, at);
  const first = tokens[i];
  if (
    first?.kind === "word" &&
    (first.text === "distinct" || first.text === "all" || first.text === "top")
  ) {
    i = skipComments(tokens, i + 1);
    if (first.text === "top" && tokens[i]?.kind === "num") i = skipComments(tokens, i + 1);
  }
  const t = tokens[i];
  if (t === undefined) return false;
  if (t.kind === "op" && t.text === "*") return true;
  if (t.kind === "num" || t.kind === "str" || t.kind === "var" || t.kind === "lparen") return true;
  if (t.kind !== "word" && t.kind !== "ident") return false;
  if (t.call || SELECTABLE_WORDS.has(t.text) || t.text === "case") return true;
  const o = readOperand(text, tokens, i);
  const next = tokens[skipComments(tokens, o?.end ?? i + 1)];
  if (next?.kind === "word" && next.text === "from") return true;
  if (next?.kind !== "comma") return false;
  // `select version,2,3`: a literal among the columns pads the list to the column count.
  for (let j = i; j < tokens.length && j < i + 24; j++) {
    const k = tokens[j]!.kind;
    if (tokens[j - 1]?.kind === "comma" && (k === "num" || k === "str" || k === "var")) return true;
  }
  // "select x, y" is English too: a list of plain names must lead to FROM.
  for (let j = i; j < tokens.length && j < i + 24; j++) {
    if (tokens[j]!.kind === "word" && tokens[j]!.text === "from") return true;
  }
  return false;
}
