/**
 * SQL injection detector.
 *
 * Like libinjection, it reads the value in each context an application could paste it into:
 * as-is (numeric or code context), and inside a single- or double-quoted literal. In a quoted
 * context the value only matters if it closes the literal; what follows the closing quote is
 * then judged as SQL by the rules in `sql_rules.ts`. English text that mentions "select" or
 * "union" does not form those statement fragments, so it passes.
 */

import type { DetectorInput, Finding } from "./types.ts";
import { lexRest, lexSql, MAX_SQL_TOKENS, type SqlDonor, type SqlToken } from "./sql_lexer.ts";
import { evaluate, type SqlHit, type SqlStart } from "./sql_rules.ts";
import {
  BREAKOUT_STATEMENTS,
  DELAY_FUNCTIONS,
  ERROR_FUNCTIONS,
  numberTrigger,
  PROSE_TRIGGER,
  SQL_TRIGGER,
} from "./sql_vocabulary.ts";
import { COMPARE_WORDS } from "./sql_grammar.ts";
import { makeFinding } from "./make_finding.ts";
import { judgeFragment, judgeWord } from "./sql_fragments.ts";
import { gated } from "./literal_gate.ts";

/**
 * Primes and full-width quotes, which legacy code-page conversions ("best fit") turn into
 * ASCII quotes. Typographic quotes (`’`, `“`) are left alone: prose is full of them.
 */
const LOOKALIKE_QUOTE = gated(/[\u2032\uff07\u2033\uff02]/);
const SINGLE_LOOKALIKE = /[\u2032\uff07]/g;
const DOUBLE_LOOKALIKE = /[\u2033\uff02]/g;

/**
 * MySQL's executable comment around a keyword (`/*!50000select`, `/*!union*\/`): only MySQL
 * reads it, so only injected SQL writes it. Script bundles open licence comments with `/*!`
 * followed by a name and a version (`/*! select2 4.0`), not a bare SQL keyword.
 */
const EXECUTABLE_COMMENT =
  /\/\*!\d{0,6}\s*(?:select|union|and|or|from|where|insert|update|delete|drop|concat|order|having|limit|sleep)(?![\w$])/i;
/** Values without any of these cannot change a SQL statement's structure. */
const SQL_SYNTAX = /['"`()\s;#=<>@|&*\/:-]/;
/** Tokens that show a value is written as SQL from its first character. */
const CODE_START_WORDS: ReadonlySet<string> = new Set([
  "union",
  "select",
  "order",
  "group",
  "having",
  "waitfor",
  "procedure",
  "limit",
  "into",
  "exec",
  "execute",
  "declare",
  "case",
  "where",
]);

/** The strongest hit of {@link analyzeSql} with the offset of its evidence. */
export interface SqlVerdict {
  readonly rule: string;
  readonly score: number;
  /** Offset in the analysed text where the evidence starts. */
  readonly offset: number;
}

/**
 * Judges one decoded value as a SQL injection candidate.
 *
 * @param text decoded value
 * @returns the strongest rule hit over all contexts, or undefined
 */
export function analyzeSql(text: string): SqlVerdict | undefined {
  return readSql(text, undefined).verdict;
}

/** What {@link readSql} found, and the tokens it read the value as (none when it did not lex). */
interface SqlReading {
  readonly verdict: SqlVerdict | undefined;
  readonly tokens: readonly SqlToken[] | undefined;
}

/**
 * {@link analyzeSql}, lexing with the tokens `donor` has where they are the same (see
 * `SqlDonor`): the answer is the one lexing afresh gives.
 */
function readSql(text: string, donor: SqlDonor | undefined): SqlReading {
  const fragment = text.length <= 96 ? judgeFragment(text) : undefined;
  let best: SqlVerdict | undefined = fragment === undefined
    ? undefined
    : { rule: `sqli.${fragment.rule}`, score: fragment.score, offset: 0 };
  if (text.length < 3 || !SQL_SYNTAX.test(text)) return { verdict: best, tokens: undefined };
  if (!SQL_TRIGGER.test(text) && !numberTrigger(text)) return { verdict: best, tokens: undefined };
  if (text.includes("/*!")) {
    const exec = EXECUTABLE_COMMENT.exec(text);
    if (exec !== null && (best === undefined || best.score < 75)) {
      best = { rule: "sqli.comment", score: 75, offset: exec.index };
    }
  }
  const consider = (hit: SqlHit | undefined, tokens: readonly SqlToken[], shift: number) => {
    if (hit === undefined || (best !== undefined && best.score >= hit.score)) return;
    const offset = (tokens[hit.at]?.start ?? 0) + shift;
    best = { rule: `sqli.${hit.rule}`, score: hit.score, offset };
  };
  const all = lexLong(text, donor);
  const raw = firstWindow(all);
  const start = codeStart(raw);
  consider(evaluate(text, raw, start), raw, 0);
  readOn(text, all, consider, 0);
  for (const quote of QUOTES) {
    if (text.indexOf(quote) < 0) continue;
    const escaped = literalEnd(text, quote, true);
    if (stringArgument(text, escaped)) continue;
    breakout(text, escaped, consider, all);
    // Without backslash escapes the literal ends earlier when a quote before it is escaped.
    if (text.indexOf("\\") >= 0) {
      const plain = literalEnd(text, quote, false);
      if (plain !== escaped) breakout(text, plain, consider, all);
    }
  }
  const verdict = best === undefined || !TEMPLATE_RULES.has(best.rule) || !template(text)
    ? best
    : { rule: best.rule, score: Math.min(best.score, TEMPLATE_CAP), offset: best.offset };
  return { verdict, tokens: all };
}

/**
 * A bind placeholder as a comparison's operand (`= ?`, `LIKE UPPER(%s)`, `= $1`, `IN (:ids)`)
 * or opening a `VALUES` list (`VALUES ($1, $2)`):
 * the text of a prepared statement, as a query log or an error report carries it (Django's and
 * Laravel's breadcrumbs). Sent as SQL text the placeholder is a syntax error, and bound by a
 * driver the count of parameters no longer matches, so such a value runs nothing.
 */
const PLACEHOLDER_OPERAND =
  /\bvalues\s*\(\s*(?:\?|%s|\$\d{1,2}|:[a-z_]\w{0,31})\s*[,)]|(?:[=<>]|\blike|\bin)\s*(?:[a-z_]\w{0,31}\s*)?\(?\s*(?:\?|%s|\$\d{1,2}|:[a-z_]\w{0,31})\s*\)?\s*(?:$|[),;]|(?:and|or|limit|order|group|having)\b)/i;
/** Rules a query template's own shape triggers: its conditions, aliases and statement form. */
const TEMPLATE_RULES: ReadonlySet<string> = new Set([
  "sqli.tautology",
  "sqli.condition",
  "sqli.alias",
  "sqli.statement",
  "sqli.statement_start",
]);
/** The highest score of {@link TEMPLATE_RULES} in a query template: `strict` still blocks. */
const TEMPLATE_CAP = 60;

function template(text: string): boolean {
  return (text.indexOf("?") >= 0 || text.indexOf("%s") >= 0 || text.indexOf("$") >= 0 ||
    text.indexOf(":") >= 0) && PLACEHOLDER_OPERAND.test(text);
}

/** A call's name glued to its `(` right before a quote: `db.query(`, `execute(`. */
const CALL_BEFORE = /[a-z_$][\w$.]{1,63}\($/i;
/** What follows the closing quote of a call's string argument: more arguments, or the close. */
const ARGUMENT_AFTER = /^\s*[,)]/;

/**
 * Whether the quote at `at` opens a string argument of a call in source code (a stack frame's
 * `db.query('INSERT INTO users ... RETURNING id', [email]);`) rather than closing the
 * application's literal: a call's name and `(` stand right before it, and the same quote later
 * closes the string before `,` or `)`. An injection's quote ends the text it follows.
 */
function stringArgument(text: string, at: number): boolean {
  if (
    at < 3 || text.charCodeAt(at - 1) !== 40 ||
    !CALL_BEFORE.test(text.slice(Math.max(0, at - 66), at))
  ) {
    return false;
  }
  const close = text.indexOf(text[at]!, at + 1);
  return close > at && ARGUMENT_AFTER.test(text.slice(close + 1, close + 8));
}

/** Judges what follows the quote at `close` (if any) as SQL after a breakout. */
function breakout(
  text: string,
  close: number,
  consider: (hit: SqlHit | undefined, tokens: readonly SqlToken[], shift: number) => void,
  all: readonly SqlToken[],
): void {
  if (close < 0) return;
  const tail = text.slice(close + 1);
  // What follows the quote decides whether it breaks out; only then is the rest read.
  if (!continuesSql(lexSql(tail, 2))) return;
  // Once the tail's lexer reaches a token the value's lexer started, both read on alike.
  const rest = lexLong(tail, { text, tokens: all, shift: close + 1, plus: false });
  const tokens = firstWindow(rest);
  consider(evaluate(tail, tokens, BREAKOUT), tokens, close + 1);
  readOn(tail, rest, consider, close + 1);
}

function firstWindow(tokens: readonly SqlToken[]): readonly SqlToken[] {
  return tokens.length > MAX_SQL_TOKENS ? tokens.slice(0, MAX_SQL_TOKENS) : tokens;
}

/**
 * The tokens of a value: its first window, and the rest only when a rule read in prose could
 * start there (a JSON document or a page of markup without SQL words is lexed no further).
 */
function lexLong(text: string, donor?: SqlDonor): SqlToken[] {
  const head = lexSql(text, MAX_SQL_TOKENS + 1, donor);
  if (head.length <= MAX_SQL_TOKENS) return head;
  // The second window starts here: its fragments are the first the first window left out.
  const later = head[WINDOW_STEP]!.start;
  if (PROSE_TRIGGER.test(later === 0 ? text : text.slice(later))) return lexRest(text, head, donor);
  head.length = MAX_SQL_TOKENS;
  return head;
}

/** Tokens from the start of one window to the start of the next. */
const WINDOW_STEP = MAX_SQL_TOKENS / 2;
/** Tokens a window reads before the first fragment it judges (`(` before `select`, `from`). */
const LOOKBEHIND = 8;
/** A later window is judged as prose from its lookbehind on. */
const WINDOW_START: SqlStart = { from: LOOKBEHIND, strength: "prose" };

/**
 * Reads the rest of a value past its first window of tokens, so padding in front of an
 * injection buys no bypass: windows of {@link MAX_SQL_TOKENS} tokens start
 * {@link WINDOW_STEP} tokens apart, each judging the fragments that start in the
 * {@link WINDOW_STEP} tokens after its {@link LOOKBEHIND} (the last window, all of its own).
 * Those stretches follow each other without a gap, and every fragment is read with the tokens
 * before it and at least `WINDOW_STEP - LOOKBEHIND` after it. The middle of a value is not the
 * start of a statement, so these windows are judged as prose. The value is lexed once
 * and each window's rules stay within it, so the cost stays linear in the value's length.
 */
function readOn(
  text: string,
  all: readonly SqlToken[],
  consider: (hit: SqlHit | undefined, tokens: readonly SqlToken[], shift: number) => void,
  shift: number,
): void {
  // Each window starts where the one before would have run out of room.
  for (let at = WINDOW_STEP; at - WINDOW_STEP + MAX_SQL_TOKENS < all.length; at += WINDOW_STEP) {
    const tokens = all.slice(at, at + MAX_SQL_TOKENS);
    const until = at + MAX_SQL_TOKENS >= all.length ? tokens.length : LOOKBEHIND + WINDOW_STEP;
    consider(evaluate(text, tokens, WINDOW_START, until), tokens, shift);
  }
}

/**
 * The literals a value can close, read with and without backslash escapes: MySQL reads `\'`
 * as an escaped quote, PostgreSQL, SQL Server, Oracle and SQLite as a backslash and a
 * closing quote.
 */
const QUOTES = ["'", '"'] as const;
/** What follows a literal the value closes is judged from its first token, as a breakout. */
const BREAKOUT: SqlStart = { from: 0, strength: "breakout" };

/**
 * Where a literal that the application opened before the value would end: the first quote
 * that is neither backslash-escaped nor doubled. -1 when the value stays inside the literal.
 */
function literalEnd(text: string, quote: string, backslash: boolean): number {
  let i = text.indexOf(quote);
  while (i >= 0) {
    let slashes = 0;
    if (backslash) { for (let j = i - 1; j >= 0 && text[j] === "\\"; j--) slashes++; }
    if (slashes % 2 === 0) {
      if (text[i + 1] !== quote) return i;
      i = text.indexOf(quote, i + 2);
      continue;
    }
    i = text.indexOf(quote, i + 1);
  }
  return -1;
}

/** Words that can follow a closed literal in a SQL statement. */
const AFTER_LITERAL_WORDS: ReadonlySet<string> = new Set([
  ...CODE_START_WORDS,
  ...COMPARE_WORDS,
  "collate",
  "escape",
  "offset",
  "from",
  "as",
  "then",
  "else",
  "end",
  "notnull",
  "isnull",
  "mod",
]);

/**
 * A closing quote only breaks out if SQL continues right after it: an operator, `)`, `;`,
 * a comment, a connective or a clause keyword. Text (`"he said"`) or JSON (`":"`) does not.
 */
function continuesSql(head: readonly SqlToken[]): boolean {
  const first = head[0];
  if (first === undefined) return false;
  switch (first.kind) {
    case "lparen": {
      // `' (select load_file(...)) '`: a subquery or a delay call right after the quote.
      const second = head[1];
      return second?.kind === "word" && (second.text === "select" || isProbeCall(second));
    }
    case "rparen":
    case "semi":
    case "comment":
    case "logic":
    case "comma":
      return true;
    case "op":
      return first.text !== ":";
    case "word":
      return AFTER_LITERAL_WORDS.has(first.text) || BREAKOUT_STATEMENTS.has(first.text) ||
        isProbeCall(first);
    default:
      return false;
  }
}

/** `sleep(`, `load_file(`: a call of a delay or data-leaking function. */
function isProbeCall(t: SqlToken): boolean {
  return t.call && (DELAY_FUNCTIONS.has(t.text) || ERROR_FUNCTIONS.has(t.text));
}

/** Decides whether the raw value starts as SQL (and where the injected part begins). */
function codeStart(tokens: readonly SqlToken[]): SqlStart {
  let i = 0;
  while (tokens[i]?.kind === "op" && (tokens[i]!.text === "-" || tokens[i]!.text === "+")) i++;
  const t = tokens[i];
  if (t === undefined) return { from: 0, strength: "prose" };
  if (t.kind === "num") {
    let j = i + 1;
    while (tokens[j]?.kind === "rparen") j++;
    return { from: j, strength: "code" };
  }
  const k = t.kind;
  if (
    k === "rparen" || k === "semi" || k === "comment" || k === "logic" || k === "lparen" ||
    (k === "word" && CODE_START_WORDS.has(t.text))
  ) {
    return { from: 0, strength: "code" };
  }
  return { from: 0, strength: "prose" };
}

/**
 * Detector entry point: SQL injection in one decoded input.
 *
 * @param input the decoded input
 * @returns a `sqli` finding or undefined
 *
 * @example
 * ```ts
 * import { type DetectorInput, extract, normalize, sqli } from "./mod.ts";
 * const request = { method: "GET", path: "/", query: "q=1' union select password from users--", headers: [] };
 * const input = extract(request).find((i) => i.source === "query")!;
 * const decoded: DetectorInput = {
 *   input,
 *   location: `query:${input.name}`,
 *   decoded: normalize(input.value).text,
 *   raw: input.value,
 * };
 * sqli(decoded)?.ruleId; // "sqli.union"
 * ```
 */
export function sqli(input: DetectorInput): Finding | undefined {
  const reading = readSql(input.decoded, undefined);
  let verdict = reading.verdict;
  if ((verdict === undefined || verdict.score < 70) && LOOKALIKE_QUOTE.test(input.decoded)) {
    // `' or '1′='1`: the prime becomes a quote where a database converts to a legacy code page.
    const ascii = analyzeSql(
      input.decoded.replace(SINGLE_LOOKALIKE, "'").replace(DOUBLE_LOOKALIKE, '"'),
    );
    if (ascii !== undefined && ascii.score > (verdict?.score ?? 0)) verdict = ascii;
  }
  if ((verdict === undefined || verdict.score < 70) && input.decoded.includes("+")) {
    // `1+union+select`: a form-encoded space that reached a JSON or multipart field as `+`.
    // The spaced text differs only where the value has `+`: its other tokens are the same.
    const tokens = reading.tokens;
    const donor: SqlDonor | undefined = tokens === undefined
      ? undefined
      : { text: input.decoded, tokens, shift: 0, plus: true };
    const spaced = readSql(input.decoded.replaceAll("+", " "), donor).verdict;
    if (spaced !== undefined && spaced.score > (verdict?.score ?? 0)) verdict = spaced;
  }
  if (verdict === undefined || verdict.score < 30) return undefined;
  // Evidence starts a little before the hit so the breakout that led there stays visible.
  const at = Math.max(0, verdict.offset - 10);
  return makeFinding(input, "sqli", verdict.score, verdict.rule, input.decoded, at);
}

/**
 * What a value made of words, digits, dots and dashes can still be in SQL: a system catalog's
 * name (`information_schema`, `sys.objects`) or the floating-point number that hangs PHP's and
 * Java's parsers (see `sql_fragments.ts`).
 *
 * @param input the decoded input, a value without SQL syntax
 * @returns a `sqli.catalog` or `sqli.overflow` finding, or undefined
 */
export function sqlWord(input: DetectorInput): Finding | undefined {
  const v = input.decoded;
  const fragment = judgeWord(v);
  if (fragment === undefined) return undefined;
  return makeFinding(input, "sqli", fragment.score, `sqli.${fragment.rule}`, v, 0);
}
