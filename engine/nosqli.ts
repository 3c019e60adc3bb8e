/**
 * NoSQL (MongoDB) operator and JavaScript injection detector.
 *
 * Operators only act where the query builder reads them: as keys. So `user[$ne]=x` in a
 * parameter name, a JSON key `$gt`, or an object literal `{ $ne: 1 }` inside a value are
 * injections, while a sentence that mentions "$gt" is not. Server-side JavaScript (`$where`,
 * `this.password.match(...)`, `';return true;var a='`) is recognised by its statement shape.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";

const OPERATORS =
  "(?:ne|eq|gt|gte|lt|lte|in|nin|regex|exists|where|expr|or|and|not|nor|elemMatch|type|size|all|mod|options|text|function|accumulator|lookup|jsonSchema|comment)";
/** `user[$ne]` or `user[][$gt]`: PHP and Express bracket syntax turning a name into an operator. */
const NAME_OPERATOR = new RegExp(`\\[\\s*\\$${OPERATORS}\\s*\\]`);
/** A JSON key that is exactly an operator. */
const KEY_OPERATOR = new RegExp(`^\\$${OPERATORS}$`);
/** An operator used as a key inside a value: `{ $ne: 1 }`, `, $or: [`, `{"$gt": ""}`. */
const VALUE_OPERATOR = new RegExp(`(?:^|[{,\\[]|['"]\\s*,)\\s*["']?\\$${OPERATORS}["']?\\s*:`);
const WHERE = /\$where\s*["']?\s*:/;
const JS_INJECTION =
  /\bthis\.\w+\.(?:match|valueOf|toString)\s*\(|^[^'"\n]{0,20}['"][ \t]*;[ \t]*(?:return\b|sleep[ \t]*\([ \t]*\d|var[ \t]+\w+[ \t]*=|it[ \t]*=[ \t]*new[ \t]+Date)|^[\w'"]{0,20};[ \t]*return[ \t]*\(?[ \t]*(?:true|false)\b|\bdb\.\w+\.(?:insert|find|findOne|update|remove|drop|mapReduce|aggregate|count)\s*\(|new\s+Date\s*\(\s*\)\s*;\s*do\s*\{|\|\|[ \t]*(\d+)[ \t]*==[ \t]*\1\b/;

/**
 * Reports MongoDB operators in names, keys and values, and server-side JavaScript.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `nosqli`
 */
export function nosqli(value: DetectorInput): Finding | undefined {
  const name = value.input.name;
  let best: Finding | undefined;
  if (name.indexOf("[$") >= 0 || name.indexOf("[ $") >= 0) {
    const m = NAME_OPERATOR.exec(name);
    if (m !== null) best = makeFinding(value, "nosqli", 90, "nosqli.operator_name", name, m.index);
  }
  const text = value.decoded;
  const source = value.input.source;
  if (
    (source === "json_key" || source === "json") && text.charCodeAt(0) === 36 &&
    KEY_OPERATOR.test(text)
  ) {
    // The extractor hands JSON keys over as values (`json_key`); `$ne` as a key is an operator.
    best = stronger(best, makeFinding(value, "nosqli", 88, "nosqli.operator_key", name, 0));
  }
  if (text.indexOf("$") >= 0) {
    const where = WHERE.exec(text);
    if (where !== null) return makeFinding(value, "nosqli", 92, "nosqli.where", text, where.index);
    const op = VALUE_OPERATOR.exec(text);
    if (op !== null) {
      best = stronger(
        best,
        makeFinding(value, "nosqli", 85, "nosqli.operator_object", text, op.index),
      );
    }
    // A query name arrives as its own input; elsewhere `[$ne]=1` is a name smuggled in a value.
    const qn = text.indexOf("[") >= 0 ? NAME_OPERATOR.exec(text) : null;
    if (qn !== null) {
      const score = value.input.source === "query_name" ? 90 : 80;
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
