/**
 * Where access-log batches are written: directly on this thread (tests, tools) or by a
 * writer thread with its own store connection (the running server), so the insert work and
 * its pauses stay off the data plane's event loop.
 */
import type { AccessLogRepo, ShipStart, StoredAccessLogRow } from "../../db/access_log_repo.ts";

/** How a batch of rows is written. */
export interface WriteOptions {
  /** Rows in the batch (the writer thread counts the deferred rows with it). */
  readonly count: number;
  /** May wait a little to be written with the next batches (fewer commits). */
  readonly defer?: boolean;
  /**
   * Keep the newest `keep` rows: the same transaction deletes the oldest beyond them, at most
   * twice the rows written (`max_records` in step with the inserts).
   */
  readonly keep?: number;
}

export interface AccessLogWriter {
  /**
   * Writes rows given as text (`mod/access_log/lines.ts`); resolves with the number of rows
   * written, rejects when the batch failed. A batch that is not deferred writes every batch
   * before it too ("" writes only those).
   */
  writeLines(lines: string, options: WriteOptions): Promise<number>;
  /**
   * One slice of retention (rows older than `before`, then all but the newest `keep`); resolves
   * with the rows deleted, 0 when done. Batches written meanwhile go in between slices.
   */
  prune(before: number, keep: number): Promise<number>;
  /** Rows the writes' `keep` deleted so far. */
  trimmed(): number;
  /** Times the writer thread was replaced by one at normal priority (`createWorkerWriter`). */
  escalations?(): number;
  /** Times a normal-priority writer thread was replaced by a low-priority one again. */
  deescalations?(): number;
  close(): Promise<void>;
}

/** What a sink ships from: the stored rows and its persisted cursor. */
export interface ShipSource {
  /**
   * Rows after row id `afterId` (oldest first, at most `limit`) and the newest id stored: what a
   * sink ships from. Read where the inserts run, after every batch posted before it.
   */
  readAfter(afterId: number, limit: number): Promise<{ rows: StoredAccessLogRow[]; maxId: number }>;
  /**
   * A sink's starting point: its persisted cursor (the last row id it shipped), or, for a sink
   * never started, the newest id stored when the request is handled, saved as its cursor. The
   * request takes its place among the writes: a sink asks when it is created, so every row
   * written after that is after its cursor (a second request for the newest id, sent once the
   * first answered, let the rows written in between pass unshipped). A sink asking again after
   * the store failed passes `since` (when it first asked, less a margin): it then starts before
   * the first row of a request that ended since, not at the newest. A save the store refuses
   * still answers the start (`saved: false`, see `AccessLogRepo.startCursor`).
   */
  startCursor(name: string, now: number, since?: number): Promise<ShipStart>;
  saveCursor(name: string, lastId: number, now: number): Promise<void>;
}

/** Writes on the calling thread. */
export function directWriter(repo: AccessLogRepo): AccessLogWriter & ShipSource {
  let trimmed = 0;
  return {
    writeLines: (lines, options) =>
      attempt(() => {
        const n = lines === "" ? 0 : repo.insertLines(lines);
        if (options.keep !== undefined && n > 0) trimmed += repo.trim(options.keep, 2 * n);
        return n;
      }),
    prune: (before, keep) => attempt(() => repo.pruneSlice(before, keep)),
    trimmed: () => trimmed,
    readAfter: (afterId, limit) => attempt(() => repo.readAfter(afterId, limit)),
    startCursor: (name, now, since) => attempt(() => repo.startCursor(name, now, since)),
    saveCursor: (name, lastId, now) => attempt(() => repo.saveCursor(name, lastId, now)),
    close: () => Promise.resolve(),
  };
}

function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

type Reply =
  /** `pruned`: rows a write's `keep` deleted. */
  | { kind: "written"; id: number; written: unknown; pruned?: number }
  /** Deferred batches written together: a row count, or the error, per batch. */
  | { kind: "batches"; ids: number[]; results: Array<number | string>; pruned: number }
  | { kind: "failed"; id: number; error: string }
  /** The thread has its store connection: from now on it answers at its normal pace. */
  | { kind: "opened" }
  | { kind: "closed" };

/** How `createWorkerWriter` runs its writer thread. */
export interface WorkerWriterOptions {
  /**
   * The writer thread runs at the lowest CPU priority (nice 19, Linux only), so its bursts of
   * inserts yield the core to the data plane's event loop. Default true.
   */
  readonly low?: boolean;
  /**
   * How long the oldest unanswered request may wait before the writer is escalated (ms, default
   * {@link ESCALATE_AFTER_MS}): a second writer thread at normal priority takes every later
   * request, and the low-priority one writes what it was given and closes.
   */
  readonly escalateAfterMs?: number;
  /**
   * How long an escalated writer must answer every request within {@link CALM_LATE_MS} before a
   * new low-priority thread takes over again (ms, default {@link CALM_MS}). Doubles after each
   * return, up to {@link CALM_MAX_MS}, so a machine that keeps starving the low thread does not
   * make the writer switch back and forth.
   */
  readonly calmMs?: number;
  /** Told when the writer is escalated, how old the oldest unanswered request was. */
  readonly onEscalate?: (info: { waited_ms: number; unanswered: number }) => void;
  /** Told when an escalated writer returned to low priority, after how long a calm period. */
  readonly onDeescalate?: (info: { calm_ms: number }) => void;
  /** Told when a writer thread failed (its module did not load, its store did not open). */
  readonly onThreadError?: (info: { error: string; rejected: number }) => void;
}

/**
 * The default escalation threshold: a request is normally answered within the deferral (50 ms)
 * plus its insert, so a second without an answer means the low-priority thread is starved
 * (other processes keep both cores busy) or the store is locked.
 */
export const ESCALATE_AFTER_MS = 1000;
/**
 * The calm period before an escalated writer returns to low priority: a minute in which no
 * request waited over {@link CALM_LATE_MS}. Long enough that a store locked by a backup or a
 * machine saturated for a moment is over, short enough that one such moment does not cost the
 * low priority until the process restarts.
 */
export const CALM_MS = 60_000;
/** The calm period doubles after each return, up to an hour. */
export const CALM_MAX_MS = 3_600_000;
/** An answer later than this (ms) is not calm: the deferral (50 ms) plus an insert, twice over. */
export const CALM_LATE_MS = 100;
/** The first wait before a failed writer thread is started again (ms), doubling up to a minute. */
const RESTART_MS = 1000;
const RESTART_MAX_MS = 60_000;

/** A worker writer also tells how often it was escalated and returned to low priority. */
export interface WorkerWriter extends AccessLogWriter, ShipSource {
  escalations(): number;
  deescalations(): number;
}

/**
 * Writes on a worker thread that opens its own connection to the store at `path`.
 *
 * The thread runs at nice 19 (`low`), which an unprivileged thread cannot undo (RLIMIT_NICE is 0
 * and containers lack CAP_SYS_NICE): under CPU contention from other processes it would starve
 * and the log drop most records. So the priority is given back by switching threads: once the
 * oldest unanswered request is older than `escalateAfterMs`, a second thread of the same module
 * starts at normal priority (spawned by this thread, so at its nice value) and takes every later
 * message, and the first is sent `close` (messages are handled in order, so it writes and answers
 * everything it was given, then closes). Replies of both go to the same pending requests. Once the
 * normal-priority thread has answered every request within {@link CALM_LATE_MS} for `calmMs`, a
 * new low-priority thread takes over the same way; the writer may escalate again, and the next
 * calm period is twice as long (up to {@link CALM_MAX_MS}). Ordering: rows still waiting in the
 * previous thread are committed after rows the next one writes, so they get the higher row ids
 * (the PostgreSQL shipper's id cursor still ships them: they are after it); a lookup meanwhile may
 * not see them until the previous thread has written them.
 *
 * A thread that fails (its module does not load, its store does not open) rejects the requests
 * it was given, and the next request starts a new thread, no sooner than {@link RESTART_MS} after
 * the failure (doubling while they keep failing); requests meanwhile are rejected.
 */
export function createWorkerWriter(path: string, options: WorkerWriterOptions = {}): WorkerWriter {
  const escalateAfterMs = options.escalateAfterMs ?? ESCALATE_AFTER_MS;
  let calmMs = options.calmMs ?? CALM_MS;
  let next = 0;
  /** Unanswered requests in the order they were posted (a `Map` keeps insertion order). */
  const pending = new Map<
    number,
    {
      resolve: (v: never) => void;
      reject: (e: Error) => void;
      posted: number;
      worker: Worker;
      /** A sink's start: asked again of the next thread at a switch (see `switchTo`). */
      start?: Record<string, unknown>;
    }
  >();
  let trimmed = 0;
  let escalations = 0;
  let deescalations = 0;
  /** The threads not closed yet, each with what resolves once it has. */
  const alive = new Map<Worker, { closed: Promise<void>; end: () => void }>();
  /** While escalated: when an answer last came late (or the escalation). */
  let lastLate = 0;
  const onReply = (m: Exclude<Reply, { kind: "closed" | "opened" }>) => {
    if (m.kind !== "failed") trimmed += m.pruned ?? 0;
    // Only while escalated (one clock read a reply, not a record): is the writer calm?
    const now = escalated ? performance.now() : 0;
    const settle = (id: number) => {
      const p = pending.get(id);
      if (p !== undefined && escalated && now - p.posted > CALM_LATE_MS) lastLate = now;
      pending.delete(id);
      return p;
    };
    if (m.kind === "batches") {
      m.ids.forEach((id, i) => {
        const p = settle(id);
        const r = m.results[i];
        if (typeof r === "number") p?.resolve(r as never);
        else p?.reject(new Error(`Access-log batch failed: ${r}`));
      });
      return;
    }
    const p = settle(m.id);
    if (m.kind === "written") p?.resolve(m.written as never);
    else p?.reject(new Error(`Access-log batch failed: ${m.error}`));
  };
  /** Consecutive threads that failed before opening the store, and when the last did. */
  let failures = 0;
  let failedAt = 0;
  /** A thread failed: what it was given fails, and the next request starts another. */
  const failed = (worker: Worker, error: string): void => {
    worker.terminate();
    alive.get(worker)?.end();
    let rejected = 0;
    for (const [id, p] of pending) {
      if (p.worker !== worker) continue;
      pending.delete(id);
      p.reject(new Error(`Access-log writer thread failed: ${error}`));
      rejected++;
    }
    if (worker === current) {
      current = undefined;
      failures++;
      failedAt = performance.now();
    }
    options.onThreadError?.({ error, rejected });
  };
  const spawn = (low: boolean): Worker => {
    const worker = new Worker(new URL("./writer_thread.ts", import.meta.url), {
      type: "module",
    });
    let end = () => {};
    const closed = new Promise<void>((resolve) => {
      end = () => {
        alive.delete(worker);
        resolve();
      };
    });
    alive.set(worker, { closed, end });
    worker.onmessage = (e: MessageEvent<Reply>) => {
      const m = e.data;
      if (m.kind === "opened") {
        if (worker === current) opened = performance.now();
        failures = 0;
        return;
      }
      if (m.kind !== "closed") return onReply(m);
      worker.terminate();
      end();
    };
    // Handled here: an error left to propagate would end the whole process.
    worker.onerror = (e) => {
      e.preventDefault();
      failed(worker, e.message);
    };
    worker.postMessage({ kind: "open", path, low });
    opened = undefined;
    suspect = undefined;
    return worker;
  };
  /**
   * When the current thread had opened its store (undefined: not yet): a thread's start (its
   * module loaded, type-checked on a cold cache) can take longer than the threshold, and is not
   * falling behind.
   */
  let opened: number | undefined;
  /**
   * The oldest unanswered request found late, and when: it escalates only if still unanswered a
   * moment later, so a main thread that was itself blocked (the reply sat in its queue) does not.
   */
  let suspect: { id: number; at: number } | undefined;
  /** The thread later requests go to (undefined: it failed, and none is started yet). */
  let current: Worker | undefined = spawn(options.low ?? true);
  /** Whether the current thread runs at normal priority because the low one fell behind. */
  let escalated = false;
  let closing: Promise<void> | undefined;
  /**
   * Hands later requests to a new thread and closes the current one. A sink's start still waiting
   * in the old thread is asked again of the new one, ahead of every later request, and the old
   * thread's answer is ignored: answered by the old thread after the new one committed later
   * batches, the newest id it read was past them, and the sink never shipped them. Rows the old
   * thread still commits get higher ids, so they are after the new thread's answer (shipped,
   * though asked before the start).
   */
  const switchTo = (low: boolean): void => {
    const old = current;
    const next_ = spawn(low);
    current = next_;
    for (const [id, p] of [...pending]) {
      if (p.worker !== old || p.start === undefined) continue;
      pending.delete(id);
      const again = ++next;
      pending.set(again, { ...p, worker: next_ });
      next_.postMessage({ ...p.start, id: again });
    }
    old?.postMessage({ kind: "close" });
  };

  const confirmMs = Math.min(100, escalateAfterMs / 2);
  let again: ReturnType<typeof setTimeout> | undefined;
  /** Escalates when the oldest unanswered request has waited too long. */
  const check = (now: number): void => {
    if (escalated || closing) return;
    const oldest = pending.entries().next().value;
    if (oldest === undefined || opened === undefined) return;
    const [id, { posted }] = oldest;
    const waited = now - Math.max(posted, opened);
    if (waited < escalateAfterMs) return;
    if (suspect?.id !== id) {
      suspect = { id, at: now };
      clearTimeout(again);
      again = setTimeout(() => check(performance.now()), confirmMs);
      Deno.unrefTimer(again);
      return;
    }
    if (now - suspect.at < confirmMs) return;
    escalated = true;
    escalations++;
    lastLate = now;
    clearTimeout(watch);
    watch = undefined;
    switchTo(false);
    armCalm(calmMs);
    options.onEscalate?.({ waited_ms: Math.round(waited), unanswered: pending.size });
  };
  /** Looks again while requests are unanswered; unref'd, so it never keeps a process alive. */
  let watch: ReturnType<typeof setTimeout> | undefined;
  const arm = (): void => {
    if (watch !== undefined || escalated || closing) return;
    watch = setTimeout(() => {
      watch = undefined;
      check(performance.now());
      if (pending.size > 0) arm();
    }, escalateAfterMs);
    Deno.unrefTimer(watch);
  };
  /** While escalated: returns to low priority once the writer has been calm for `calmMs`. */
  let calm: ReturnType<typeof setTimeout> | undefined;
  const armCalm = (delay: number): void => {
    calm = setTimeout(() => {
      calm = undefined;
      if (!escalated || closing) return;
      const now = performance.now();
      const oldest = pending.values().next().value;
      if (oldest !== undefined && now - oldest.posted > CALM_LATE_MS) lastLate = now;
      if (current === undefined || now - lastLate < calmMs) {
        return armCalm(Math.max(CALM_LATE_MS, lastLate + calmMs - now));
      }
      const was = calmMs;
      escalated = false;
      deescalations++;
      calmMs = Math.min(2 * calmMs, Math.max(CALM_MAX_MS, calmMs));
      switchTo(true);
      if (pending.size > 0) arm();
      options.onDeescalate?.({ calm_ms: was });
    }, delay);
    Deno.unrefTimer(calm);
  };

  const request = <T = number>(message: Record<string, unknown>): Promise<T> => {
    if (closing) return Promise.reject(new Error("The access-log writer is closed"));
    const posted = performance.now();
    // Before the thread is chosen: a check that escalates sends the old thread its "close", and a
    // request posted to it after that was never answered (the thread ends at "close").
    check(posted);
    if (current === undefined) {
      if (posted - failedAt < Math.min(RESTART_MS * 2 ** (failures - 1), RESTART_MAX_MS)) {
        return Promise.reject(new Error("The access-log writer thread failed; restarting soon"));
      }
      current = spawn(!escalated);
    }
    const worker = current;
    const id = ++next;
    const start = message.kind === "start-cursor" ? message : undefined;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: never) => void, reject, posted, worker, start });
      worker.postMessage({ ...message, id });
      arm();
    });
  };
  return {
    // Parsed on the writer thread: the thread that posts copies one string.
    writeLines: (lines, o) =>
      request({ kind: "write", lines, count: o.count, defer: o.defer, keep: o.keep }),
    prune: (before, keep) => request({ kind: "prune", before, keep }),
    trimmed: () => trimmed,
    escalations: () => escalations,
    deescalations: () => deescalations,
    readAfter: (afterId, limit) => request({ kind: "read", afterId, limit }),
    startCursor: (name, now, since) =>
      request<ShipStart>({ kind: "start-cursor", name, now, since }),
    saveCursor: (name, lastId, now) => request({ kind: "save-cursor", name, lastId, now }),
    close() {
      if (!closing) {
        clearTimeout(watch);
        clearTimeout(again);
        clearTimeout(calm);
        // Messages are handled in order, so every posted batch is written before "close"; a
        // thread switched from was sent its "close" already.
        current?.postMessage({ kind: "close" });
        closing = Promise.all([...alive.values()].map((a) => a.closed)).then(() => {});
      }
      return closing;
    },
  };
}
