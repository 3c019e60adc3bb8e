/**
 * Short values that are one SQL fragment and nothing else: a system catalog's name
 * (`information_schema`), a call of a SQL function cut off at its parenthesis (`unhex(`,
 * `group_concat(`), an information function (`database()`), a string built from hex or
 * nested calls (`concat(0x3c62,version())`), `declare @x`, `select pg_sleep`. Probes and
 * truncated payloads look like this; text does not end in `substring(`, and a search for a
 * catalog's name is not something a site's visitors type. Math and date functions (`floor(`)
 * are everyday words in other languages too, so they only count at the strict level.
 */

import { lexSql, type SqlToken } from "./sql_lexer.ts";
import { COMMON_FUNCTIONS, EXTRACTION_FUNCTIONS, INFORMATION_FUNCTIONS } from "./sql_functions.ts";
import { CATALOG_NAMES, DELAY_FUNCTIONS } from "./sql_vocabulary.ts";
import { skipComments, skipGroup } from "./sql_grammar.ts";

/** A fragment's rule and score. */
export interface FragmentVerdict {
  readonly rule: string;
  readonly score: number;
}

/**
 * The smallest normal double written so that PHP's and Java's string-to-double conversion
 * loops for ever (CVE-2010-4645, CVE-2010-4476): a denial of service sent as a number.
 */
const MAGIC_FLOAT = /^[+-]?2\.225073858507201[12]e-0*308$/i;

/**
 * A catalog's name as a whole value (`information_schema`, `` `pg_catalog` ``).
 *
 * @param value the value, without spaces around it
 */
export function isCatalogName(value: string): boolean {
  if (value.length < 4 || value.length > 40) return false;
  const c = value.charCodeAt(0);
  // A quoted name (`` `pg_catalog` ``) loses its quotes; a bare one is looked up as it is.
  const quoted = c === 96 || c === 34 || c === 91;
  if (quoted && !NAME.test(value)) return false;
  const name = (quoted ? value.slice(1, -1) : value).toLowerCase();
  return CATALOG_NAMES.has(name) || isQualifiedCatalog(name);
}

/**
 * A table named through a system catalog (`information_schema.tables`,
 * `pg_catalog.pg_shadow`, `master.dbo.sysdatabases`, `dbo.sysobjects`): reconnaissance as much as
 * the catalog's own name. Only qualifiers no domain or file name starts with, so `mysql.com` and
 * `all_users.csv` are no catalogs.
 */
const QUALIFIED_CATALOG =
  /^(?:(?:information_schema|performance_schema|pg_catalog)\.\w|(?:master|msdb|tempdb|dbo)\.(?:dbo)?\.?sys(?:databases|objects|columns|users|x?logins|processes|files|types|servers|jobs|comments|indexes|tables|schemas)$)/;

/** Whether a lower-case dotted name is a catalog-qualified table (see {@link QUALIFIED_CATALOG}). */
function isQualifiedCatalog(name: string): boolean {
  return name.indexOf(".") > 0 && QUALIFIED_CATALOG.test(name);
}

/**
 * The SQL reading of a value made of word characters, dots and dashes (which skips the
 * detectors): a catalog's or a system procedure's name, or the overflowing number.
 *
 * @param value the value
 * @returns the verdict, or undefined
 */
export function judgeWord(value: string): FragmentVerdict | undefined {
  if (value.length < 4 || value.length > MAX_QUALIFIED) return undefined;
  const c = value.charCodeAt(0);
  if (c <= 57) return MAGIC_FLOAT.test(value) ? { rule: "overflow", score: 75 } : undefined;
  // Ids and tokens are mostly lower case already: look them up without a lower-cased copy.
  const name = hasUpper(value) ? value.toLowerCase() : value;
  if (value.length > MAX_WORD) {
    return isQualifiedCatalog(name) ? { rule: "catalog", score: 75 } : undefined;
  }
  if (CATALOG_NAMES.has(name) || isQualifiedCatalog(name)) return { rule: "catalog", score: 75 };
  return SYSTEM_OBJECTS.has(name) ? { rule: "catalog", score: 60 } : undefined;
}

/** Longer than every catalog and system object name, and than the overflowing number. */
const MAX_WORD = 28;
/** Longer than a catalog-qualified table name (`information_schema.referential_constraints`). */
const MAX_QUALIFIED = 64;

function hasUpper(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

const STATEMENT_START = /^(?:declare|select)\b/i;
const FRAGMENT_START = /^\s*(?:[`"[+0-9-]|declare\b|select\b)/i;
/** Longer values are statements or text, judged by the rules in `sql_rules.ts`. */
const MAX_FRAGMENT = 96;
const NAME = /^[`"[]?[a-z_][\w$.]*[`"\]]?$/i;

/**
 * Judges a short value as a lone SQL fragment.
 *
 * @param text decoded value
 * @returns the fragment's verdict, or undefined
 */
export function judgeFragment(text: string): FragmentVerdict | undefined {
  if (text.length > MAX_FRAGMENT) return undefined;
  // What the readings below start from: a call's parenthesis, a quoted name or one with an
  // empty part (`master..sysdatabases`, not inert), DECLARE or SELECT, a number. Most values
  // hold none of them and are not copied.
  if (text.indexOf("(") < 0 && text.indexOf("..") < 0 && !FRAGMENT_START.test(text)) {
    return undefined;
  }
  const value = text.trim();
  if (value.length < 3) return undefined;
  if (MAGIC_FLOAT.test(value)) return { rule: "overflow", score: 75 };
  if (NAME.test(value)) {
    if (isCatalogName(value)) return { rule: "catalog", score: 75 };
    return SYSTEM_OBJECTS.has(value.toLowerCase()) ? { rule: "catalog", score: 60 } : undefined;
  }
  // Every fragment below is a call or starts with DECLARE or SELECT: most values are neither.
  if (value.indexOf("(") < 0 && !STATEMENT_START.test(value)) return undefined;
  const tokens = lexSql(value, 32);
  let i = 0;
  // `, find_in_set(...)`: the call continues a list the application's query started.
  while (tokens[i]?.kind === "comma" || tokens[i]?.kind === "rparen") i++;
  const t = tokens[i];
  if (t?.kind !== "word") return undefined;
  if (!t.call) return leadingStatement(tokens, i) ?? junkCall(tokens, i);
  const open = skipComments(tokens, i + 1);
  const end = skipGroup(tokens, open);
  const unclosed = tokens[end - 1]?.kind !== "rparen" || end - 1 === open;
  if (end < tokens.length) return undefined;
  const extraction = EXTRACTION_FUNCTIONS.has(t.text);
  if (unclosed && (t.text === "if" || t.text === "iif") && conditionStart(tokens, open + 1)) {
    // `if(2=`: MySQL's IF (SQL Server's IIF) cut off in its condition, a blind-injection probe.
    return { rule: "condition", score: 70 };
  }
  if (unclosed && end - open === 1) {
    // `unhex(`: the value ends at the call's parenthesis.
    if (extraction) return { rule: "function", score: 70 };
    const weak = COMMON_FUNCTIONS.has(t.text) || CLAUSE_CALLS.has(t.text);
    return weak ? { rule: "function", score: 45 } : undefined;
  }
  if (!extraction && !COMMON_FUNCTIONS.has(t.text)) return undefined;
  if (end - open === 2 && INFORMATION_FUNCTIONS.has(t.text)) return { rule: "function", score: 70 };
  // Arguments in SQL's own spelling: hex literals, nested SQL calls, quoted strings after `,`.
  for (let j = open + 1; j < end; j++) {
    const a = tokens[j]!;
    if (a.kind === "num" && /^0x/i.test(a.text) && a.text.length > 3) {
      return { rule: "function", score: 75 };
    }
    if (a.kind === "word" && a.call && EXTRACTION_FUNCTIONS.has(a.text)) {
      return { rule: "function", score: extraction ? 75 : 45 };
    }
  }
  return i > 0 && extraction ? { rule: "function", score: 70 } : undefined;
}

/** An operand and a comparison operator that end the value (`2=`, `ascii(x)>`). */
function conditionStart(tokens: readonly SqlToken[], at: number): boolean {
  const last = tokens[tokens.length - 1];
  if (last?.kind !== "op" || !COMPARISON_ENDS.has(last.text)) return false;
  const first = tokens[at];
  return tokens.length - 1 - at >= 1 &&
    (first?.kind === "num" || first?.kind === "str" || (first?.kind === "word" && first.call));
}

const COMPARISON_ENDS: ReadonlySet<string> = new Set(["=", "<", ">", "<=", ">=", "<>", "!="]);

/**
 * `length||(`, `if !(`, `month=(`: a SQL function's name, a few operator characters and an
 * open parenthesis the value ends with, the way filters are probed for what they let through
 * between a name and its call. A weak sign, for the strict level.
 */
function junkCall(tokens: readonly SqlToken[], i: number): FragmentVerdict | undefined {
  const t = tokens[i]!;
  if (
    !EXTRACTION_FUNCTIONS.has(t.text) && !COMMON_FUNCTIONS.has(t.text) && !CLAUSE_CALLS.has(t.text)
  ) {
    return undefined;
  }
  const last = tokens.length - 1;
  if (last - i < 2 || last - i > 4 || tokens[last]!.kind !== "lparen") return undefined;
  for (let j = i + 1; j < last; j++) {
    const k = tokens[j]!.kind;
    if (k !== "op" && k !== "logic" && k !== "other" && k !== "str" && k !== "comment") {
      return undefined;
    }
  }
  return { rule: "function", score: 45 };
}

/** Keywords written like calls: `in (`, `values(`. */
const CLAUSE_CALLS: ReadonlySet<string> = new Set(["in", "values", "exists"]);

/**
 * SQL Server's extended and system procedures and OLE DB providers that probes name alone:
 * from the SQL Server reference ("System stored procedures", "OPENROWSET").
 */
const SYSTEM_OBJECTS: ReadonlySet<string> = new Set([
  "xp_cmdshell",
  "xp_dirtree",
  "xp_fileexist",
  "xp_regread",
  "xp_regwrite",
  "xp_servicecontrol",
  "xp_availablemedia",
  "xp_subdirs",
  "xp_loginconfig",
  "xp_makecab",
  "xp_ntsec_enumdomains",
  "xp_terminate_process",
  "sp_executesql",
  "sp_password",
  "sp_oacreate",
  "sp_oamethod",
  "sp_makewebtask",
  "sp_addlogin",
  "sp_addsrvrolemember",
  "sp_configure",
  "sp_execute_external_script",
  "msdasql",
  "sqloledb",
  "microsoft.jet.oledb",
]);

/** `declare @x`, `select pg_sleep`: a statement word and the operand that makes it SQL. */
function leadingStatement(tokens: readonly SqlToken[], i: number): FragmentVerdict | undefined {
  const t = tokens[i]!;
  const next = tokens[skipComments(tokens, i + 1)];
  if (t.text === "declare" && next?.kind === "var" && next.text.length > 1) {
    return { rule: "stacked", score: 75 };
  }
  if (t.text === "select" && next?.kind === "word" && DELAY_FUNCTIONS.has(next.text)) {
    return { rule: "delay", score: 75 };
  }
  return undefined;
}
