/**
 * The access-log writer thread: owns its own connection to the store and inserts the batches
 * the main thread posts, so SQLite work never stalls the data plane's event loop. Started by
 * `createWorkerWriter` in `db/access_log_writer.ts`; `write` and `prune` messages go in, and
 * each answers `{id, written}` (rows inserted or deleted) or `{id, error}`.
 *
 * A `write` marked `defer` (the access log's timer and early flushes) waits here, up to
 * {@link DEFER_ROWS} rows or {@link DEFER_MS}, and the waiting batches are inserted in one
 * transaction (each in its own savepoint, so one failing batch fails alone) and answered in one
 * message: a commit and a reply per batch of 64 cost more than the inserts (see
 * docs/data-plane.md). Any other message writes what waits first, so reads see every row posted
 * before them, and nothing holds the write lock while waiting.
 */
/// <reference lib="deno.worker" />
import { DatabaseSync } from "node:sqlite";
import { type AccessLogRow, createAccessLogRepo } from "./access_log_repo.ts";
import { parseRowLines } from "./access_log_lines.ts";
import { transaction } from "./store.ts";

/** Deferred rows that are written at once, without waiting for the timer. */
const DEFER_ROWS = 512;
/** The longest a deferred batch waits. */
const DEFER_MS = 50;

let repo: ReturnType<typeof createAccessLogRepo> | undefined;
let db: DatabaseSync | undefined;

type Message =
  | { kind: "open"; path: string }
  /** `rows`, or `lines` (`db/access_log_lines.ts`: data-plane workers' rows, parsed here). */
  | { kind: "write"; id: number; rows?: AccessLogRow[]; lines?: string; defer?: boolean }
  | { kind: "prune"; id: number; before: number; keep: number }
  | { kind: "read"; id: number; afterId: number; limit: number }
  | { kind: "cursor"; id: number; name: string }
  | { kind: "save-cursor"; id: number; name: string; lastId: number; now: number }
  | { kind: "close" };

let waiting: Array<{ id: number; rows: AccessLogRow[] }> = [];
let waitingRows = 0;
let timer: ReturnType<typeof setTimeout> | undefined;

/** Inserts the deferred batches in one transaction and answers them in one message. */
function writeWaiting(): void {
  clearTimeout(timer);
  timer = undefined;
  if (waiting.length === 0) return;
  const batches = waiting;
  waiting = [];
  waitingRows = 0;
  const ids = batches.map((b) => b.id);
  const results: Array<number | string> = [];
  try {
    transaction(db!, () => {
      for (const b of batches) {
        try {
          results.push(repo!.insertBatch(b.rows));
        } catch (err) {
          results.push(String(err));
        }
      }
    });
  } catch (err) {
    // The commit itself failed: no batch was written.
    results.length = 0;
    for (const _ of batches) results.push(String(err));
  }
  self.postMessage({ kind: "batches", ids, results });
}

const rowsOf = (m: { rows?: AccessLogRow[]; lines?: string }) =>
  m.rows ?? parseRowLines(m.lines ?? "");

self.onmessage = (e: MessageEvent<Message>) => {
  const m = e.data;
  if (m.kind === "write" && m.defer && db !== undefined) {
    const rows = rowsOf(m);
    waiting.push({ id: m.id, rows });
    waitingRows += rows.length;
    if (waitingRows >= DEFER_ROWS) writeWaiting();
    else timer ??= setTimeout(writeWaiting, DEFER_MS);
    return;
  }
  writeWaiting();
  if (m.kind === "open") {
    db = new DatabaseSync(m.path, { timeout: 5000 });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    repo = createAccessLogRepo(db);
    return;
  }
  if (m.kind === "close") {
    db?.close();
    db = undefined;
    self.postMessage({ kind: "closed" });
    return;
  }
  try {
    const written = m.kind === "prune"
      ? repo!.pruneSlice(m.before, m.keep)
      : m.kind === "read"
      ? repo!.readAfter(m.afterId, m.limit)
      : m.kind === "cursor"
      ? repo!.cursor(m.name)
      : m.kind === "save-cursor"
      ? repo!.saveCursor(m.name, m.lastId, m.now)
      : repo!.insertBatch(rowsOf(m));
    self.postMessage({ kind: "written", id: m.id, written });
  } catch (err) {
    self.postMessage({ kind: "failed", id: m.id, error: String(err) });
  }
};
