/**
 * JSON parsing that says where malformed input goes wrong: line, column and what was expected.
 * `JSON.parse`'s own message gives a position for some mistakes only (for an unexpected token it
 * quotes the whole input instead), and its English is not to be parsed back; so when it fails,
 * the text is scanned here for the first character that breaks the grammar (RFC 8259), without
 * recursion, so any nesting depth is fine.
 */
import { AppError } from "./errors.ts";

/** What the grammar wanted where the input went wrong. */
export const JSON_EXPECTED = {
  value: "a value",
  comma_or_object_end: '"," or "}"',
  comma_or_array_end: '"," or "]"',
  colon: '":"',
  property_name: "a property name in double quotes",
  end: "the end of the input",
  digit: "a digit",
  escape: 'an escape (\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX)',
  hex_digit: "a hexadecimal digit",
  closing_quote: "a closing quote",
  escaped_control: "a control character to be escaped (\\n, \\t, \\u0000, ...)",
  literal_true: '"true"',
  literal_false: '"false"',
  literal_null: '"null"',
} as const;

export type JsonExpected = keyof typeof JSON_EXPECTED;

/** Where and why a text is not JSON. */
export interface JsonSyntaxError {
  /** 1-based line (lines end at "\n"). */
  readonly line: number;
  /** 1-based column, in characters (code points) from the start of the line. */
  readonly column: number;
  /** 0-based offset in UTF-16 code units, as `JSON.parse` counts its "position". */
  readonly offset: number;
  /** The character found there; undefined at the end of the input. */
  readonly found: string | undefined;
  readonly expected: JsonExpected;
}

export type JsonParseResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: JsonSyntaxError };

/**
 * Parses `text` as JSON; on failure, says where.
 *
 * @example
 * parseJson('{"a": 1,\n  "b": x}'); // { ok: false, error: { line: 2, column: 8, found: "x", expected: "value", ... } }
 */
export function parseJson(text: string): JsonParseResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, error: jsonSyntaxError(text) };
  }
}

/** The error as one phrase: `unexpected "x", expected a value`. */
export function jsonErrorText(error: JsonSyntaxError): string {
  const found = error.found === undefined
    ? "unexpected end of input"
    : `unexpected ${JSON.stringify(error.found)}`;
  return `${found}, expected ${JSON_EXPECTED[error.expected]}`;
}

/** The whole error: `line 2, column 8: unexpected "x", expected a value`. */
export function describeJsonError(error: JsonSyntaxError): string {
  return `line ${error.line}, column ${error.column}: ${jsonErrorText(error)}`;
}

/**
 * The API's 400 for a malformed JSON body: `<subject> at line 3, column 5: unexpected "x",
 * expected a value`, with `line` and `column` in the error object beside `field: "(body)"`.
 */
export function malformedJson(subject: string, error: JsonSyntaxError): AppError {
  const { line, column } = error;
  return new AppError(
    400,
    "BAD_REQUEST",
    `${subject} at line ${line}, column ${column}: ${jsonErrorText(error)}`,
    { details: { field: "(body)", line, column } },
  );
}

const WS = new Set([" ", "\t", "\n", "\r"]);
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);
const HEX = /^[0-9a-fA-F]$/;
const DIGIT = /^[0-9]$/;
const LITERALS: Record<string, readonly [string, JsonExpected]> = {
  t: ["true", "literal_true"],
  f: ["false", "literal_false"],
  n: ["null", "literal_null"],
};

/** A failure at `offset`: the offset and what was expected there. */
type Stop = readonly [offset: number, expected: JsonExpected];

/** The end of the string starting at `i` (a `"`), or where it breaks. */
function scanString(text: string, i: number): number | Stop {
  for (i++; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '"') return i + 1;
    if (ch < " ") return [i, "escaped_control"];
    if (ch !== "\\") continue;
    const next = text[++i];
    if (next === "u") {
      for (let k = 0; k < 4; k++) if (!HEX.test(text[++i] ?? "")) return [i, "hex_digit"];
    } else if (next === undefined || !ESCAPES.has(next)) return [i, "escape"];
  }
  return [i, "closing_quote"];
}

/** The end of the number starting at `i`, or where it breaks. */
function scanNumber(text: string, i: number): number | Stop {
  const digits = (from: number): number | Stop => {
    if (!DIGIT.test(text[from] ?? "")) return [from, "digit"];
    while (DIGIT.test(text[from] ?? "")) from++;
    return from;
  };
  if (text[i] === "-") i++;
  let at: number | Stop = text[i] === "0" ? i + 1 : digits(i);
  if (typeof at !== "number") return at;
  if (text[at] === ".") {
    at = digits(at + 1);
    if (typeof at !== "number") return at;
  }
  if (text[at] === "e" || text[at] === "E") {
    at++;
    if (text[at] === "+" || text[at] === "-") at++;
    at = digits(at);
  }
  return at;
}

/** The end of the value starting at `i` when it is a scalar; `undefined` for `{` and `[`. */
function scanScalar(text: string, i: number): number | Stop | undefined {
  const ch = text[i];
  if (ch === "{" || ch === "[") return undefined;
  if (ch === '"') return scanString(text, i);
  if (ch === "-" || DIGIT.test(ch ?? "")) return scanNumber(text, i);
  const literal = ch === undefined ? undefined : LITERALS[ch];
  if (!literal) return [i, "value"];
  const [word, expected] = literal;
  for (let k = 0; k < word.length; k++) if (text[i + k] !== word[k]) return [i + k, expected];
  return i + word.length;
}

/** Where the first grammar error in `text` is (called only for text `JSON.parse` refused). */
function firstStop(text: string): Stop {
  const skip = (i: number) => {
    while (i < text.length && WS.has(text[i]!)) i++;
    return i;
  };
  const open: string[] = [];
  let i = skip(0);
  let mode: "value" | "key" | "after" = "value";
  for (;;) {
    if (mode === "key") {
      if (text[i] !== '"') return [i, "property_name"];
      const end = scanString(text, i);
      if (typeof end !== "number") return end;
      i = skip(end);
      if (text[i] !== ":") return [i, "colon"];
      i = skip(i + 1);
      mode = "value";
    } else if (mode === "value") {
      const end = scanScalar(text, i);
      if (end === undefined) {
        const bracket = text[i]!;
        open.push(bracket);
        i = skip(i + 1);
        const close = bracket === "{" ? "}" : "]";
        if (text[i] === close) {
          open.pop();
          i = skip(i + 1);
          mode = "after";
        } else mode = bracket === "{" ? "key" : "value";
        continue;
      }
      if (typeof end !== "number") return end;
      i = skip(end);
      mode = "after";
    } else {
      const top = open.at(-1);
      if (top === undefined) {
        // The grammar holds to the end; only a disagreement with JSON.parse lands here.
        return [i, "end"];
      }
      const close = top === "{" ? "}" : "]";
      if (text[i] === ",") {
        i = skip(i + 1);
        mode = top === "{" ? "key" : "value";
      } else if (text[i] === close) {
        open.pop();
        i = skip(i + 1);
      } else return [i, top === "{" ? "comma_or_object_end" : "comma_or_array_end"];
    }
  }
}

function jsonSyntaxError(text: string): JsonSyntaxError {
  const [offset, expected] = firstStop(text);
  const lineStart = offset === 0 ? 0 : text.lastIndexOf("\n", offset - 1) + 1;
  let line = 1;
  for (let k = text.indexOf("\n"); k !== -1 && k < offset; k = text.indexOf("\n", k + 1)) line++;
  const found = offset < text.length ? String.fromCodePoint(text.codePointAt(offset)!) : undefined;
  return {
    line,
    column: [...text.slice(lineStart, offset)].length + 1,
    offset,
    found,
    expected,
  };
}
