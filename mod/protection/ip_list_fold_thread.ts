/**
 * The IP list's fold on a thread of its own: the server's {@link IpListFolder}. The fold passes
 * over every entry, so on the event loop it stalled every request waiting there; here the loop
 * only posts the base (shared memory: no copy) and the pending changes, and receives the new base
 * the same way (see docs/bench/2026-11-26-ip-list-fold-thread.md).
 *
 * One thread serves every fold of its owner (the data plane), started with the first list large
 * enough to use it (`server.prepare`, in the full build that reads the list): starting a worker
 * blocks the starting thread while its runtime is created, which a fold must not pay. A list
 * below {@link FOLD_HERE_BELOW} entries folds in the change that passes its limit, in less time
 * than that start.
 */
import type { IpListTables } from "../../engine/ip_list.ts";
import { foldHere, type IpListFold } from "../../engine/ip_list_fold.ts";
import type { IpListFolder } from "./ip_list_updater.ts";
import { type Deadline, timerDeadline } from "../core/deadline.ts";

const WORKER_URL = new URL("./ip_list_fold_worker.ts", import.meta.url);

/** Lists below this many entries fold on the calling thread (a few milliseconds at most). */
export const FOLD_HERE_BELOW = 16_384;

/**
 * How long a fold may go unanswered on the thread by default. Past it the thread is taken as
 * stuck: it is ended, the fold fails (the list keeps serving its base with the pending changes)
 * and the next change folds again on a new thread.
 */
const FOLD_TIMEOUT_MS = 30_000;

/** What the fold thread receives. */
export interface FoldRequest {
  readonly id: number;
  readonly base: IpListTables;
  readonly dropped: Uint32Array;
  readonly added: IpListTables;
}

/** What it answers: the fold, or why it failed. */
export type FoldAnswer =
  | { readonly id: number; readonly fold: IpListFold }
  | { readonly id: number; readonly error: string };

/** Where a fold given up is reported (the data plane's logger). */
export type FoldLog = (message: string, fields: Record<string, unknown>) => void;

/** Starts a fold's answer deadline (`fire` after `ms`); returns what cancels it. */
export type FoldDeadline = Deadline;

export interface FoldThreadOptions {
  /** Where a fold given up is reported; nowhere when left out. */
  readonly log?: FoldLog;
  /** How long a fold may go unanswered (default 30 s). */
  readonly timeoutMs?: number;
  /** The answer deadline (default: a timer; tests fire it by hand). */
  readonly deadline?: FoldDeadline;
  /** Starts the thread (default: the fold worker); throws where no worker can start. */
  readonly spawn?: () => Worker;
}

interface Waiting {
  resolve(fold: IpListFold): void;
  reject(err: Error): void;
}

/** One started thread and the folds it owes. */
class Thread {
  readonly worker: Worker;
  readonly waiting = new Map<number, Waiting>();
  constructor(worker: Worker) {
    this.worker = worker;
  }

  /** Fails every fold it still owes with `why`. */
  failAll(why: string): void {
    for (const w of this.waiting.values()) w.reject(new Error(why));
    this.waiting.clear();
  }
}

/** The fold thread of one owner, with the two folders that use it. */
export class IpListFoldThread {
  #thread: Thread | undefined;
  #nextId = 0;
  readonly #running = new Set<Promise<unknown>>();
  /** While {@link stop} runs: no thread starts, a fold asked meanwhile fails. */
  #stopping = false;
  readonly #log: FoldLog | undefined;
  readonly #timeoutMs: number;
  readonly #deadline: FoldDeadline;
  readonly #spawn: () => Worker;

  /**
   * Folds on the thread. Should no thread start (a runtime without workers), the fold runs here,
   * as before: the list is right either way.
   */
  readonly offThread: IpListFolder;

  /**
   * The server's fold: here below {@link FOLD_HERE_BELOW} entries, else on the thread. A list
   * that grew past the limit by changes (no full build started the thread) starts it in a task of
   * its own, not in the change that asked for the fold: the start blocks this thread.
   */
  readonly server: IpListFolder;

  constructor(options: FoldThreadOptions = {}) {
    this.#log = options.log;
    this.#timeoutMs = options.timeoutMs ?? FOLD_TIMEOUT_MS;
    this.#deadline = options.deadline ?? timerDeadline;
    this.#spawn = options.spawn ??
      (() => new Worker(WORKER_URL, { type: "module", name: "ip-list-fold" }));
    this.offThread = Object.assign(
      (base: IpListTables, dropped: Uint32Array, added: IpListTables) =>
        this.#foldOn(this.#started(), base, dropped, added),
      { prepare: () => void this.#started() },
    );
    this.server = Object.assign(
      (base: IpListTables, dropped: Uint32Array, added: IpListTables) => {
        if (base.allow.length < FOLD_HERE_BELOW) return foldHere(base, dropped, added);
        if (this.#thread !== undefined) return this.#post(this.#thread, base, dropped, added);
        return this.#track(
          new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() =>
            this.#foldOn(this.#started(), base, dropped, added)
          ),
        );
      },
      { prepare: (size: number) => void (size >= FOLD_HERE_BELOW && this.#started()) },
    );
  }

  /** Whether the thread runs. */
  get running(): boolean {
    return this.#thread !== undefined;
  }

  /** Resolves once no fold is under way. */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /**
   * Ends the thread now (a server closing, a test ending): the folds under way fail, each list
   * keeping its base and pending changes (nothing is lost: a fold only prepares a new base), and
   * this resolves once they have settled, so a stuck fold does not hold a closing server up to
   * its timeout. The next fold after it starts another thread.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    try {
      if (this.#thread !== undefined) {
        this.#end(this.#thread, "the IP-list fold thread was stopped");
      }
      await this.settled();
    } finally {
      this.#stopping = false;
    }
  }

  /** Ends `t` (stuck or broken), failing the folds it still owed. */
  #end(t: Thread, why: string): void {
    if (this.#thread === t) this.#thread = undefined;
    t.worker.terminate();
    t.failAll(why);
  }

  /** Keeps `p` among the folds under way until it settles. */
  #track<T>(p: Promise<T>): Promise<T> {
    const settled = p.then(() => {}, () => {}).finally(() => this.#running.delete(settled));
    this.#running.add(settled);
    return p;
  }

  /** The thread, started on first use; undefined where no worker can start. */
  #started(): Thread | undefined {
    if (this.#thread !== undefined || this.#stopping) return this.#thread;
    let worker: Worker;
    try {
      worker = this.#spawn();
    } catch {
      return undefined;
    }
    const t = new Thread(worker);
    worker.onmessage = (e: MessageEvent<FoldAnswer>) => {
      const answer = e.data;
      const w = t.waiting.get(answer.id);
      t.waiting.delete(answer.id);
      if ("fold" in answer) w?.resolve(answer.fold);
      else w?.reject(new Error(answer.error));
    };
    worker.onerror = (e) => {
      e.preventDefault();
      // The thread is gone: its folds fail (each list stays right and folds again later).
      this.#end(t, e.message);
    };
    this.#thread = t;
    return t;
  }

  /** Posts one fold to `t`; fails after the timeout without an answer. */
  #post(
    t: Thread,
    base: IpListTables,
    dropped: Uint32Array,
    added: IpListTables,
  ): Promise<IpListFold> {
    const id = ++this.#nextId;
    const timeoutMs = this.#timeoutMs;
    return this.#track(
      new Promise<IpListFold>((resolve, reject) => {
        const cancel = this.#deadline(() => {
          t.waiting.delete(id);
          this.#log?.("IP-list fold thread did not answer in time; restarting it", {
            timeout_ms: timeoutMs,
            entries: base.allow.length,
            pending: dropped.length + added.allow.length,
          });
          this.#end(t, "an earlier fold timed out");
          reject(new Error(`IP-list fold unanswered after ${timeoutMs} ms`));
        }, timeoutMs);
        t.waiting.set(id, {
          resolve(fold) {
            cancel();
            resolve(fold);
          },
          reject(err) {
            cancel();
            reject(err);
          },
        });
        t.worker.postMessage({ id, base, dropped, added } satisfies FoldRequest);
      }),
    );
  }

  /**
   * Folds on `t`, or here when no thread can start (a runtime without workers); fails while the
   * folds are stopping (the list stays right, and folds again at a later change).
   */
  #foldOn(
    t: Thread | undefined,
    base: IpListTables,
    dropped: Uint32Array,
    added: IpListTables,
  ): IpListFold | Promise<IpListFold> {
    if (this.#stopping) return Promise.reject(new Error("IP-list folds are stopping"));
    return t === undefined ? foldHere(base, dropped, added) : this.#post(t, base, dropped, added);
  }
}
