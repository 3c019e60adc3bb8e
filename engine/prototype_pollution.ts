/**
 * Prototype pollution: a property path that climbs from an object to the prototype every
 * object shares (`__proto__`, `constructor.prototype`). Node.js frameworks turn parameter
 * names into such paths (`qs` reads `a[b][c]=1` and `a.b.c=1` as nested objects), deep-merge
 * JSON bodies into defaults, and helpers such as lodash's `set(obj, path, value)` take a path
 * from a value; one write through `__proto__` then gives every object of the process the
 * attacker's property (`isAdmin`, a child process's `shell`).
 *
 * Read as a path, not as words: a parameter name or JSON key holding `__proto__` (also a
 * sanitiser's leftover `__pro__proto__to__`) or `constructor` then `prototype`; in a value, a
 * path that goes on past the prototype (`__proto__.isAdmin`, `constructor[prototype][x]`) or
 * a JSON text with a `"__proto__"` key. Prose that names the property (`the __proto__
 * accessor is deprecated`, `constructor.prototype explained`) passes.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

/** The prototype reached by name: `__proto__` anywhere in a parameter name or JSON key path. */
const PROTO = "__proto__";
/** `constructor` then `prototype` as segments of a path (`constructor[prototype]`, `/`). */
const CONSTRUCTOR_PROTOTYPE = "\\bconstructor['\"]?\\]?\\s*[./[]\\s*['\"]?prototype";
/**
 * The path goes on past the prototype: `.isAdmin`, `[isAdmin]`, `["isAdmin"]`, a JSON
 * Pointer's `/isAdmin` (a JSON Patch's `"path":"/__proto__/isAdmin"`, a route's
 * `/:key/:prop` parameters). Spaces only
 * around the separator, so no two runs of them can overlap (a long run costs one pass).
 */
const ONWARD = "['\"]?\\]?\\s*[./[]\\s*['\"]?[\\w$]";
const NAME_PATH = new RegExp(`${PROTO}|${CONSTRUCTOR_PROTOTYPE}(?![\\w$])`);
/**
 * A JSON key path under `constructor.prototype` (a merge copies what lies below it; the key
 * alone with a scalar, as in a syntax tree, changes nothing).
 */
const KEY_PATH = new RegExp(`${PROTO}|${CONSTRUCTOR_PROTOTYPE}${ONWARD}`);
/**
 * In a value, the path must go on past the prototype (`__proto__.isAdmin`,
 * `constructor[prototype][x]`).
 */
const VALUE_PATH = new RegExp(`(?:${PROTO}|${CONSTRUCTOR_PROTOTYPE})${ONWARD}`);
/**
 * JSON text whose keys open an object below the prototype (`{"__proto__":{`,
 * `{"constructor":{"prototype":{`).
 */
const VALUE_JSON = new RegExp(
  `["']${PROTO}["']\\s*:\\s*[{[]|` +
    `["']constructor["']\\s*:\\s*\\{\\s*["']prototype["']\\s*:\\s*\\{`,
);
/**
 * White space inside a value: a helper taking a path from a value (`set(obj, path, v)`) reads
 * the whole value as the path, and a space would become part of a key name (`a. __proto__`
 * names the key ` __proto__`); code and prose that name the property
 * (`console.log(foo.__proto__.bar)`, `use this.constructor.prototype.render`) have spaces.
 */
const INNER_SPACE = /\S\s+\S/;

/** Sources whose text is a property path a framework builds objects from. */
const KEY_SOURCES: ReadonlySet<string> = new Set([
  "query_name",
  "form_name",
  "json_key",
  "cookie_name",
]);

/**
 * Reports a property path into the shared prototype.
 *
 * @param value the decoded input
 * @returns a finding of class `prototype-pollution`, or undefined
 */
export function prototypePollution(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  const input = value.input;
  const key = KEY_SOURCES.has(input.source) ||
    (input.source === "multipart" && input.name.endsWith(".name"));
  if (key) {
    // A JSON key's location is its whole path (`constructor.prototype`), the key alone is not.
    const json = input.source === "json_key";
    const path = json ? input.name : text;
    const m = path.indexOf("proto") < 0 ? null : (json ? KEY_PATH : NAME_PATH).exec(path);
    if (m !== null) {
      return makeFinding(value, "prototype-pollution", 88, "proto.key", path, m.index);
    }
  }
  if (text.indexOf("proto") < 0) return undefined;
  const m = (INNER_SPACE.test(text) ? null : VALUE_PATH.exec(text)) ?? VALUE_JSON.exec(text);
  return m === null
    ? undefined
    : makeFinding(value, "prototype-pollution", 80, "proto.path", text, m.index);
}
