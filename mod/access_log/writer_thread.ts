/**
 * The access-log writer thread: owns its own connection to the store and inserts the batches
 * the main thread posts, so SQLite work never stalls the data plane's event loop. Started by
 * `createWorkerWriter` in `worker_writer.ts`; `write` and `prune` messages go in, and
 * each answers `{id, written}` (rows inserted or deleted) or `{id, error}`.
 *
 * A `write` marked `defer` (the access log's timer and early flushes) waits here, up to
 * {@link DEFER_ROWS} rows or {@link DEFER_MS}, and the waiting batches are inserted in one
 * transaction (each in its own savepoint, so one failing batch fails alone) and answered in one
 * message: the timer's small batches are committed together rather than one commit and reply
 * each, while a transaction stays short (64 rows, see {@link DEFER_ROWS}). Any other message
 * writes what waits first, so reads see every row posted before them, and nothing holds the
 * write lock while waiting.
 *
 * Opened with `low`, the thread runs at nice 19; `createWorkerWriter` replaces it with one at
 * normal priority if it falls behind (starved by other processes' CPU use), and that one with a
 * new low-priority thread once it has been calm for a while.
 *
 * A write that carries `keep` (the access log's `max_records`) also deletes, in the same
 * transaction, the oldest rows beyond the newest `keep`: at most twice the rows it inserted, so
 * the table stays at `keep` under any traffic and a backlog (a lowered limit) shrinks as fast
 * as rows arrive, instead of overshooting until the scheduled retention deletes millions at once.
 */
/// <reference lib="deno.worker" />
import { setPriority } from "node:os";
import {
  type AccessLogRepo,
  createAccessLogRepo,
  openWriterStore,
} from "../../db/access_log_repo.ts";
import { type Db, transaction } from "../../db/store.ts";
import { lineFormat } from "./lines.ts";

/**
 * Deferred rows that are written at once, without waiting for the timer: one early flush's
 * worth, so a transaction is a burst of CPU short enough not to hold up the data plane's event
 * loop on the core it shares (docs/bench/2026-11-26-access-log-writer-low-priority.md).
 */
const DEFER_ROWS = 64;
/**
 * Deferred rows written together while the write queue is behind (its batches marked `bulk`):
 * one transaction, one savepoint set and one answer for this many rows instead of 64 cost less
 * a row, so a writer that fell behind catches up (docs/bench/2026-12-02-access-log-no-drop.md);
 * the longer bursts then matter less than the backlog.
 */
const BULK_ROWS = 1024;
/** The longest a deferred batch waits. */
const DEFER_MS = 50;

let repo: AccessLogRepo | undefined;
let db: Db | undefined;
/** Set by the main thread once this thread is replaced for falling behind (`worker_writer.ts`). */
let handOverFlag: Int32Array | undefined;

/** Whether writes not begun go back to the main thread, for the thread that replaced this one. */
function handingOver(): boolean {
  return handOverFlag !== undefined && Atomics.load(handOverFlag, 0) === 1;
}

type Message =
  /** `low`: run this thread at nice 19 (Linux only). */
  | { kind: "open"; path: string; low?: boolean; handOver?: SharedArrayBuffer }
  /** `lines`: rows as text (`lines.ts`), `count` of them. */
  | {
    kind: "write";
    id: number;
    lines: string;
    count: number;
    defer?: boolean;
    bulk?: boolean;
    keep?: number;
  }
  | { kind: "prune"; id: number; before: number; keep: number }
  | { kind: "read"; id: number; afterId: number; limit: number }
  | { kind: "start-cursor"; id: number; name: string; now: number; since?: number }
  | { kind: "save-cursor"; id: number; name: string; lastId: number; now: number }
  | { kind: "close" };

let waiting: Array<{ id: number; lines: string }> = [];
let waitingRows = 0;
let timer: ReturnType<typeof setTimeout> | undefined;
/** The newest `keep` a write carried (the access log's `max_records`). */
let keep: number | undefined;

/**
 * Deletes what is beyond the newest `keep` rows after `inserted` new ones, inside the caller's
 * transaction. A failure deletes nothing and is not the batch's: the scheduled retention, which
 * reports its failures, deletes the same rows.
 */
function trimAfter(inserted: number): number {
  if (keep === undefined || inserted === 0) return 0;
  try {
    return repo!.trim(keep, 2 * inserted);
  } catch {
    return 0;
  }
}

/**
 * Lowers this thread's CPU priority to nice 19, so the inserts run when the data plane's event
 * loop leaves the core. Only on Linux, where `setpriority` on thread id 0 (what `os.setPriority`
 * calls) changes the calling thread alone; elsewhere it would nice the whole process. A failure
 * leaves the thread as it was. There is no way back up without CAP_SYS_NICE: the main thread
 * replaces a starved low thread with a new one instead (`createWorkerWriter`).
 */
function lowerPriority(): void {
  if (Deno.build.os !== "linux") return;
  try {
    setPriority(19);
  } catch {
    // Not allowed (a sandbox's seccomp filter): the writer runs at normal priority.
  }
}

/** Inserts the deferred batches in one transaction and answers them in one message. */
function writeWaiting(): void {
  clearTimeout(timer);
  timer = undefined;
  if (waiting.length === 0) return;
  const batches = waiting;
  waiting = [];
  waitingRows = 0;
  if (handingOver()) {
    self.postMessage({ kind: "handover", ids: batches.map((b) => b.id) });
    return;
  }
  const ids = batches.map((b) => b.id);
  const results: Array<number | string> = [];
  let pruned = 0;
  try {
    transaction(db!, () => {
      let inserted = 0;
      for (const b of batches) {
        try {
          const n = repo!.insertLines(b.lines);
          inserted += n;
          results.push(n);
        } catch (err) {
          results.push(String(err));
        }
      }
      pruned = trimAfter(inserted);
    });
  } catch (err) {
    // The commit itself failed: no batch was written.
    results.length = 0;
    pruned = 0;
    for (const _ of batches) results.push(String(err));
  }
  self.postMessage({ kind: "batches", ids, results, pruned });
}

self.onmessage = (e: MessageEvent<Message>) => {
  const m = e.data;
  if (m.kind === "write" && m.keep !== undefined) keep = m.keep;
  if (m.kind === "write" && handingOver()) {
    writeWaiting();
    self.postMessage({ kind: "handover", ids: [m.id] });
    return;
  }
  if (m.kind === "write" && m.defer && db !== undefined) {
    waiting.push({ id: m.id, lines: m.lines });
    waitingRows += m.count;
    if (waitingRows >= (m.bulk ? BULK_ROWS : DEFER_ROWS)) writeWaiting();
    else timer ??= setTimeout(writeWaiting, DEFER_MS);
    return;
  }
  writeWaiting();
  if (m.kind === "open") {
    if (m.handOver) handOverFlag = new Int32Array(m.handOver);
    if (m.low) lowerPriority();
    db = openWriterStore(m.path);
    repo = createAccessLogRepo(db, lineFormat);
    self.postMessage({ kind: "opened" });
    return;
  }
  if (m.kind === "close") {
    db?.close();
    db = undefined;
    self.postMessage({ kind: "closed" });
    return;
  }
  try {
    if (m.kind === "write" && m.lines === "") {
      // Only a request to write what waited (done above).
      self.postMessage({ kind: "written", id: m.id, written: 0 });
      return;
    }
    if (m.kind === "write") {
      let pruned = 0;
      const written = transaction(db!, () => {
        const n = repo!.insertLines(m.lines);
        pruned = trimAfter(n);
        return n;
      });
      self.postMessage({ kind: "written", id: m.id, written, pruned });
      return;
    }
    const written = m.kind === "prune"
      ? repo!.pruneSlice(m.before, m.keep)
      : m.kind === "read"
      ? repo!.readAfter(m.afterId, m.limit)
      : m.kind === "start-cursor"
      ? repo!.startCursor(m.name, m.now, m.since)
      : repo!.saveCursor(m.name, m.lastId, m.now);
    self.postMessage({ kind: "written", id: m.id, written });
  } catch (err) {
    self.postMessage({ kind: "failed", id: m.id, error: String(err) });
  }
};
