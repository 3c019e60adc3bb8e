/**
 * Injection rules over SQL tokens: each rule recognises a statement fragment that only
 * makes sense as injected SQL (a UNION query, a tautology, a stacked statement, a time
 * delay...). Scores depend on how the value enters SQL: right after breaking out of a
 * literal the bar is low, in free text (where English words like "select" and "or" appear)
 * only unmistakable fragments count.
 */

import type { SqlToken } from "./sql_lexer.ts";
import {
  readComparison,
  readOperand,
  selectList,
  skipComments,
  skipGroup,
  statementShape,
  stringContent,
} from "./sql_grammar.ts";
import {
  BREAKOUT_STATEMENTS,
  CLAUSE_ENDS,
  CONDITION_WORDS,
  DELAY_FUNCTIONS,
  ERROR_FUNCTIONS,
  QUOTE_CHAR,
  SCHEMA_NAMES,
  STACKED,
  SYSTEM_PROCEDURE,
} from "./sql_vocabulary.ts";
import { COMMON_FUNCTIONS, EXTRACTION_FUNCTIONS, INFORMATION_FUNCTIONS } from "./sql_functions.ts";

/**
 * How the value reaches SQL: `breakout` after closing a quoted literal, `code` when it
 * starts like SQL (a number, `)`, `;`, a logical operator), `prose` otherwise.
 */
export type Strength = "breakout" | "code" | "prose";

/** A rule hit: score 0..100 and the token where it starts. */
export interface SqlHit {
  readonly rule: string;
  readonly score: number;
  readonly at: number;
}

const STRENGTH_INDEX = { breakout: 0, code: 1, prose: 2 } as const;
/** Scores per rule for [breakout, code, prose]; 0 disables the rule for that strength. */
const SCORES = {
  union: [95, 95, 90],
  tautology: [85, 80, 70],
  condition: [75, 65, 40],
  case: [80, 75, 50],
  stacked: [90, 90, 80],
  delay: [95, 90, 75],
  error: [90, 85, 70],
  file: [90, 90, 80],
  schema: [85, 80, 60],
  subquery: [85, 80, 65],
  truncation: [75, 0, 0],
  concat: [80, 0, 0],
  operator: [70, 0, 0],
  orderby: [80, 75, 45],
  procedure: [80, 75, 45],
  variable: [75, 70, 55],
  statement: [0, 70, 0],
  exec: [90, 90, 85],
  cast: [80, 75, 70],
  function: [80, 70, 70],
  catalog: [85, 75, 75],
  comment: [85, 75, 75],
  number: [80, 75, 0],
  statement_start: [0, 75, 75],
  alias: [80, 75, 0],
  expression_comment: [60, 0, 0],
  dangling: [55, 50, 0],
  literal_list: [0, 60, 60],
} as const satisfies Record<string, readonly [number, number, number]>;
type Rule = keyof typeof SCORES;

/** Where the injection starts in the tokens and how it enters SQL. */
export interface SqlStart {
  /** First token that belongs to the injection. */
  readonly from: number;
  readonly strength: Strength;
}

/**
 * One reading of a token window: the text, its tokens, how they enter SQL and the strongest
 * hit so far. The rules below read it and report to {@link RuleScan.hit}.
 */
class RuleScan {
  best: SqlHit | undefined = undefined;
  readonly column: 0 | 1 | 2;

  constructor(
    readonly text: string,
    readonly tokens: readonly SqlToken[],
    readonly strength: Strength,
  ) {
    this.column = STRENGTH_INDEX[strength];
  }

  hit(rule: Rule, at: number, bonus = 0): void {
    const base = SCORES[rule][this.column];
    if (base === 0) return;
    const score = Math.min(100, base + bonus);
    if (this.best === undefined || score > this.best.score) this.best = { rule, score, at };
  }
}

/**
 * Finds the strongest rule hit among `tokens[start.from..]`.
 *
 * @param text the text the tokens were read from (for literal contents)
 * @param tokens tokens of the injected part
 * @param start the first token that belongs to the injection and how the value enters SQL
 * @param until rules start at tokens before this index only (they still read the tokens after
 *   it); a window of a longer value leaves its second half to the next window, which reads on
 */
export function evaluate(
  text: string,
  tokens: readonly SqlToken[],
  start: SqlStart,
  until = tokens.length,
): SqlHit | undefined {
  const { from, strength } = start;
  const scan = new RuleScan(text, tokens, strength);
  if (strength === "breakout") afterBreakout(scan, from);
  else if (strength === "code" && from === 0) statementRule(scan);
  // The number a value in numeric context starts with is not part of the injection, but
  // what is glued to it is (`1.e(`, `1 as x from`).
  if (strength === "code" && from > 0 && tokens[0]?.kind === "num") numberRules(scan, 0);
  if (from === 0 && strength !== "breakout" && until === tokens.length) {
    if (text.includes("::")) castRule(scan);
    leadingStatement(scan);
  }
  for (let i = from; i < until; i++) {
    const t = tokens[i]!;
    if (t.kind === "logic" && t.text !== "not" && t.text !== "div") {
      // `&&` and `||` also join URL parameters and shell commands; they need a fixed outcome.
      const symbol = t.text === "&&" || t.text === "||";
      const c = readComparison(text, tokens, skipComments(tokens, i + 1));
      if (c !== undefined) {
        if (c.fixed || c.complex) scan.hit("tautology", i, c.fixed ? 0 : -5);
        else if (strength !== "prose" && !symbol) scan.hit("condition", i);
        else if (strength === "prose") scan.hit("condition", i);
      } else if (strength !== "prose" && !symbol) {
        lonePredicate(scan, i);
        danglingComparison(scan, i);
      }
    } else if (t.kind === "word") {
      wordRules(scan, i);
    } else if (t.kind === "comment" && strength !== "prose") {
      gluedComment(scan, i);
    } else if (t.kind === "semi") {
      stackedRule(scan, i);
    } else if (t.kind === "var" && t.text.startsWith("@@") && t.text.length > 3) {
      scan.hit("variable", i);
    } else if (t.kind === "ident" && SCHEMA_NAMES.has(t.text)) {
      // `` from `information_schema` ``: a quoted identifier names the catalog as well.
      const prev = tokens[i - 1];
      scan.hit("schema", i, prev?.kind === "word" && prev.text === "from" ? 25 : 0);
    } else if (t.kind === "num" && tokens[i + 1]?.kind === "word") {
      numberRules(scan, i);
    }
  }
  return scan.best;
}

/**
 * A value that is a PostgreSQL cast expression by itself (`password::int`,
 * `lo_get(16400)::text`, `'{"a":1}'::jsonb #- '{a}'`): casting a column or a function's result
 * to another type is how error-based injection makes PostgreSQL print data, and nothing but SQL
 * writes `::` before a type name.
 */
function castRule(scan: RuleScan): void {
  const { text, tokens } = scan;
  let at = 0;
  // `...(f(x)::jsonb)::int`, `payload='{}'::jsonb @? '$.a'`: junk or a name before the cast.
  while (at < 3 && (tokens[at]?.kind === "dot" || tokens[at]?.kind === "other")) at++;
  if (tokens[at]?.kind === "word" && tokens[at + 1]?.text === "=") at += 2;
  const o = readOperand(text, tokens, at);
  if (o === undefined || !o.cast) return;
  const next = tokens[skipComments(tokens, o.end)];
  if (next === undefined || next.kind === "rparen" || next.kind === "semi") {
    scan.hit("cast", at);
  } else if (readComparison(text, tokens, at) !== undefined) scan.hit("cast", at);
}

/**
 * `1.e(ascii)`, `1.e,`: MySQL reads a number written with a bare exponent as a number and goes
 * on with what follows, so `1.e` glues a number to the keyword or call after it without a
 * space. `1234 AS "alias" FROM`: a number selected under an alias, the middle of a select list.
 */
function numberRules(scan: RuleScan, i: number): void {
  const { tokens } = scan;
  const t = tokens[i]!;
  const next = tokens[i + 1];
  if (t.text.endsWith(".") && next?.kind === "word" && next.text === "e" && next.start === t.end) {
    const after = tokens[i + 2];
    if (after === undefined || after.kind === "lparen" || after.kind === "comma" || next.call) {
      scan.hit("number", i);
    }
    return;
  }
  const as = tokens[skipComments(tokens, i + 1)];
  if (as?.kind !== "word" || as.text !== "as") return;
  const alias = skipComments(tokens, tokens.indexOf(as) + 1);
  const name = tokens[alias];
  const from = tokens[skipComments(tokens, alias + 1)];
  // A quoted alias: "5 as gifts from grandma" is a sentence.
  if (
    (name?.kind === "ident" || (name?.kind === "str" && name.closed)) &&
    from?.kind === "word" && from.text === "from"
  ) scan.hit("alias", i);
}

/**
 * A value that starts with a complete DDL or DML statement (`CREATE FUNCTION f (...)`,
 * ``ALTER TABLE `t` CHANGE ...``, `INSERT INTO t (a) VALUES (1);`). The words alone are
 * English ("drop table", "create user"), so the statement must also be written in SQL's own
 * punctuation: a parenthesised list, a backquoted or bracketed name, a closing `;` or comment.
 */
function leadingStatement(scan: RuleScan): void {
  const { tokens } = scan;
  let i = 0;
  while (i < 2 && (tokens[i]?.kind === "op" || tokens[i]?.kind === "semi")) i++;
  const t = tokens[i];
  if (t?.kind !== "word" || !BREAKOUT_STATEMENTS.has(t.text) || !statementShape(tokens, i)) {
    return;
  }
  // The name is the third token: `create table t (`, `insert into t (`.
  const list =
    tokens[skipComments(tokens, skipComments(tokens, skipComments(tokens, i + 1) + 1) + 1)];
  // The tokens before `i` are operators and `;`, never a quoted name.
  if (list?.kind === "lparen" || punctuated(tokens)) scan.hit("statement_start", i);
}

/**
 * A value that is a SELECT statement by itself, with a column list that calls functions or
 * reads variables (`select current_database();`, `select @@version`). A select list of plain
 * words ("select 2 options"), of `*` without SQL's own punctuation ("select * from", what
 * people search for, name saved queries and files after) or of a word before a spaced parenthesis ("select all users (drop
 * test accounts)") is English.
 */
function statementRule(scan: RuleScan): void {
  const { text, tokens } = scan;
  const first = tokens[0];
  if (first?.kind !== "word" || first.text !== "select") return;
  for (let j = 1; j < tokens.length && j < 24; j++) {
    const t = tokens[j]!;
    if (t.kind === "word" && (t.text === "from" || t.text === "where")) break;
    // `select 0x616263`: a string spelled in hex is how injected SQL avoids quotes.
    const hex = t.kind === "num" && t.text.length > 5 && (t.text[1] === "x" || t.text[1] === "X");
    // `select * from \`movies\` ...;`: a whole statement written in SQL's own punctuation.
    const star = t.kind === "op" && t.text === "*" && j === 1 && punctuated(tokens);
    const call = t.kind === "word" && t.call &&
      (text.charCodeAt(t.end) === 40 || KNOWN_FUNCTIONS.some((set) => set.has(t.text)));
    if (star || hex || t.kind === "var" || call) return scan.hit("statement", 0);
  }
}

/** Keywords a comment written in place of a space sits beside (`SELECT/**\/id/**\/FROM`). */
const GLUE_WORDS: ReadonlySet<string> = new Set([
  "select",
  "union",
  "from",
  "where",
  "order",
  "group",
  "by",
  "having",
  "limit",
  "insert",
  "into",
  "values",
  "update",
  "delete",
  "drop",
  "exec",
  "execute",
  "declare",
  "waitfor",
  "delay",
  "sleep",
  "benchmark",
  "case",
  "when",
  "then",
  "like",
  "null",
  "all",
  "distinct",
]);
/** Longest comment read as a space (`/**\/`, `/*x*\/`, `/*foo*\/`); longer ones are remarks. */
const MAX_GLUED_COMMENT = 24;

/**
 * A block comment in place of a space, glued to a keyword or between a function and its
 * parenthesis (`SELECT/**\/id/**\/FROM/**\/users`, `json_extract/**\/(`): how injected SQL gets
 * past filters that look for spaces; no one formats a query by hand that way, and CSS hacks
 * (`html>/**\/body`) sit beside no SQL keyword. MySQL's executable comments (`/*!`) have their
 * own rule in `sqli.ts`.
 */
function gluedComment(scan: RuleScan, i: number): void {
  const { text, tokens } = scan;
  const t = tokens[i]!;
  const prev = tokens[i - 1];
  const next = tokens[i + 1];
  if (
    t.text !== "/*" || !t.closed || prev === undefined || next === undefined ||
    prev.end !== t.start || next.start !== t.end || t.end - t.start > MAX_GLUED_COMMENT ||
    text.charCodeAt(t.start + 2) === 33
  ) return;
  const keyword = (x: SqlToken) =>
    x.kind === "logic" || (x.kind === "word" && GLUE_WORDS.has(x.text));
  if (keyword(prev) || keyword(next) || (prev.kind === "word" && next.kind === "lparen")) {
    scan.hit("comment", i);
  }
}

/** Whether a statement ends in `;` or a comment, or names something backquoted or bracketed. */
function punctuated(tokens: readonly SqlToken[]): boolean {
  const last = tokens[tokens.length - 1]!;
  return last.kind === "semi" || last.kind === "comment" || tokens.some((x) => x.kind === "ident");
}

/** The functions a select list names with a space before its parenthesis (`version ()`). */
const KNOWN_FUNCTIONS: readonly ReadonlySet<string>[] = [
  EXTRACTION_FUNCTIONS,
  INFORMATION_FUNCTIONS,
  COMMON_FUNCTIONS,
  DELAY_FUNCTIONS,
  ERROR_FUNCTIONS,
];

/**
 * `' or 'x' <`, `xor 7<`, `' or 1=`: a logical operator, an operand and a comparison the value
 * ends in, for the application's own text to complete. A weak sign: prose does not end in `<`.
 */
function danglingComparison(scan: RuleScan, i: number): void {
  const { text, tokens } = scan;
  const o = readOperand(text, tokens, i + 1);
  if (o === undefined || o.end !== tokens.length - 1) return;
  const op = tokens[o.end]!;
  if (op.kind === "op" && DANGLING_OPS.has(op.text)) scan.hit("dangling", i);
}

const DANGLING_OPS: ReadonlySet<string> = new Set(["=", "<", ">", "<=", ">=", "<>", "!=", "-"]);

/**
 * `or 1--`, `and true)`, `or f(x)#`: a logical operator whose operand ends the statement.
 * An operand ending in an unterminated string (`' or 'a`) proves nothing: JSON and prose
 * produce that shape all the time.
 */
function lonePredicate(scan: RuleScan, i: number): void {
  const { text, tokens } = scan;
  const o = readOperand(text, tokens, i + 1);
  if (o === undefined || !(o.literal || o.complex)) return;
  const last = tokens[o.end - 1];
  if (last?.kind === "str" && !last.closed) {
    // `' or ''-'`: an expression of literals that re-opens the application's quote at the
    // end is still built to balance it; a lone `' or 'a` is not.
    const start = skipComments(tokens, i + 1);
    const first = tokens[start];
    if (o.end - start === 1 && TRUTHY_STRING.test(stringContent(text, last))) {
      // `'or'1=1`, `' or '1`: a string that reads as a non-zero number is true.
      scan.hit("tautology", i, -5);
      return;
    }
    if (o.end - start < 3 || first?.kind !== "str" || !first.closed) return;
    scan.hit("condition", i);
    return;
  }
  const after = tokens[skipComments(tokens, o.end)];
  const ends = after === undefined || after.kind === "rparen" || after.kind === "semi" ||
    (after.kind === "word" && CLAUSE_ENDS.has(after.text));
  // A line comment that ends the value cuts off the rest of the statement.
  const truncated = tokens[tokens.length - 1]?.kind === "comment" && o.end < tokens.length;
  if (!ends && tokens[o.end]?.kind !== "comment") return;
  if (numericTautology(scan, i, o.end)) scan.hit("tautology", i);
  else scan.hit("condition", i, truncated ? 10 : 0);
}

/**
 * `1 or true`, `1 OR 1`, `1 xor 1` in numeric context (`WHERE id = <value>`): `=` binds tighter
 * than OR and XOR, so the literal decides the condition for every row (OR with a true literal
 * selects all of them, XOR with any literal flips or keeps the comparison). OR counts only with
 * `true` or the same number as on its left: `4 or 5` is also someone's answer to "how many?".
 */
function numericTautology(scan: RuleScan, i: number, end: number): boolean {
  const { tokens } = scan;
  const left = tokens[i - 1];
  const op = tokens[i]!.text;
  if (scan.strength !== "code" || left?.kind !== "num" || (op !== "or" && op !== "xor")) {
    return false;
  }
  const start = skipComments(tokens, i + 1);
  const right = tokens[start];
  if (end - start !== 1 || right === undefined) return false;
  const value = right.kind === "num" ? right.text : right.kind === "word" ? right.text : "";
  if (op === "xor") return value === "true" || value === "false" || right.kind === "num";
  return value === "true" || (right.kind === "num" && Number(value) === Number(left.text));
}

/** A string literal that SQL's numeric conversion reads as a non-zero number. */
const TRUTHY_STRING = /^\s*[1-9]/;

/** Shapes that only make sense right after a closed literal (`admin'--`, `'||f()||'`). */
function afterBreakout(scan: RuleScan, from: number): void {
  const { text, tokens } = scan;
  let i = from;
  while (tokens[i]?.kind === "rparen") i++;
  const t = tokens[i];
  if (t === undefined) return;
  // The comment must swallow the rest of the value, as in `admin'--`; code after a
  // line comment (`'#id')` in script samples) is something else.
  const last = i === tokens.length - 1;
  const quoted = t.kind === "comment" && QUOTE_CHAR.test(text.slice(t.start, t.end));
  if ((t.kind === "comment" || t.kind === "semi") && last && !quoted) {
    scan.hit("truncation", i);
    return;
  }
  if (t.kind === "word" && BREAKOUT_STATEMENTS.has(t.text)) {
    // `' insert into users values(...)`: SQL Server runs a second statement without `;`.
    if (statementShape(tokens, i)) scan.hit("stacked", i);
    return;
  }
  expressionComment(scan, i);
  const isOp = (t.kind === "op" && t.text !== "?" && t.text !== ":" && t.text !== "!") ||
    (t.kind === "logic" && (t.text === "||" || t.text === "&&"));
  if (!isOp) return;
  const o = readOperand(text, tokens, i + 1);
  if (o === undefined) return;
  // `'+sleep(5)+'`, `'||(select 1)||'`; no database has a one-letter function, which cipher
  // text (`"<W((FS~...`) glues to a quote and an operator by chance.
  const call = tokens[skipComments(tokens, i + 1)];
  const letter = call?.kind === "word" && call.call && call.text.length === 1;
  if (o.complex && !letter) scan.hit("concat", i);
  const after = tokens[skipComments(tokens, o.end)];
  // `'-'`, `' | '`: the value ends right after, closing against the application's quote.
  const short = text.length - (tokens[o.end - 1]?.start ?? 0) <= 4;
  if (o.literal && short && (after === undefined || after.kind === "comment")) {
    scan.hit("operator", i);
  }
}

/**
 * `x'<email--`, `id'is not-id--`, `user'collate nocase--`: right after the literal, a short
 * expression over a column and a line comment that cuts off the rest of the statement. Each
 * piece is ordinary; together they rewrite the condition, which CRS reads at level 2.
 */
function expressionComment(scan: RuleScan, i: number): void {
  const { tokens } = scan;
  const last = tokens.length - 1;
  const end = tokens[last]!;
  const t = tokens[i]!;
  const least = t.kind === "word" && (t.text === "notnull" || t.text === "isnull") ? 1 : 2;
  if (end.kind !== "comment" || end.text === "/*" || last - i < least || last - i > 6) return;
  const opens = t.kind === "op" || (t.kind === "logic" && t.text === "not") ||
    (t.kind === "word" && EXPRESSION_WORDS.has(t.text));
  if (!opens) return;
  for (let j = i + 1; j < last; j++) {
    const k = tokens[j]!.kind;
    if (k !== "word" && k !== "ident" && k !== "op" && k !== "num" && k !== "logic") return;
  }
  scan.hit("expression_comment", i);
}

/** Words that continue an expression right after a literal. */
const EXPRESSION_WORDS: ReadonlySet<string> = new Set([
  "is",
  "like",
  "glob",
  "regexp",
  "rlike",
  "sounds",
  "collate",
  "mod",
  "div",
  "notnull",
  "isnull",
  "between",
  "in",
]);

/**
 * Every word {@link wordRules} can hit on when no `.` stands before it (its name is then the
 * word itself): the words its `switch` and conditions name, and the function and catalog sets
 * it reads. Any other word hits nothing, so it is passed over without the lookups: the words
 * of prose are almost all such words.
 */
export const WORD_RULE_WORDS: ReadonlySet<string> = new Set([
  "union",
  "select",
  "waitfor",
  "into",
  "program",
  "procedure",
  "order",
  "group",
  "exec",
  "execute",
  "as",
  "case",
  "dual",
  ...CONDITION_WORDS,
  ...SCHEMA_NAMES,
  ...DELAY_FUNCTIONS,
  ...ERROR_FUNCTIONS,
]);

/**
 * The first character and length of every word of {@link WORD_RULE_WORDS}: a word whose pair
 * is not here is not in the set, which two reads tell without hashing the word.
 */
const RULE_WORD_SHAPES = new Uint8Array(128 * 32);
for (const w of WORD_RULE_WORDS) {
  const c = w.charCodeAt(0);
  if (c < 128 && w.length < 32) RULE_WORD_SHAPES[(c << 5) | w.length] = 1;
}

/** False only for a word {@link WORD_RULE_WORDS} does not hold. */
export function mayBeRuleWord(word: string): boolean {
  const c = word.charCodeAt(0);
  const n = word.length;
  return c >= 128 || n >= 32 || n === 0 || RULE_WORD_SHAPES[(c << 5) | n] === 1;
}

function wordRules(scan: RuleScan, i: number): void {
  const { text, tokens, strength } = scan;
  const t = tokens[i]!;
  if (
    (!mayBeRuleWord(t.text) || !WORD_RULE_WORDS.has(t.text)) && tokens[i - 1]?.kind !== "dot"
  ) return;
  const name = qualifiedName(tokens, i);
  if (t.call && DELAY_FUNCTIONS.has(name)) return scan.hit("delay", i);
  if (t.call && ERROR_FUNCTIONS.has(name)) return scan.hit("error", i);
  const next = tokens[skipComments(tokens, i + 1)];
  switch (t.text) {
    case "union":
      unionRule(scan, i);
      return;
    case "select":
      if (tokens[i - 1]?.kind === "lparen" && selectList(text, tokens, i + 1)) {
        scan.hit("subquery", i);
      }
      return;
    case "waitfor":
      if (next?.kind === "word" && (next.text === "delay" || next.text === "time")) {
        scan.hit("delay", i);
      }
      return;
    case "into":
      if (next?.kind === "word" && (next.text === "outfile" || next.text === "dumpfile")) {
        // In prose, documentation mentions INTO OUTFILE; only a file name literal is an attack.
        const file = tokens[skipComments(tokens, skipComments(tokens, i + 1) + 1)];
        if (strength !== "prose" || file?.kind === "str") scan.hit("file", i);
      }
      return;
    case "program":
      // PostgreSQL COPY ... TO PROGRAM 'cmd' runs a shell command.
      if (tokens[i - 1]?.text === "to" && next?.kind === "str") scan.hit("file", i);
      return;
    case "procedure":
      // MySQL's `PROCEDURE ANALYSE(...)` appended to a query reports its columns (and runs the
      // error functions given as its arguments).
      if (
        next?.kind === "word" && next.call && (next.text === "analyse" || next.text === "analyze")
      ) {
        scan.hit("procedure", i);
      }
      return;
    case "order":
    case "group": {
      const by = next?.kind === "word" && next.text === "by" ? skipComments(tokens, i + 2) : -1;
      const n = tokens[by];
      // `order by 5` probes the column count; `order by if(1<2,a,b)` is a boolean oracle.
      if (by > 0 && (n?.kind === "num" || (n?.kind === "word" && n.call))) {
        const after = tokens[skipComments(tokens, by + 1)];
        scan.hit("orderby", i, after?.kind === "comment" || after === undefined ? 25 : 0);
      }
      return;
    }
    case "exec":
    case "execute":
      if (next?.kind === "word") {
        // `master` only as the database of `master..xp_cmdshell`, not "Execute Master's".
        const dotted = tokens[skipComments(tokens, i + 1) + 1]?.kind === "dot";
        if (SYSTEM_PROCEDURE.test(next.text) || (next.text === "master" && dotted)) {
          scan.hit("exec", i);
        }
      }
      return;
    case "as": {
      // `) AS Role FROM`, `` ` AS `id` from ``: a column alias, the middle of a select list.
      const prev = tokens[i - 1];
      if (strength === "prose" || prev === undefined) return;
      if (
        prev.kind !== "rparen" && prev.kind !== "ident" && !(prev.kind === "str" && prev.closed)
      ) {
        return;
      }
      const alias = tokens[skipComments(tokens, i + 1)];
      const from = tokens[skipComments(tokens, skipComments(tokens, i + 1) + 1)];
      if (
        (alias?.kind === "word" || alias?.kind === "ident") && from?.kind === "word" &&
        from.text === "from"
      ) scan.hit("alias", i);
      return;
    }
    case "case":
      if (next?.kind === "word" && next.text === "when") {
        const at = skipComments(tokens, i + 2);
        const c = readComparison(text, tokens, at);
        if (c !== undefined) scan.hit("tautology", i, c.fixed ? 0 : -5);
        else {
          const o = readOperand(text, tokens, at);
          const then = o === undefined ? undefined : tokens[skipComments(tokens, o.end)];
          if (then?.kind === "word" && then.text === "then") scan.hit("case", i);
        }
      }
      return;
  }
  const prev = tokens[i - 1];
  const afterFrom = prev?.kind === "word" && prev.text === "from";
  if (SCHEMA_NAMES.has(name) || SCHEMA_NAMES.has(t.text)) {
    scan.hit("schema", i, afterFrom ? 25 : 0);
  } else if (t.text === "dual" && afterFrom && strength !== "prose") {
    // Oracle's one-row table: `... FROM dual` only appears in hand-written queries.
    scan.hit("schema", i);
  } else if (CONDITION_WORDS.has(t.text) && strength !== "prose") {
    const c = readComparison(text, tokens, skipComments(tokens, i + 1));
    if (c !== undefined) scan.hit(c.fixed ? "tautology" : "condition", i);
  }
}

/** `a.b.c` names ending at a call or word, lower-cased, for the function and schema sets. */
function qualifiedName(tokens: readonly SqlToken[], i: number): string {
  let name = tokens[i]!.text;
  let j = i;
  while (j >= 2 && tokens[j - 1]!.kind === "dot" && tokens[j - 2]!.kind === "word") {
    name = `${tokens[j - 2]!.text}.${name}`;
    j -= 2;
  }
  return name;
}

function unionRule(scan: RuleScan, i: number): void {
  const { text, tokens, strength } = scan;
  let j = skipComments(tokens, i + 1);
  const t = tokens[j];
  if (t?.kind === "word" && (t.text === "all" || t.text === "distinct")) {
    j = skipComments(tokens, j + 1);
  }
  while (tokens[j]?.kind === "lparen") j = skipComments(tokens, j + 1);
  const s = tokens[j];
  if (strength === "code" && (s === undefined || s.kind === "num")) {
    // `-1 union--`, `-1 union 1,2,3`: a number, then UNION and nothing or a column list.
    if (s === undefined || tokens[j + 1]?.kind === "comma") scan.hit("union", i, -15);
    return;
  }
  if (s?.kind !== "word" || s.text !== "select") return;
  if (selectList(text, tokens, j + 1)) scan.hit("union", i);
  else if (strength !== "prose" && nothingButMarks(tokens, j + 1)) {
    // `'union select`, `'union select/`: a payload cut off after its SELECT (often inside a
    // comment the sender's tool split), with no column list a query could still go on with.
    scan.hit("union", i, -15);
  }
}

/** Whether the tokens from `j` on are only comments, operators and stray marks. */
function nothingButMarks(tokens: readonly SqlToken[], j: number): boolean {
  for (let k = j; k < tokens.length; k++) {
    const kind = tokens[k]!.kind;
    if (kind !== "comment" && kind !== "op" && kind !== "other") return false;
  }
  return true;
}

/** Stacked statements whose first two words are also a sentence's. */
const ENGLISH_STATEMENTS: ReadonlySet<string> = new Set(["merge", "backup", "restore", "grant"]);

function stackedRule(scan: RuleScan, i: number): void {
  const { text, tokens } = scan;
  const j = skipComments(tokens, i + 1);
  const t = tokens[j];
  if (t?.kind !== "word") return;
  const need = STACKED.get(t.text);
  if (need === undefined) return;
  // "; merge into the left lane", "; backup database weekly": English, unless the value is SQL.
  if (scan.strength === "prose" && ENGLISH_STATEMENTS.has(t.text)) return;
  const k = skipComments(tokens, j + 1);
  const next = tokens[k];
  if (t.text === "update") {
    // `; update users set role=`: "; update the docs" and "; update remember why" are English.
    if (scan.strength !== "prose" || statementShape(tokens, j)) scan.hit("stacked", j);
  } else if (need === "any") {
    if (next !== undefined || t.text === "shutdown") scan.hit("stacked", j);
  } else if (need === "operand") {
    if (t.text === "select" ? selectList(text, tokens, k) : next?.kind === "var") {
      scan.hit("stacked", j);
    }
  } else if (next?.kind === "word" && need.has(next.text)) {
    scan.hit("stacked", j);
  } else if (t.text === "insert" || t.text === "replace") {
    // MySQL's `INSERT t (a) VALUES (...)` and `REPLACE t (...) VALUES`: INTO is optional.
    const open = tokens[skipComments(tokens, k + 1)];
    if ((next?.kind === "word" || next?.kind === "ident") && open?.kind === "lparen") {
      const close = skipGroup(tokens, tokens.indexOf(open));
      const values = tokens[skipComments(tokens, close)];
      if (values?.kind === "word" && values.text === "values") scan.hit("stacked", j);
    }
  }
}
