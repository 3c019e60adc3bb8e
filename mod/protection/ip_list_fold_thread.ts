/**
 * The IP list's fold on a thread of its own: the server's {@link IpListFolder}. The fold passes
 * over every entry (26-348 ms for 100,000 on this project's machine, more with more entries), so
 * on the event loop it stalled every request waiting there; here the loop only posts the base
 * (shared memory: no copy) and the pending changes (a few hundred entries), and receives the new
 * base the same way.
 *
 * One thread serves every fold of the process, started with the first list large enough to use
 * it ({@link serverFold}`.prepare`, in the full build that reads the list): starting a worker
 * blocks the starting thread while the worker's runtime is created (10-100 ms measured on this
 * machine), which a fold must not pay. A list below {@link FOLD_HERE_BELOW} entries folds in the
 * change that passes its limit, in less time than that start.
 */
import type { IpListTables } from "../../engine/ip_list.ts";
import { foldHere, type IpListFold } from "../../engine/ip_list_fold.ts";
import type { IpListFolder } from "./ip_list_updater.ts";

const WORKER_URL = new URL("./ip_list_fold_worker.ts", import.meta.url);

/** Lists below this many entries fold on the calling thread (a few milliseconds at most). */
export const FOLD_HERE_BELOW = 16_384;

/** What the fold thread receives. */
export interface FoldRequest {
  readonly id: number;
  readonly base: IpListTables;
  readonly dropped: Uint32Array;
  readonly added: IpListTables;
}

/** Test hook: the thread busy for `stall` ms (a fold that never ends, as a bug would make). */
export interface FoldStall {
  readonly stall: number;
}

/** What it answers: the fold, or why it failed. */
export type FoldAnswer =
  | { readonly id: number; readonly fold: IpListFold }
  | { readonly id: number; readonly error: string };

interface Waiting {
  resolve(fold: IpListFold): void;
  reject(err: Error): void;
}

type FoldThread = { worker: Worker; waiting: Map<number, Waiting> };

let thread: FoldThread | undefined;
let nextId = 0;
const running = new Set<Promise<unknown>>();
/** While {@link stopFolds} runs: no thread starts, a fold asked meanwhile fails. */
let stopping = false;

/**
 * How long a fold may go unanswered on the thread (a fold of 100,000 entries takes 26-348 ms).
 * Past it the thread is taken as stuck: it is ended, the fold fails (the list keeps serving its
 * base with the pending changes) and the next change folds again on a new thread.
 */
let foldTimeoutMs = 30_000;

/**
 * Where a fold given up is reported: each folder's own (the data plane's logger), so a process
 * with two servers (tests) logs each one's folds to its own logger, and a closed one's to none.
 */
export type FoldLog = (message: string, fields: Record<string, unknown>) => void;

/** Test hook: sets the fold's answer timeout, returning the one before. */
export function setFoldTimeout(ms: number): number {
  const before = foldTimeoutMs;
  foldTimeoutMs = ms;
  return before;
}

/** Whether the fold thread runs (test hook). */
export function foldThreadRunning(): boolean {
  return thread !== undefined;
}

/** Test hook: keeps the fold thread busy for `ms` (folds asked meanwhile wait behind it). */
export function stallFoldThread(ms: number): void {
  thread?.worker.postMessage({ stall: ms } satisfies FoldStall);
}

/** Ends `t` (stuck or broken), failing the folds it still owed. */
function endThread(t: FoldThread, why: string): void {
  if (thread === t) thread = undefined;
  t.worker.terminate();
  for (const w of t.waiting.values()) w.reject(new Error(why));
  t.waiting.clear();
}

/** Keeps `p` in {@link running} until it settles. */
function track<T>(p: Promise<T>): Promise<T> {
  const settled = p.then(() => {}, () => {}).finally(() => running.delete(settled));
  running.add(settled);
  return p;
}

/** The fold thread, started on first use; undefined where no worker can start. */
function foldThread() {
  if (thread !== undefined || stopping) return thread;
  let worker: Worker;
  try {
    worker = new Worker(WORKER_URL, { type: "module", name: "ip-list-fold" });
  } catch {
    return undefined;
  }
  const waiting = new Map<number, Waiting>();
  const started = { worker, waiting };
  worker.onmessage = (e: MessageEvent<FoldAnswer>) => {
    const answer = e.data;
    const w = waiting.get(answer.id);
    waiting.delete(answer.id);
    if ("fold" in answer) w?.resolve(answer.fold);
    else w?.reject(new Error(answer.error));
  };
  worker.onerror = (e) => {
    e.preventDefault();
    // The thread is gone: its folds fail (each list stays right and folds again later).
    endThread(started, e.message);
  };
  thread = started;
  return thread;
}

/** Posts one fold to `t`; fails after {@link foldTimeoutMs} without an answer. */
function post(
  t: FoldThread,
  base: IpListTables,
  dropped: Uint32Array,
  added: IpListTables,
  log: FoldLog | undefined,
): Promise<IpListFold> {
  const id = ++nextId;
  const timeoutMs = foldTimeoutMs;
  return track(
    new Promise<IpListFold>((resolve, reject) => {
      const timer = setTimeout(() => {
        t.waiting.delete(id);
        log?.("IP-list fold thread did not answer in time; restarting it", {
          timeout_ms: timeoutMs,
          entries: base.allow.length,
          pending: dropped.length + added.allow.length,
        });
        endThread(t, "an earlier fold timed out");
        reject(new Error(`IP-list fold unanswered after ${timeoutMs} ms`));
      }, timeoutMs);
      t.waiting.set(id, {
        resolve(fold) {
          clearTimeout(timer);
          resolve(fold);
        },
        reject(err) {
          clearTimeout(timer);
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
function foldOn(
  t: FoldThread | undefined,
  base: IpListTables,
  dropped: Uint32Array,
  added: IpListTables,
  log: FoldLog | undefined,
): IpListFold | Promise<IpListFold> {
  if (stopping) return Promise.reject(new Error("IP-list folds are stopping"));
  return t === undefined ? foldHere(base, dropped, added) : post(t, base, dropped, added, log);
}

/**
 * Folds on the fold thread. Should no thread start (a runtime without workers), the fold runs
 * here, as before: the list is right either way. A fold given up is reported to `log`.
 */
export function createOffThreadFold(log?: FoldLog): IpListFolder {
  return Object.assign(
    (base: IpListTables, dropped: Uint32Array, added: IpListTables) =>
      foldOn(foldThread(), base, dropped, added, log),
    { prepare: () => void foldThread() },
  );
}

/** {@link createOffThreadFold} reporting to nobody. */
export const foldOffThread: IpListFolder = createOffThreadFold();

/**
 * The server's fold: here below {@link FOLD_HERE_BELOW} entries, else on the fold thread. A list
 * that grew past the limit by changes (no full build started the thread) starts it in a task of
 * its own, not in the change that asked for the fold: the start blocks the thread 10-210 ms. A
 * fold given up is reported to `log`.
 */
export function createServerFold(log?: FoldLog): IpListFolder {
  return Object.assign(
    (base: IpListTables, dropped: Uint32Array, added: IpListTables) => {
      if (base.allow.length < FOLD_HERE_BELOW) return foldHere(base, dropped, added);
      if (thread !== undefined) return post(thread, base, dropped, added, log);
      return track(
        new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() =>
          foldOn(foldThread(), base, dropped, added, log)
        ),
      );
    },
    { prepare: (size: number) => void (size >= FOLD_HERE_BELOW && foldThread()) },
  );
}

/** {@link createServerFold} reporting to nobody. */
export const serverFold: IpListFolder = createServerFold();

/** Resolves once no fold is under way. */
export async function foldsSettled(): Promise<void> {
  while (running.size > 0) await Promise.allSettled([...running]);
}

/**
 * Ends the fold thread now (a server closing, a test ending): the folds under way fail, each list
 * keeping its base and pending changes (nothing is lost: a fold only prepares a new base), and
 * this resolves once they have settled. It waited for them instead, and a stuck fold held a
 * closing server up to its timeout (30 s). The next fold after it starts another thread.
 */
export async function stopFolds(): Promise<void> {
  stopping = true;
  try {
    if (thread !== undefined) endThread(thread, "the IP-list fold thread was stopped");
    await foldsSettled();
  } finally {
    stopping = false;
  }
}
