/**
 * The PostgreSQL store's connection thread. The repositories are synchronous, so the store's
 * facade (pg_database.ts) posts each request here and waits on a shared buffer; this thread
 * runs it on its one connection (`postgres`, max 1: a transaction's statements share it) and
 * writes the answer into the buffer. When the database cannot be reached the `down` flag is set,
 * the facade fails at once instead of waiting, and this thread probes until it answers again.
 *
 * Buffer layout (Int32 slots): 0 state (0 waiting, 1 answered), 1 answer length, 2 down flag,
 * 3 the answered request's id; the answer (JSON) from byte 16. The buffer grows for a large
 * answer.
 */
/// <reference lib="deno.worker" />
import postgres from "postgres";
import { reconnectBackoff } from "./backoff.ts";
import { HEADER_BYTES } from "./pg_worker_layout.ts";

export interface PgWorkerInit {
  readonly op: "init";
  readonly dsn: string;
  readonly schema: string;
  readonly connectTimeoutMs: number;
  readonly statementTimeoutMs: number;
  readonly applicationName: string;
  readonly buffer: SharedArrayBuffer;
}

export interface PgStep {
  readonly text: string;
  readonly params: readonly unknown[];
  /** Several statements without parameters (the simple protocol). */
  readonly simple?: boolean;
}

export interface PgRequest {
  readonly op: "run";
  readonly id: number;
  readonly steps: readonly PgStep[];
  /** Inside a transaction: each step under a savepoint, so a failed one leaves the rest. */
  readonly guarded: boolean;
}

export interface PgAnswerOk {
  readonly ok: true;
  /** One entry per step: its rows and the affected count. */
  readonly results: { rows: Record<string, unknown>[]; count: number }[];
}

export interface PgAnswerError {
  readonly ok: false;
  readonly message: string;
  readonly code?: string;
  /** True when the database could not be reached (the facade answers STORE_UNAVAILABLE). */
  readonly unavailable: boolean;
}

const PROBE_MS = 1_000;

/** Codes of errors that mean the connection, not the statement, failed. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08003",
  "08006",
  "08001",
  "08004",
]);

function unavailable(err: unknown): boolean {
  const e = err as { code?: string; errno?: string; name?: string };
  return CONNECTION_CODES.has(e.code ?? "") || CONNECTION_CODES.has(e.errno ?? "") ||
    e.name === "ConnectionRefused" || e.name === "ConnectionReset" || e.name === "TimedOut";
}

// deno-lint-ignore no-explicit-any
type Sql = ReturnType<typeof postgres<any>>;

let sql: Sql | undefined;
let header: Int32Array;
let buffer: SharedArrayBuffer;
let probing = false;
const encoder = new TextEncoder();

function answer(id: number, body: PgAnswerOk | PgAnswerError): void {
  const bytes = encoder.encode(JSON.stringify(body));
  const need = HEADER_BYTES + bytes.length;
  if (need > buffer.byteLength) {
    // deno-lint-ignore no-explicit-any
    (buffer as any).grow(Math.max(need, Math.min(buffer.byteLength * 2, buffer.maxByteLength)));
  }
  new Uint8Array(buffer, HEADER_BYTES, bytes.length).set(bytes);
  Atomics.store(header, 1, bytes.length);
  Atomics.store(header, 3, id);
  Atomics.store(header, 0, 1);
  Atomics.notify(header, 0);
}

function setDown(down: boolean): void {
  Atomics.store(header, 2, down ? 1 : 0);
}

/** Probes until the database answers, then clears the down flag. */
function probe(): void {
  if (probing || !sql) return;
  probing = true;
  const attempt = async () => {
    try {
      await sql!.unsafe("SELECT 1");
      setDown(false);
      probing = false;
    } catch {
      setTimeout(attempt, PROBE_MS);
    }
  };
  setTimeout(attempt, PROBE_MS);
}

function init(m: PgWorkerInit): void {
  buffer = m.buffer;
  header = new Int32Array(buffer, 0, 4);
  const asNumber = (x: string) => Number(x);
  sql = postgres(m.dsn, {
    max: 1,
    idle_timeout: 0,
    backoff: reconnectBackoff,
    connect_timeout: Math.max(1, Math.ceil(m.connectTimeoutMs / 1000)),
    onnotice: () => {},
    prepare: true,
    connection: {
      application_name: m.applicationName.slice(0, 63),
      statement_timeout: m.statementTimeoutMs,
      search_path: m.schema,
    },
    types: {
      // SQLite answers integers and reals as numbers, booleans as 1/0 and JSON as its text.
      bigint: { to: 20, from: [20, 1700], serialize: (x: unknown) => String(x), parse: asNumber },
      bool: {
        to: 16,
        from: [16],
        serialize: (x: unknown) => (x ? "t" : "f"),
        parse: (x: string) => (x === "t" ? 1 : 0),
      },
      json: { to: 114, from: [114, 3802], serialize: String, parse: (x: string) => x },
    },
  });
}

async function runSteps(m: PgRequest): Promise<PgAnswerOk["results"]> {
  const results: PgAnswerOk["results"] = [];
  for (const step of m.steps) {
    const make = () =>
      step.simple
        ? sql!.unsafe(step.text)
        : sql!.unsafe(step.text, step.params as never[], { prepare: true });
    if (!m.guarded) {
      const rows = await make();
      results.push({ rows: [...rows] as Record<string, unknown>[], count: rows.count ?? 0 });
      continue;
    }
    // Pipelined on the one connection, in this order: the savepoint, the statement, its release
    // (a query is sent when it is executed, so each is executed before the next is made).
    const save = sql!.unsafe("SAVEPOINT waf_step").execute();
    const query = make().execute();
    const release = sql!.unsafe("RELEASE SAVEPOINT waf_step").execute();
    try {
      await save;
      const rows = await query;
      await release;
      results.push({ rows: [...rows] as Record<string, unknown>[], count: rows.count ?? 0 });
    } catch (err) {
      await Promise.allSettled([save, query, release]);
      if (!unavailable(err)) {
        await sql!.unsafe("ROLLBACK TO SAVEPOINT waf_step").catch(() => {});
        await sql!.unsafe("RELEASE SAVEPOINT waf_step").catch(() => {});
      }
      throw err;
    }
  }
  return results;
}

self.onmessage = async (
  e: MessageEvent<PgWorkerInit | PgRequest | { op: "close"; id: number }>,
) => {
  const m = e.data;
  if (m.op === "init") return init(m);
  if (m.op === "close") {
    await sql?.end({ timeout: 1 }).catch(() => {});
    answer(m.id, { ok: true, results: [] });
    return;
  }
  try {
    answer(m.id, { ok: true, results: await runSteps(m) });
  } catch (err) {
    const e = err as { message?: string; code?: string };
    const down = unavailable(err);
    if (down) {
      setDown(true);
      probe();
    }
    answer(m.id, {
      ok: false,
      message: String(e.message ?? err),
      code: typeof e.code === "string" ? e.code : undefined,
      unavailable: down,
    });
  }
};
