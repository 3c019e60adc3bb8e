/**
 * The access-log writer of the running server: a worker thread (`writer_thread.ts`) with its own
 * connection to the store writes the batches, at the lowest CPU priority, replaced by one at
 * normal priority when it falls behind (`writer_priority.ts` decides when) and started again
 * when it fails. Its requests and their answers are kept by `writer_requests.ts`.
 */
import type { ShipStart } from "../../db/access_log_cursors.ts";
import type { AccessLogWriter, ShipSource, WriteOptions } from "./writer.ts";
import { CALM_MS, ESCALATE_AFTER_MS, PriorityWatch } from "./writer_priority.ts";
import { type Answer, PendingRequests, type WriterReply } from "./writer_requests.ts";

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
   * How long an escalated writer must answer every request within `CALM_LATE_MS`
   * (`writer_priority.ts`) before a new low-priority thread takes over again (ms, default
   * {@link CALM_MS}). Doubles after each return, up to `CALM_MAX_MS`, so a machine that keeps
   * starving the low thread does not make the writer switch back and forth.
   */
  readonly calmMs?: number;
  /** Told when the writer is escalated, how old the oldest unanswered request was. */
  readonly onEscalate?: (info: { waited_ms: number; unanswered: number }) => void;
  /** Told when an escalated writer returned to low priority, after how long a calm period. */
  readonly onDeescalate?: (info: { calm_ms: number }) => void;
  /** Told when a writer thread failed (its module did not load, its store did not open). */
  readonly onThreadError?: (info: { error: string; rejected: number }) => void;
}

/** The first wait before a failed writer thread is started again (ms), doubling up to a minute. */
const RESTART_MS = 1000;
const RESTART_MAX_MS = 60_000;

/** A worker writer also tells how often it was escalated and returned to low priority. */
export interface WorkerWriter extends AccessLogWriter, ShipSource {
  escalations(): number;
  deescalations(): number;
  /** Writes a replaced thread handed to the next one unwritten. */
  handedOver(): number;
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
 * normal-priority thread has answered every request within `CALM_LATE_MS` for `calmMs`, a
 * new low-priority thread takes over the same way; the writer may escalate again, and the next
 * calm period is twice as long (up to `CALM_MAX_MS`). Ordering: rows still waiting in the
 * previous thread are committed after rows the next one writes, so they get the higher row ids
 * (the PostgreSQL shipper's id cursor still ships them: they are after it); a lookup meanwhile may
 * not see them until the previous thread has written them.
 *
 * A thread that fails (its module does not load, its store does not open) rejects the requests
 * it was given, and the next request starts a new thread, no sooner than {@link RESTART_MS} after
 * the failure (doubling while they keep failing); requests meanwhile are rejected.
 *
 * @example
 * ```ts
 * const writer = createWorkerWriter(`${dataDir}/waf.db`, {
 *   onEscalate: (info) => logger.warn("access-log writer fell behind", info),
 * });
 * await writer.writeLines(recordLines(record), { count: 1, defer: true });
 * await writer.close();
 * ```
 */
export function createWorkerWriter(path: string, options: WorkerWriterOptions = {}): WorkerWriter {
  return new ThreadedWriter(path, options);
}

class ThreadedWriter implements WorkerWriter {
  readonly #path: string;
  readonly #options: WorkerWriterOptions;
  readonly #requests = new PendingRequests();
  readonly #priority: PriorityWatch;
  /**
   * The threads not closed yet, each with what resolves once it has, and its hand-over flag
   * (shared memory: set, the thread hands back every write it has not begun instead of writing
   * it).
   */
  readonly #alive = new Map<
    Worker,
    { closed: Promise<void>; end: () => void; handOver: Int32Array }
  >();
  #handedOver = 0;
  /** The thread later requests go to (undefined: it failed, and none is started yet). */
  #current: Worker | undefined;
  #trimmed = 0;
  /** Consecutive threads that failed before opening the store, and when the last did. */
  #failures = 0;
  #failedAt = 0;
  #closing: Promise<void> | undefined;

  constructor(path: string, options: WorkerWriterOptions) {
    this.#path = path;
    this.#options = options;
    this.#priority = new PriorityWatch({
      escalateAfterMs: options.escalateAfterMs ?? ESCALATE_AFTER_MS,
      calmMs: options.calmMs ?? CALM_MS,
      requests: this.#requests,
      running: () => this.#current !== undefined,
      switchTo: (low) => this.#switchTo(low),
      onEscalate: options.onEscalate,
      onDeescalate: options.onDeescalate,
    });
    this.#current = this.#spawn(options.low ?? true);
  }

  // Parsed on the writer thread: the thread that posts copies one string.
  writeLines(lines: string, o: WriteOptions): Promise<number> {
    return this.#request({
      kind: "write",
      lines,
      count: o.count,
      defer: o.defer,
      bulk: o.bulk,
      keep: o.keep,
    });
  }

  prune(before: number, keep: number): Promise<number> {
    return this.#request({ kind: "prune", before, keep });
  }

  trimmed(): number {
    return this.#trimmed;
  }

  escalations(): number {
    return this.#priority.escalations();
  }

  deescalations(): number {
    return this.#priority.deescalations();
  }

  readAfter(afterId: number, limit: number): ReturnType<ShipSource["readAfter"]> {
    return this.#request({ kind: "read", afterId, limit });
  }

  startCursor(name: string, now: number, since?: number): Promise<ShipStart> {
    return this.#request<ShipStart>({ kind: "start-cursor", name, now, since });
  }

  saveCursor(name: string, lastId: number, now: number): Promise<void> {
    return this.#request({ kind: "save-cursor", name, lastId, now });
  }

  close(): Promise<void> {
    if (!this.#closing) {
      this.#priority.stop();
      // Messages are handled in order, so every posted batch is written before "close"; a
      // thread switched from was sent its "close" already.
      this.#current?.postMessage({ kind: "close" });
      this.#closing = Promise.all([...this.#alive.values()].map((a) => a.closed)).then(() => {});
    }
    return this.#closing;
  }

  #request<T = number>(message: Record<string, unknown>): Promise<T> {
    if (this.#closing) return Promise.reject(new Error("The access-log writer is closed"));
    const posted = performance.now();
    // Before the thread is chosen: a check that escalates sends the old thread its "close", and a
    // request posted to it after that was never answered (the thread ends at "close").
    this.#priority.check(posted);
    if (this.#current === undefined) {
      const wait = Math.min(RESTART_MS * 2 ** (this.#failures - 1), RESTART_MAX_MS);
      if (posted - this.#failedAt < wait) {
        return Promise.reject(new Error("The access-log writer thread failed; restarting soon"));
      }
      this.#current = this.#spawn(!this.#priority.escalated);
    }
    const answer = this.#requests.post<T>(this.#current, message, posted);
    this.#priority.arm();
    return answer;
  }

  #spawn(low: boolean): Worker {
    const worker = new Worker(new URL("./writer_thread.ts", import.meta.url), {
      type: "module",
    });
    let end = () => {};
    const closed = new Promise<void>((resolve) => {
      end = () => {
        this.#alive.delete(worker);
        resolve();
      };
    });
    const handOver = new Int32Array(new SharedArrayBuffer(4));
    this.#alive.set(worker, { closed, end, handOver });
    worker.onmessage = (e: MessageEvent<WriterReply>) => {
      const m = e.data;
      if (m.kind === "opened") {
        if (worker === this.#current) this.#priority.opened(performance.now());
        this.#failures = 0;
        return;
      }
      if (m.kind === "handover") {
        this.#handedOver += m.ids.length;
        if (this.#current !== undefined) this.#requests.handOver(m.ids, this.#current);
        else this.#requests.rejectOf(worker, "no writer thread to hand the batches to");
        return;
      }
      if (m.kind !== "closed") return this.#answered(m);
      worker.terminate();
      end();
    };
    // Handled here: an error left to propagate would end the whole process.
    worker.onerror = (e) => {
      e.preventDefault();
      this.#failed(worker, e.message);
    };
    worker.postMessage({ kind: "open", path: this.#path, low, handOver: handOver.buffer });
    this.#priority.started();
    return worker;
  }

  #answered(m: Answer): void {
    if (m.kind !== "failed") this.#trimmed += m.pruned ?? 0;
    // Only while escalated (one clock read a reply, not a record): is the writer calm?
    const now = this.#priority.escalated ? performance.now() : 0;
    this.#requests.settle(m, (posted) => this.#priority.answered(posted, now));
  }

  /** A thread failed: what it was given fails, and the next request starts another. */
  #failed(worker: Worker, error: string): void {
    worker.terminate();
    this.#alive.get(worker)?.end();
    const rejected = this.#requests.rejectOf(worker, error);
    if (worker === this.#current) {
      this.#current = undefined;
      this.#failures++;
      this.#failedAt = performance.now();
    }
    this.#options.onThreadError?.({ error, rejected });
  }

  /**
   * Hands later requests to a new thread and closes the current one; a sink's start still
   * waiting in the old thread is asked again of the new one (`moveStarts`).
   */
  #switchTo(low: boolean): void {
    const old = this.#current;
    const next = this.#spawn(low);
    this.#current = next;
    this.#requests.moveStarts(old, next);
    // A starved thread would take as long to write its backlog as it took to fall behind, and
    // that backlog counts against the queue meanwhile: it hands back every write it has not
    // begun, and the new thread writes them.
    if (!low && old !== undefined) {
      const flag = this.#alive.get(old)?.handOver;
      if (flag) Atomics.store(flag, 0, 1);
    }
    old?.postMessage({ kind: "close" });
  }

  /** Writes handed from a replaced thread to the next (see `#switchTo`). */
  handedOver(): number {
    return this.#handedOver;
  }
}
