/**
 * The management store on PostgreSQL, behind the same synchronous interface as SQLite's
 * `DatabaseSync` (prepare/get/all/run, exec, isTransaction, close), so the repositories and the
 * services do not know which engine they use. Each call is handed to the store's connection
 * thread (pg_worker.ts) and waited for on a shared buffer (`Atomics.wait`): the management plane
 * blocks for one round trip, the data planes (their own threads) never wait on the store.
 *
 * Semantics kept from SQLite:
 * - `BEGIN IMMEDIATE` takes the deployment's write lock (a transaction-scoped advisory lock), so
 *   writers are serialised across controllers the way SQLite serialises them across processes;
 * - a failed statement inside a transaction fails alone (each runs under a savepoint; PostgreSQL
 *   would otherwise abort the whole transaction);
 * - a commit that wrote tables tells the other controllers which (`NOTIFY waf_store_changes`,
 *   delivered only when the commit is), and so does a write outside a transaction.
 *
 * When the database cannot be reached, calls fail at once with {@link StoreUnavailableError}
 * (the API answers 503 `STORE_UNAVAILABLE`) until the connection thread's probe gets an answer.
 */
import type { SQLOutputValue } from "node:sqlite";
import { ADDED_COLUMNS, MIGRATIONS, SCHEMA_VERSION } from "../migrations.ts";
import {
  type PgStatement,
  translateColumn,
  translateMigration,
  translateStatement,
} from "./dialect.ts";
import type { PgAnswerError, PgAnswerOk, PgRequest, PgStep, PgWorkerInit } from "./pg_worker.ts";
import { HEADER_BYTES, waitForAnswer } from "./pg_worker_layout.ts";
import { SchemaTooNewError } from "../store.ts";

/** The channel every committed write notifies (mod/deployment listens on it). */
const CHANGE_CHANNEL = "waf_store_changes";

/**
 * What only the PostgreSQL store has: the deployment-wide log of changed policy objects (on
 * SQLite a connection's temporary triggers do this, db/policy_object_changes.ts), which a
 * controller reads to apply another controller's IP-list changes without a full rebuild.
 */
const PG_SUPPORT_SQL = `
CREATE TABLE IF NOT EXISTS policy_object_changes (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind TEXT NOT NULL,
  id TEXT NOT NULL
);
CREATE OR REPLACE FUNCTION policy_object_changes_fn() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP <> 'INSERT' THEN INSERT INTO policy_object_changes (kind, id) VALUES (OLD.kind, OLD.id); END IF;
  IF TG_OP <> 'DELETE' THEN INSERT INTO policy_object_changes (kind, id) VALUES (NEW.kind, NEW.id); END IF;
  RETURN NULL;
END $fn$;
CREATE OR REPLACE TRIGGER policy_object_changes_log AFTER INSERT OR UPDATE OR DELETE
  ON policy_objects FOR EACH ROW EXECUTE FUNCTION policy_object_changes_fn();`;

export class StoreUnavailableError extends Error {
  readonly code = "STORE_UNAVAILABLE";
  constructor(detail: string) {
    super(`The management database is unavailable: ${detail}`);
    this.name = "StoreUnavailableError";
  }
}

/** A statement PostgreSQL refused (its SQLSTATE in `code`). */
export class PgStoreError extends Error {
  readonly code: string | undefined;
  /** The statement's text (never its parameters), for the log. */
  readonly statement: string | undefined;
  constructor(message: string, code: string | undefined, statement?: string) {
    super(message);
    this.name = "PgStoreError";
    this.code = code;
    this.statement = statement;
  }
}

export interface PgStoreOptions {
  readonly dsn: string;
  readonly schema: string;
  readonly connectTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** This controller's id: its change notices carry it, so it ignores its own. */
  readonly controllerId: string;
}

type Params = readonly unknown[];

interface RunResult {
  changes: number;
  lastInsertRowid: number;
}

function bindValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "bigint") return String(v);
  return v;
}

class PgPrepared {
  readonly #db: PgDatabase;
  readonly #t: PgStatement;
  readonly #stripRowid: boolean;
  constructor(db: PgDatabase, t: PgStatement, sql: string) {
    this.#db = db;
    this.#t = t;
    this.#stripRowid = /\bSELECT\s+(?:DISTINCT\s+)?(?:\w+\.)?\*/i.test(sql);
  }

  #bind(params: Params): unknown[] {
    const names = this.#t.names;
    if (!names) return params.map(bindValue);
    const bag = (params[0] ?? {}) as Record<string, unknown>;
    return names.map((n) => bindValue(bag[n] ?? bag[`:${n}`] ?? bag[`$${n}`] ?? bag[`@${n}`]));
  }

  #rows(params: Params): { rows: Record<string, unknown>[]; count: number } {
    const result = this.#db.query(this.#t, this.#bind(params));
    if (this.#stripRowid) {
      for (const row of result.rows) delete row.rowid;
    }
    return result;
  }

  get(...params: Params): Record<string, SQLOutputValue> | undefined {
    return this.#rows(params).rows[0] as Record<string, SQLOutputValue> | undefined;
  }

  all(...params: Params): Record<string, SQLOutputValue>[] {
    return this.#rows(params).rows as Record<string, SQLOutputValue>[];
  }

  run(...params: Params): RunResult {
    const { rows, count } = this.#db.query(this.#t, this.#bind(params));
    const id = this.#t.returnsRowid ? rows[0]?.rowid__ : undefined;
    return { changes: count, lastInsertRowid: typeof id === "number" ? id : 0 };
  }
}

export class PgDatabase {
  readonly engine = "postgresql" as const;
  readonly controllerId: string;
  readonly schema: string;
  readonly #options: PgStoreOptions;
  readonly #cache = new Map<string, PgStatement>();
  readonly #written = new Set<string>();
  #worker!: Worker;
  #buffer!: SharedArrayBuffer;
  #header!: Int32Array;
  #nextId = 0;
  #inTx = false;
  #open = true;
  #decoder = new TextDecoder();

  constructor(options: PgStoreOptions) {
    this.#options = options;
    this.controllerId = options.controllerId;
    this.schema = options.schema;
    this.#start();
  }

  #start(): void {
    // deno-lint-ignore no-explicit-any
    this.#buffer = new (SharedArrayBuffer as any)(1 << 16, { maxByteLength: 1 << 30 });
    this.#header = new Int32Array(this.#buffer, 0, 4);
    this.#worker = new Worker(new URL("./pg_worker.ts", import.meta.url), { type: "module" });
    const init: PgWorkerInit = {
      op: "init",
      dsn: this.#options.dsn,
      schema: this.#options.schema,
      connectTimeoutMs: this.#options.connectTimeoutMs,
      statementTimeoutMs: this.#options.statementTimeoutMs,
      applicationName: `waf ${this.#options.controllerId}`,
      buffer: this.#buffer,
    };
    this.#worker.postMessage(init);
  }

  /** True while the connection thread has found the database unreachable. */
  get unavailable(): boolean {
    return Atomics.load(this.#header, 2) === 1;
  }

  get isTransaction(): boolean {
    return this.#inTx;
  }

  get isOpen(): boolean {
    return this.#open;
  }

  /** Runs `steps` on the connection thread and waits for the answer. */
  #call(steps: readonly PgStep[], guarded: boolean): PgAnswerOk["results"] {
    if (!this.#open) throw new Error("database is not open");
    if (this.unavailable) {
      throw new StoreUnavailableError("the connection failed and is being retried");
    }
    const id = ++this.#nextId;
    Atomics.store(this.#header, 0, 0);
    const request: PgRequest = { op: "run", id, steps, guarded };
    this.#worker.postMessage(request);
    const limit = this.#options.statementTimeoutMs + this.#options.connectTimeoutMs + 2_000;
    if (!waitForAnswer(this.#header, id, limit)) {
      // The thread is stuck on a dead connection: a fresh one (the database rolls back whatever
      // transaction the old connection held when it goes).
      this.#worker.terminate();
      this.#inTx = false;
      this.#written.clear();
      this.#start();
      throw new StoreUnavailableError(`no answer within ${limit} ms`);
    }
    const length = Atomics.load(this.#header, 1);
    const bytes = new Uint8Array(this.#buffer, HEADER_BYTES, length).slice();
    const answer = JSON.parse(this.#decoder.decode(bytes)) as PgAnswerOk | PgAnswerError;
    if (answer.ok) return answer.results;
    if (answer.unavailable) {
      this.#inTx = false;
      this.#written.clear();
      throw new StoreUnavailableError(answer.message);
    }
    throw new PgStoreError(answer.message, answer.code, steps.map((s) => s.text).join("; "));
  }

  #notice(tables: Iterable<string>): PgStep {
    const payload = JSON.stringify({
      controller: this.controllerId,
      schema: this.schema,
      tables: [...tables],
    });
    return { text: "SELECT pg_notify($1, $2)", params: [CHANGE_CHANNEL, payload] };
  }

  /** One translated statement with its bound parameters. */
  query(t: PgStatement, params: unknown[]): { rows: Record<string, unknown>[]; count: number } {
    const step: PgStep = { text: t.text, params };
    if (this.#inTx) {
      const [result] = this.#call([step], true);
      if (t.writes && t.notice) this.#written.add(t.writes);
      return result!;
    }
    const steps = t.writes && t.notice ? [step, this.#notice([t.writes])] : [step];
    return this.#call(steps, false)[0]!;
  }

  prepare(sql: string): PgPrepared {
    let t = this.#cache.get(sql);
    if (!t) {
      t = translateStatement(sql);
      this.#cache.set(sql, t);
    }
    return new PgPrepared(this, t, sql);
  }

  exec(sql: string): void {
    const s = sql.trim().replace(/;$/, "").trim();
    const upper = s.toUpperCase();
    if (/^BEGIN( IMMEDIATE| DEFERRED| EXCLUSIVE)?( TRANSACTION)?$/.test(upper)) {
      if (this.#inTx) {
        throw new PgStoreError("cannot start a transaction within a transaction", undefined);
      }
      this.#call([
        { text: "BEGIN", params: [], simple: true },
        { text: "SELECT pg_advisory_xact_lock(hashtext(current_schema()))", params: [] },
      ], false);
      this.#inTx = true;
      this.#written.clear();
      return;
    }
    if (upper === "COMMIT" || upper === "END") {
      const steps: PgStep[] = this.#written.size > 0 ? [this.#notice(this.#written)] : [];
      steps.push({ text: "COMMIT", params: [], simple: true });
      try {
        this.#call(steps, false);
      } finally {
        this.#inTx = false;
        this.#written.clear();
      }
      return;
    }
    if (upper === "ROLLBACK") {
      this.#inTx = false;
      this.#written.clear();
      this.#call([{ text: "ROLLBACK", params: [], simple: true }], false);
      return;
    }
    if (upper.startsWith("PRAGMA ")) return;
    this.#call([{ text: s, params: [], simple: true }], false);
  }

  /** Opens the schema and applies the migrations above its version, under the write lock. */
  migrate(now: number, targetVersion = SCHEMA_VERSION): number {
    const q = (text: string, params: unknown[] = []) => ({ text, params });
    this.#call([
      { text: `CREATE SCHEMA IF NOT EXISTS "${this.schema}"`, params: [], simple: true },
    ], false);
    this.exec("BEGIN");
    try {
      this.#call([
        q(`CREATE TABLE IF NOT EXISTS schema_migrations
            (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`),
      ], false);
      const [found] = this.#call([
        q("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations"),
      ], false);
      const current = Number(found!.rows[0]!.v);
      if (current > SCHEMA_VERSION) {
        throw new SchemaTooNewError(current, SCHEMA_VERSION);
      }
      for (const m of MIGRATIONS) {
        if (m.version <= current || m.version > targetVersion) continue;
        this.#call([
          { text: translateMigration(m.sql), params: [], simple: true },
          q("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
            m.version,
            m.name,
            now,
          ]),
        ], false);
      }
      const reached = Math.max(current, Math.min(targetVersion, SCHEMA_VERSION));
      for (const c of ADDED_COLUMNS) {
        if (c.version > reached) continue;
        this.#call([
          {
            text: `ALTER TABLE ${c.table} ADD COLUMN IF NOT EXISTS ${c.column} ${
              translateColumn(c.definition)
            }`,
            params: [],
            simple: true,
          },
        ], false);
      }
      this.#call([{ text: PG_SUPPORT_SQL, params: [], simple: true }], false);
      this.exec("COMMIT");
      return reached;
    } catch (err) {
      if (this.#inTx) this.exec("ROLLBACK");
      throw err;
    }
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    // The thread ends its connection (up to a second), then the thread goes.
    const id = ++this.#nextId;
    Atomics.store(this.#header, 0, 0);
    this.#worker.postMessage({ op: "close", id });
    waitForAnswer(this.#header, id, 2_000);
    this.#worker.terminate();
  }
}

/** Opens (creating its schema when absent) and migrates the PostgreSQL store. */
export function openPgStore(
  options: PgStoreOptions & { readonly now: number; readonly targetVersion?: number },
): PgDatabase {
  const db = new PgDatabase(options);
  try {
    db.migrate(options.now, options.targetVersion);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
