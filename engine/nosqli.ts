/**
 * NoSQL (MongoDB) operator and JavaScript injection detector.
 *
 * Operators only act where the query builder reads them: as keys. So `user[$ne]=x` in a
 * parameter name, a JSON key `$gt`, or an object literal `{ $ne: 1 }` inside a value are
 * injections, while a sentence that mentions "$gt" is not. Server-side JavaScript (`$where`,
 * `this.password.match(...)`, `';return true;var a='`) is recognised by its statement shape.
 *
 * Some APIs take a query from the client by design: Parse Server's `where={"score":{"$gte":1}}`,
 * Strapi's `filters[title][$eq]=x`, the MongoDB Data API's `{"filter": {...}}`, CouchDB's
 * `{"selector": {...}}`. An operator under such a container (the first name of its path) is
 * medium (blocks at `strict`), unless it runs JavaScript (`$where`, `$function`,
 * `$accumulator`) or tests a secret (`filters[password][$regex]`, `resetPasswordToken`):
 * those stay high wherever they are.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";

const OPERATORS =
  "(?:ne|eq|gt|gte|lt|lte|in|nin|regex|exists|where|expr|or|and|not|nor|elemMatch|type|size|all|mod|options|text|function|accumulator|lookup|jsonSchema|comment)";
/** `user[$ne]` or `user[][$gt]`: PHP and Express bracket syntax turning a name into an operator. */
const NAME_OPERATOR = new RegExp(`\\[\\s*\\$${OPERATORS}\\s*\\]`);
/**
 * A JSON key that is exactly an operator. `$comment` and `$type` are left out: JSON Schema
 * documents carry `$comment`, Json.NET's polymorphic bodies `$type` (judged by the
 * deserialisation detector), and neither changes what a MongoDB query matches.
 */
const KEY_OPERATOR = new RegExp(`^\\$(?!(?:comment|type)$)${OPERATORS}$`);
/** `user.$ne`: the dotted spelling of `user[$ne]`. */
const DOT_OPERATOR = new RegExp(`[\\w\\]]\\.\\$${OPERATORS}(?=$|[.\\[])`);
/** Parameter names that `find(req.query)` reads as a top-level operator. */
const TOP_LEVEL_OPERATOR = /^\$(?:where|expr|or|nor|and|jsonSchema)(?:$|\[)/;
/** Operators that run JavaScript on the server. */
const JS_OPERATOR = /\$(?:where|function|accumulator)\b/;
/** First names of paths that carry a client-built query by design. */
const QUERY_CONTAINER = /^(?:filters?|where|selector|query|criteria|conditions?)$/i;
/** A field whose value is a secret: an operator on it probes the secret (`password[$regex]`). */
const SECRET_FIELD = /pass|pwd|secret|token|hash|salt|otp|api_?key|credential/i;
/**
 * A secret field given an operator object inside a value: `{"password":{"$regex":"^a"}}`. The
 * name is read from its start (`\b`), so a long word costs one pass, not one per letter.
 */
const SECRET_OPERATOR =
  /["']?\b\w*(?:pass|pwd|secret|token|hash|salt|otp|api_?key|credential)\w*["']?\s*:\s*\{\s*["']?\$/i;
/** An operator used as a key inside a value: `{ $ne: 1 }`, `, $or: [`, `{"$gt": ""}`. */
const VALUE_OPERATOR = new RegExp(`(?:^|[{,\\[]|['"]\\s*,)\\s*["']?\\$${OPERATORS}["']?\\s*:`);
const WHERE = /\$where\s*["']?\s*:/;
/** A GraphQL operation with variable definitions: `query Name(`, `mutation (`. */
const GRAPHQL_OPERATION = /^\s*(?:query|mutation|subscription)\b[\w\s]*\(/;
/** A variable's type after its colon: `UserWhereInput,`, `String!)`, `[ID!]! =`. */
const GRAPHQL_TYPE = /[\s[]*[A-Za-z_]\w*[!\]\s]*[,)=$]/y;
const JS_INJECTION =
  /\bthis\.\w+\.(?:match|valueOf|toString)\s*\(|^[^'"\n]{0,20}['"][ \t)]*;[ \t]*(?:return\b|sleep[ \t]*\([ \t]*\d|(?:var|let|const)[ \t]+\w+[ \t]*=|it[ \t]*=[ \t]*new[ \t]+Date|while[ \t]*\([ \t]*(?:true|1)[ \t]*\)|do[ \t]*\{|for[ \t]*\([ \t]*;[ \t]*;)|^[\w'"]{0,20};[ \t]*return[ \t]*\(?[ \t]*(?:true|false)\b|\bdb\.\w+\.(?:insert|find|findOne|update|remove|drop|mapReduce|aggregate|count)\s*\(|new\s+Date\s*\(\s*\)\s*;\s*do\s*\{|\|\|[ \t]*(\d+)[ \t]*==[ \t]*\1\b|^[^'"\n]{0,20}['"][ \t]*(?:\|\||&&)[ \t]*!?this\.\w/;

/**
 * Reports MongoDB operators in names, keys and values, and server-side JavaScript.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `nosqli`
 */
export function nosqli(value: DetectorInput): Finding | undefined {
  const name = value.input.name;
  const source = value.input.source;
  let best: Finding | undefined;
  if (name.indexOf("[$") >= 0 || name.indexOf("[ $") >= 0) {
    const m = NAME_OPERATOR.exec(name);
    if (m !== null) {
      best = makeFinding(
        value,
        "nosqli",
        byDesign(name, name) ? 55 : 90,
        "nosqli.operator_name",
        name,
        m.index,
      );
    }
  }
  const text = value.decoded;
  if (text.charCodeAt(0) === 36) {
    if ((source === "json_key" || source === "json") && KEY_OPERATOR.test(text)) {
      // The extractor hands JSON keys over as values (`json_key`); `$ne` as a key is an operator.
      const score = byDesign(name, name) ? 55 : 88;
      best = stronger(best, makeFinding(value, "nosqli", score, "nosqli.operator_key", name, 0));
    } else if (
      (source === "query_name" || source === "form_name") && TOP_LEVEL_OPERATOR.test(text)
    ) {
      // `?$where=...` or `?$or[0][a]=1` reaches `find(req.query)` as a top-level operator.
      best = stronger(best, makeFinding(value, "nosqli", 85, "nosqli.operator_key", text, 0));
    }
  }
  if (text.indexOf("$") >= 0) {
    const where = WHERE.exec(text);
    if (where !== null && !graphqlVariable(text, where)) {
      return makeFinding(value, "nosqli", 92, "nosqli.where", text, where.index);
    }
    const op = VALUE_OPERATOR.exec(text);
    if (op !== null && !graphqlVariable(text, op)) {
      const score = byDesign(name, text) ? 55 : 85;
      best = stronger(
        best,
        makeFinding(value, "nosqli", score, "nosqli.operator_object", text, op.index),
      );
    }
    // A query name arrives as its own input; elsewhere `[$ne]=1` is a name smuggled in a value.
    // Parsers that read dots as nesting (qs's `allowDots`) take `user.$ne` as `user[$ne]`.
    const qn = (text.indexOf("[") >= 0 ? NAME_OPERATOR.exec(text) : null) ??
      (source === "query_name" || source === "form_name" ? DOT_OPERATOR.exec(text) : null);
    if (qn !== null) {
      const score = source === "query_name" || source === "form_name"
        ? (byDesign(text, text) ? 55 : 90)
        : 80;
      best = stronger(
        best,
        makeFinding(value, "nosqli", score, "nosqli.operator_name", text, qn.index),
      );
    }
  }
  if (
    text.indexOf(";") >= 0 || text.indexOf("this.") >= 0 || text.indexOf("||") >= 0 ||
    text.indexOf("db.") >= 0
  ) {
    const js = JS_INJECTION.exec(text);
    if (js !== null) {
      best = stronger(best, makeFinding(value, "nosqli", 82, "nosqli.javascript", text, js.index));
    }
  }
  return best;
}

/**
 * True when `$name:` at `at` declares a variable of a GraphQL operation: `query Users($where:
 * UserWhereInput, $first: Int)`, which Hasura's and Prisma's clients write for every filtered
 * list. Variable definitions come before the operation's first `{`, and GraphQL spells no other
 * name with a `$`; the variables' values arrive as JSON and are read there.
 *
 * @param text the value
 * @param key the operator key's match, which ends at its colon
 */
function graphqlVariable(text: string, key: RegExpExecArray): boolean {
  if (!GRAPHQL_OPERATION.test(text)) return false;
  const brace = text.indexOf("{");
  if (brace >= 0 && key.index > brace) return false;
  GRAPHQL_TYPE.lastIndex = key.index + key[0].length;
  return GRAPHQL_TYPE.test(text);
}

/**
 * True when an operator sits where the application takes a query from the client by design:
 * the path's first name is a query container, the operator runs no JavaScript and no field
 * on the path (or, in a value, no key given an operator object) is a secret.
 *
 * @param path the input's path (`filters[title][$eq]`, `filter.status.$in`, `where`)
 * @param text the text holding the operator (the path itself, or a value's JSON)
 */
function byDesign(path: string, text: string): boolean {
  const cut = path.search(/[[.]/);
  const first = cut < 0 ? path : path.slice(0, cut);
  if (!QUERY_CONTAINER.test(first)) return false;
  if (JS_OPERATOR.test(text) || SECRET_FIELD.test(path.slice(first.length))) return false;
  return text === path || !SECRET_OPERATOR.test(text);
}
