/**
 * A controller killed in the middle of a write (tests/db/pg_store_test.ts): opens the PostgreSQL
 * store of schema `Deno.args[1]` on DSN `Deno.args[0]`, starts a transaction, writes into it,
 * prints "written" and waits inside the transaction until the test kills the process.
 */
import { openPgStore } from "../../db/pg/pg_database.ts";
import { transaction } from "../../db/store.ts";

const [dsn, schema] = Deno.args as [string, string];
const db = openPgStore({
  dsn,
  schema,
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 60_000,
  controllerId: "killed",
  now: Date.now(),
});
transaction(db, () => {
  db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('half.1', '1', 1)").run();
  db.prepare("INSERT INTO settings (key, value, updated_at) VALUES ('half.2', '1', 1)").run();
  console.log("written");
  // Blocks the thread inside the transaction (the store's calls are synchronous): killed here.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
});
