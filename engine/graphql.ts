/**
 * GraphQL documents: a lexer that finds the string arguments of a query (each judged alone,
 * like JSON strings), and the detector for schema introspection.
 *
 * Introspection (`__schema`, `__type`) hands an attacker the whole API surface; production
 * clients never need it, development tools do (those sites can run at level `low`).
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

/** One string argument (or default value) and the name it was given to. */
export interface GraphqlString {
  readonly name: string;
  readonly value: string;
}

const MAX_STRINGS = 256;
const NAME = /[_A-Za-z][_0-9A-Za-z]*/y;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
const PUNCTUATOR = "!$&()[]{}:=@|";
const OPERATIONS: ReadonlySet<string> = new Set(["query", "mutation", "subscription", "fragment"]);

/**
 * Lexes a document and returns its string arguments.
 *
 * @param doc the document text
 * @returns the strings, or undefined when the text does not lex as a GraphQL document
 */
export function graphqlStrings(doc: string): GraphqlString[] | undefined {
  const out: GraphqlString[] = [];
  let i = 0;
  let first = true;
  let lastName = "";
  let argName = "";
  const n = doc.length;
  while (i < n && out.length < MAX_STRINGS) {
    const c = doc[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "," || c === "\ufeff") {
      i++;
      continue;
    }
    if (c === "#") {
      const eol = doc.indexOf("\n", i);
      i = eol < 0 ? n : eol + 1;
      continue;
    }
    if (c === '"') {
      if (first) return undefined;
      const block = doc.startsWith('"""', i);
      const end = block ? doc.indexOf('"""', i + 3) : stringEnd(doc, i + 1);
      if (end < 0) return undefined;
      const raw = doc.slice(i + (block ? 3 : 1), end);
      out.push({ name: argName, value: block ? raw : unescapeString(raw) });
      i = end + (block ? 3 : 1);
      continue;
    }
    if (PUNCTUATOR.includes(c) || doc.startsWith("...", i)) {
      if (first && c !== "{") return undefined;
      first = false;
      if (c === ":") argName = lastName;
      i += doc.startsWith("...", i) ? 3 : 1;
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(doc);
    if (name !== null) {
      if (first && !OPERATIONS.has(name[0])) return undefined;
      first = false;
      lastName = name[0];
      i = NAME.lastIndex;
      continue;
    }
    NUMBER.lastIndex = i;
    if (!first && NUMBER.exec(doc) !== null) {
      i = NUMBER.lastIndex;
      continue;
    }
    return undefined;
  }
  return first ? undefined : out;
}

function stringEnd(doc: string, from: number): number {
  for (let i = from; i < doc.length; i++) {
    const c = doc.charCodeAt(i);
    if (c === 92 /* \ */) i++;
    else if (c === 34 /* " */) return i;
    else if (c === 10) return -1;
  }
  return -1;
}

function unescapeString(raw: string): string {
  if (raw.indexOf("\\") < 0) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

/** An introspection field opening its selection or arguments. */
const INTROSPECTION = /(?:^|[^\w])__(?:schema|type)\s*[({]/;

/**
 * Reports schema introspection in a GraphQL document.
 *
 * @param value the decoded input; only `graphql` inputs are judged
 * @returns a `graphql` finding or undefined
 */
export function graphql(value: DetectorInput): Finding | undefined {
  if (value.input.source !== "graphql" || value.decoded.indexOf("__") < 0) return undefined;
  const m = INTROSPECTION.exec(value.decoded);
  return m === null
    ? undefined
    : makeFinding(value, "graphql", 75, "graphql.introspection", value.decoded, m.index);
}
