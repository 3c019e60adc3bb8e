/**
 * The management store's SQL, written once in SQLite's dialect, as PostgreSQL takes it. The
 * repositories keep one text per statement; the PostgreSQL store translates each text once (and
 * caches it) and each migration once at open. Only what the repositories and migrations use is
 * translated; a construct with no faithful translation (`INSERT OR REPLACE`) is refused when the
 * statement is prepared, so a new one shows up in the contract suite instead of at run time.
 *
 * Statements: `?`, `?NNN` and named (`:x`, `@x`, `$x`) parameters become `$n`; `INSERT OR
 * IGNORE` becomes `ON CONFLICT DO NOTHING`; `LIKE` (case-insensitive for ASCII in SQLite)
 * becomes `ILIKE`; `json_extract(x, '$.a.b')` becomes `(x::jsonb #>> '{a,b}')`; the scalar
 * `MAX(a, b)`/`MIN(a, b)` become `GREATEST`/`LEAST`; `IFNULL` and `instr` their equivalents; a
 * parameter PostgreSQL cannot type (`? IS NULL`, `length(?)`) is cast to text; an INSERT into a
 * table with a row id answers it (`RETURNING`), which `lastInsertRowid` reads.
 *
 * Migrations: `INTEGER` columns become `BIGINT` (times are milliseconds), `INTEGER PRIMARY KEY`
 * an identity column, `REAL` and `BLOB` their equivalents; a table without an integer key gets a
 * hidden `rowid` identity column (SQLite's implicit one, which `ORDER BY ..., rowid` reads);
 * SQLite's `RAISE(ABORT)` triggers become PL/pgSQL trigger functions.
 */
import { MIGRATIONS } from "../migrations.ts";
import { NO_CHANGE_NOTICE } from "../store.ts";

export interface PgStatement {
  /** The statement as PostgreSQL takes it. */
  readonly text: string;
  /** Named parameters in `$n` order, when the statement binds by name. */
  readonly names: readonly string[] | undefined;
  /** The table an INSERT, UPDATE or DELETE writes (a change notice names it). */
  readonly writes: string | undefined;
  /** True when the statement answers the inserted row id as `rowid__`. */
  readonly returnsRowid: boolean;
  /** False for a write marked `NO_CHANGE_NOTICE` (db/store.ts): no other controller is told of it. */
  readonly notice: boolean;
}

export class UnsupportedSqlError extends Error {
  constructor(what: string, sql: string) {
    super(`The PostgreSQL store cannot translate ${what}: ${sql.slice(0, 200)}`);
    this.name = "UnsupportedSqlError";
  }
}

/** Replaces string literals by markers so rewrites never touch their content. */
function mask(sql: string): { code: string; literals: string[] } {
  const literals: string[] = [];
  let code = "";
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'") {
      let j = i + 1;
      for (;;) {
        const q = sql.indexOf("'", j);
        if (q < 0) {
          j = sql.length;
          break;
        }
        if (sql[q + 1] === "'") {
          j = q + 2;
          continue;
        }
        j = q + 1;
        break;
      }
      code += `\uE000${literals.length}\uE000`;
      literals.push(sql.slice(i, j));
      i = j;
    } else if (c === "-" && sql[i + 1] === "-") {
      const nl = sql.indexOf("\n", i);
      i = nl < 0 ? sql.length : nl;
    } else {
      code += c;
      i++;
    }
  }
  return { code, literals };
}

function unmask(code: string, literals: readonly string[]): string {
  return code.replace(/\uE000(\d+)\uE000/g, (_, n) => literals[Number(n)]!);
}

/** Index of the `)` closing the `(` at `open`, or -1. */
function closing(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return -1;
}

/** The top-level comma-separated arguments of a call's parentheses. */
function splitArgs(inner: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      args.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  args.push(inner.slice(start));
  return args;
}

/** Rewrites every call of `name` (innermost first), `fn` answering the replacement or undefined. */
function rewriteCalls(
  code: string,
  name: RegExp,
  fn: (fnName: string, args: string[]) => string | undefined,
): string {
  const re = new RegExp(`\\b(${name.source})\\s*\\(`, "gi");
  let out = "";
  let last = 0;
  for (let m = re.exec(code); m; m = re.exec(code)) {
    const open = m.index + m[0].length - 1;
    const close = closing(code, open);
    if (close < 0) break;
    const inner = rewriteCalls(code.slice(open + 1, close), name, fn);
    const replaced = fn(m[1]!, splitArgs(inner));
    out += code.slice(last, m.index) + (replaced ?? `${m[1]}(${inner})`);
    last = close + 1;
    re.lastIndex = close + 1;
  }
  return out + code.slice(last);
}

/** `'$.a.b'` as a PostgreSQL text-array path `'{a,b}'`. */
function jsonPath(literal: string, sql: string): string {
  const m = /^'\$((?:\.[A-Za-z_][A-Za-z0-9_]*)*)'$/.exec(literal);
  if (!m) throw new UnsupportedSqlError(`the JSON path ${literal}`, sql);
  return `'{${m[1]!.split(".").filter(Boolean).join(",")}}'`;
}

/** Tables and their row-id column (`undefined`: `WITHOUT ROWID`). */
export const ROWID_COLUMNS: ReadonlyMap<string, string | undefined> = (() => {
  const map = new Map<string, string | undefined>();
  for (const m of MIGRATIONS) {
    const { code } = mask(m.sql);
    const re = /CREATE TABLE (?:IF NOT EXISTS )?(\w+)\s*\(/gi;
    for (let t = re.exec(code); t; t = re.exec(code)) {
      const open = t.index + t[0].length - 1;
      const close = closing(code, open);
      const body = code.slice(open + 1, close);
      const tail = code.slice(close + 1, close + 20);
      const key = /(\w+)\s+INTEGER\s+PRIMARY\s+KEY/i.exec(body);
      map.set(t[1]!, key ? key[1] : /^\s*WITHOUT ROWID/i.test(tail) ? undefined : "rowid");
    }
  }
  return map;
})();

const WRITES = /^\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)/i;

/** Translates one statement of the repositories. */
export function translateStatement(source: string): PgStatement {
  const quiet = source.trimStart().startsWith(NO_CHANGE_NOTICE);
  const sql = quiet ? source.trimStart().slice(NO_CHANGE_NOTICE.length) : source;
  const { code: masked, literals } = mask(sql);
  let code = masked;
  if (/\bINSERT\s+OR\s+REPLACE\b/i.test(code)) {
    throw new UnsupportedSqlError("INSERT OR REPLACE (use ON CONFLICT ... DO UPDATE)", sql);
  }
  // Named parameters first: `$name` must not be taken for a positional `$n` made below.
  const names: string[] = [];
  code = code.replace(/(^|[^:\w])[:@$]([A-Za-z_]\w*)/g, (_, pre: string, name: string) => {
    let n = names.indexOf(name);
    if (n < 0) n = names.push(name) - 1;
    return `${pre}$${n + 1}`;
  });
  let positional = 0;
  code = code.replace(/\?(\d+)?/g, (_, n: string | undefined) => `$${n ?? ++positional}`);
  const ignore = /\bINSERT\s+OR\s+IGNORE\s+INTO\b/i.test(code);
  if (ignore) code = code.replace(/\bINSERT\s+OR\s+IGNORE\s+INTO\b/i, "INSERT INTO");
  code = code.replace(/\bLIKE\b/gi, "ILIKE");
  code = code.replace(/\bIFNULL\s*\(/gi, "COALESCE(");
  code = code.replace(/\binstr\s*\(/gi, "strpos(");
  code = code.replace(/\bAS\s+INTEGER\b/gi, "AS BIGINT");
  code = code.replace(/\blength\s*\(\s*(\$\d+)\s*\)/gi, "length($1::text)");
  // A parameter used only in `IS NULL` has no type PostgreSQL can infer; one used elsewhere too
  // (`(:from IS NULL OR time >= :from)`) takes that use's type.
  const uses = new Map<string, number>();
  for (const m of code.matchAll(/\$\d+/g)) uses.set(m[0], (uses.get(m[0]) ?? 0) + 1);
  code = code.replace(
    /(\$\d+)(\s+IS\s+(?:NOT\s+)?NULL)\b/gi,
    (whole, p: string, rest: string) => (uses.get(p) === 1 ? `${p}::text${rest}` : whole),
  );
  // PostgreSQL types a parameter where it is first coerced, and `IS NULL` does not coerce:
  // `($1 IS NULL OR time >= $1)` becomes `(time >= $1 OR $1 IS NULL)`, which means the same.
  const optional = [...code.matchAll(/\(\s*(\$\d+)\s+IS\s+NULL\s+OR\s+/gi)].reverse();
  for (const m of optional) {
    const open = m.index!;
    const close = closing(code, open);
    if (close < 0 || uses.get(m[1]!) === 1) continue;
    const rest = code.slice(open + m[0].length, close);
    code = `${code.slice(0, open)}(${rest} OR ${m[1]} IS NULL)${code.slice(close + 1)}`;
  }
  code = code.replace(
    /\bsqlite_master\s+WHERE\s+type\s*=\s*(\uE000\d+\uE000)\s+AND\s+name\s*=/gi,
    "information_schema.tables WHERE table_schema = current_schema() AND table_name =",
  );
  code = rewriteCalls(code, /json_extract/, (_, args) => {
    if (args.length !== 2) return undefined;
    const lit = /^\s*\uE000(\d+)\uE000\s*$/.exec(args[1]!);
    if (!lit) throw new UnsupportedSqlError("json_extract with a computed path", sql);
    return `((${args[0]!.trim()})::jsonb #>> ${jsonPath(literals[Number(lit[1])]!, sql)})`;
  });
  code = rewriteCalls(code, /MAX|MIN/, (fnName, args) => {
    if (args.length < 2) return undefined;
    return `${fnName.toUpperCase() === "MAX" ? "GREATEST" : "LEAST"}(${args.join(",")})`;
  });
  code = code.replace(/;\s*$/, "");
  if (ignore) code += " ON CONFLICT DO NOTHING";
  const writes = WRITES.exec(masked)?.[1];
  let returnsRowid = false;
  if (/^\s*INSERT\b/i.test(code) && !/\bRETURNING\b/i.test(code) && writes) {
    const column = ROWID_COLUMNS.get(writes);
    if (column) {
      code += ` RETURNING ${column} AS rowid__`;
      returnsRowid = true;
    }
  }
  return {
    text: unmask(code, literals),
    names: names.length > 0 ? names : undefined,
    writes,
    returnsRowid,
    notice: !quiet,
  };
}

/** The trigger names a migration created, with their table (a later `DROP TRIGGER` needs it). */
const triggerTables = new Map<string, string>();

/** SQLite's `IS NOT` between values as PostgreSQL's null-safe comparison. */
function triggerCondition(cond: string): string {
  return cond.replace(/\bIS\s+NOT\b(?!\s+NULL)/gi, "IS DISTINCT FROM");
}

/** Translates one migration's SQL. */
export function translateMigration(sql: string): string {
  const { code: masked, literals } = mask(sql);
  let code = masked;
  code = code.replace(
    /CREATE TRIGGER (\w+) BEFORE (UPDATE|DELETE) ON (\w+)\s*(?:WHEN\s+([\s\S]*?))?\s*BEGIN\s+SELECT\s+RAISE\s*\(\s*ABORT\s*,\s*(\uE000\d+\uE000)\s*\)\s*;\s*END\s*;/gi,
    (_, name: string, op: string, table: string, when: string | undefined, message: string) => {
      triggerTables.set(name, table);
      const row = op.toUpperCase() === "DELETE" ? "OLD" : "NEW";
      const cond = when ? triggerCondition(when) : "TRUE";
      return `CREATE OR REPLACE FUNCTION ${name}_fn() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN IF ${cond} THEN RAISE EXCEPTION ${message}; END IF; RETURN ${row}; END $fn$;
CREATE TRIGGER ${name} BEFORE ${op} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}_fn();`;
    },
  );
  code = code.replace(/DROP TRIGGER (IF EXISTS )?(\w+)\s*;/gi, (_, ifExists, name: string) => {
    const table = triggerTables.get(name) ?? name.replace(/_no_(update|delete)$/, "");
    return `DROP TRIGGER ${ifExists ?? ""}${name} ON ${table};`;
  });
  code = code.replace(
    /CREATE TABLE (\w+)\s*\(/gi,
    (whole, table: string) =>
      ROWID_COLUMNS.get(table) === "rowid"
        ? `${whole}\n  rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,`
        : whole,
  );
  code = code.replace(
    /\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?/gi,
    "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
  );
  code = code.replace(/\)\s*WITHOUT ROWID\s*;/gi, ");");
  code = code.replace(/\bINTEGER\b/g, "BIGINT");
  code = code.replace(/\bREAL\b/g, "DOUBLE PRECISION");
  code = code.replace(/\bBLOB\b/g, "BYTEA");
  return unmask(code, literals);
}

/** A column definition of `ADDED_COLUMNS` as PostgreSQL takes it. */
export function translateColumn(definition: string): string {
  return definition.replace(/\bINTEGER\b/g, "BIGINT").replace(/\bREAL\b/g, "DOUBLE PRECISION");
}
