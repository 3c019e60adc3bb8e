/**
 * The SQL vocabulary the injection rules give meaning to: delay and error-leaking
 * functions, system catalogs, statement starts. It also yields {@link SQL_TRIGGER}, the
 * cheap prefilter that lets values without any of this vocabulary skip tokenizing.
 */

import { factorAlternation } from "./regex_factor.ts";

/** Functions that delay the response: the classic blind-injection oracle. */
export const DELAY_FUNCTIONS: ReadonlySet<string> = new Set([
  "sleep",
  "benchmark",
  "pg_sleep",
  "pg_sleep_for",
  "randomblob",
  "dbms_lock.sleep",
  "dbms_pipe.receive_message",
  "dbms_session.sleep",
]);
/** Functions abused to leak data through error messages or out-of-band channels. */
export const ERROR_FUNCTIONS: ReadonlySet<string> = new Set([
  "extractvalue",
  "updatexml",
  "name_const",
  "geometrycollection",
  "multipoint",
  "multipolygon",
  "multilinestring",
  "polygon",
  "linestring",
  "gtid_subset",
  "json_keys",
  "utl_inaddr.get_host_name",
  "utl_inaddr.get_host_address",
  "utl_http.request",
  "ctxsys.drithsx.sn",
  "dbms_xmlgen.getxml",
  "dbms_utility.sqlid_to_sqlhash",
  "xmltype",
  "load_file",
  "sys_eval",
  "sys_exec",
  "xp_cmdshell",
  "xp_dirtree",
  "openrowset",
  "opendatasource",
  "pg_read_file",
  "lo_import",
  "dbms_ldap.init",
  // PostgreSQL: large objects and server files read into a query.
  "lo_get",
  "lo_export",
  "pg_ls_dir",
  "pg_read_binary_file",
  "dblink",
  "query_to_xml",
  // SQLite loads a shared library; Oracle runs Java.
  "load_extension",
  "dbms_java.runjava",
]);
/** Catalogs that list tables, columns and users: reading them is reconnaissance. */
export const SCHEMA_NAMES: ReadonlySet<string> = new Set([
  "information_schema",
  "sysobjects",
  "syscolumns",
  "sysdatabases",
  "sysusers",
  "pg_catalog",
  "pg_shadow",
  "pg_user",
  "pg_tables",
  "sqlite_master",
  "sqlite_schema",
  "all_tables",
  "all_tab_columns",
  "user_tables",
  "dba_users",
  "all_users",
  "v$version",
  "mysql.user",
  "master..sysdatabases",
]);
/**
 * Catalogs and system databases whose name alone, as a whole value, is reconnaissance: the
 * catalogs above plus SQL Server's system and sample databases.
 */
export const CATALOG_NAMES: ReadonlySet<string> = new Set([
  ...SCHEMA_NAMES,
  "performance_schema",
  "pg_database",
  "pg_namespace",
  "pg_class",
  "pg_proc",
  "pg_roles",
  "pg_authid",
  "sys.objects",
  "sys.tables",
  "sys.columns",
  "sys.databases",
  "sys.sql_logins",
  "msdb",
  "tempdb",
  "northwind",
  "adventureworks",
]);
/** Statement starts after `;` with the word that must follow for it to be a statement. */
export const STACKED: ReadonlyMap<string, ReadonlySet<string> | "operand" | "any"> = new Map<
  string,
  ReadonlySet<string> | "operand" | "any"
>([
  ["drop", new Set(["table", "database", "view", "procedure", "function", "user", "schema"])],
  ["delete", new Set(["from"])],
  ["insert", new Set(["into"])],
  ["replace", new Set(["into"])],
  ["truncate", new Set(["table"])],
  ["create", new Set(["table", "user", "database", "procedure", "function", "view", "login"])],
  ["alter", new Set(["table", "user", "database", "login"])],
  ["waitfor", new Set(["delay", "time"])],
  ["merge", new Set(["into"])],
  ["backup", new Set(["database", "log"])],
  ["restore", new Set(["database"])],
  ["grant", new Set(["all", "connect", "resource", "dba", "select", "insert", "execute", "admin"])],
  ["exec", "any"],
  ["execute", "any"],
  ["declare", "any"],
  ["shutdown", "any"],
  ["select", "operand"],
  ["update", "any"],
  ["set", "operand"],
]);
/**
 * Statements that can follow a closed literal without `;` (SQL Server runs them), and the word
 * each needs next: the stacked statements that name their object, plus privilege and backup
 * statements; `update` is read as `update <table> set`.
 */
export const BREAKOUT_STATEMENTS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ...[...STACKED].filter((e): e is [string, ReadonlySet<string>] => typeof e[1] !== "string"),
  ["revoke", new Set(["all", "connect", "resource", "dba", "select", "insert", "execute"])],
  ["update", new Set<string>()],
]);

/**
 * Type names a PostgreSQL cast (`::int`) names: the built-in types of the PostgreSQL manual
 * ("Data Types") that injected casts use to force a conversion error or reach JSON operators.
 */
export const SQL_TYPES: ReadonlySet<string> = new Set([
  "int",
  "int2",
  "int4",
  "int8",
  "integer",
  "smallint",
  "bigint",
  "numeric",
  "decimal",
  "real",
  "float",
  "float4",
  "float8",
  "double",
  "money",
  "text",
  "varchar",
  "char",
  "character",
  "bpchar",
  "name",
  "bytea",
  "bool",
  "boolean",
  "json",
  "jsonb",
  "jsonpath",
  "xml",
  "uuid",
  "inet",
  "cidr",
  "date",
  "timestamp",
  "timestamptz",
  "interval",
  "oid",
  "regclass",
  "regproc",
  "regtype",
  "tsvector",
  "tsquery",
]);

/** MSSQL extended and system stored procedures. */
export const SYSTEM_PROCEDURE = /^(?:xp|sp)_[a-z]/;
/** Clauses that may follow a WHERE condition (`' or 1 limit 1 --`). */
export const CLAUSE_ENDS: ReadonlySet<string> = new Set([
  "limit",
  "order",
  "group",
  "union",
  "into",
]);
/** A quote inside a truncating comment means the "comment" is really more text or code. */
export const QUOTE_CHAR = /['"]/;
export const CONDITION_WORDS: ReadonlySet<string> = new Set(["where", "having", "when"]);
export const LITERAL_WORDS: ReadonlySet<string> = new Set(["null", "true", "false"]);

/** Words any rule in `sql_rules.ts` starts from (besides the sets above). */
const RULE_WORDS = [
  "and",
  "or",
  "xor",
  "union",
  "select",
  "waitfor",
  "into",
  "order",
  "group",
  "exec",
  "execute",
  "case",
  "program",
  "dual",
  ...CONDITION_WORDS,
];

function escape(word: string): string {
  return word.replace(/[.$]/g, (c) => `\\${c}`);
}

/**
 * Matches when a value contains anything a SQL rule could start from: a quote, a logical
 * operator, `@@`, or one of the rule words and function names (also right after the version of
 * MySQL's executable comment, `50000union` after its `!`, which the lexer reads as code). Built from the
 * same sets the rules use, so the prefilter cannot drift from them.
 */
const TRIGGER_WORDS = "&&|\\|\\||@@|::\\s*[a-z]|(?:^|[^a-z0-9_$]|![0-9]{5,6})(?:" +
  [
    ...RULE_WORDS,
    ...DELAY_FUNCTIONS,
    ...ERROR_FUNCTIONS,
    ...SCHEMA_NAMES,
    ...STACKED.keys(),
  ].map((w) => escape(w.split(".")[0]!)).join("|") +
  ")(?![a-z0-9_$])";
export const SQL_TRIGGER: RegExp = factorAlternation(new RegExp(`['"]|${TRIGGER_WORDS}`, "i"));
/**
 * `1.e(`, `1234 as "x" from`, `) as t from`: number and alias rules that no vocabulary word
 * announces, tested only when {@link SQL_TRIGGER} did not match.
 */
const GLUED_NUMBER = /[0-9]\.e(?![a-z0-9_$])/i;
const ALIAS = /[0-9)`'"]\s*as\s+\S{1,64}\s+from(?![a-z0-9_$])/i;
const NUMBER_HINT = /\.e|from/i;

/** True when a value holds what the number or alias rules start from. */
export function numberTrigger(text: string): boolean {
  return NUMBER_HINT.test(text) && (GLUED_NUMBER.test(text) || ALIAS.test(text));
}
/**
 * What a rule read in prose can start from: {@link SQL_TRIGGER} without the quotes, which only
 * matter where a value can close a literal (its start). A long value's later windows are only
 * read when this matches in them.
 */
export const PROSE_TRIGGER: RegExp = factorAlternation(new RegExp(TRIGGER_WORDS, "i"));
