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
import type { IpListTables } from "./ip_list.ts";
import { foldHere, type IpListFold, type IpListFolder } from "./ip_list_updater.ts";

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

/** What it answers: the fold, or why it failed. */
export type FoldAnswer =
  | { readonly id: number; readonly fold: IpListFold }
  | { readonly id: number; readonly error: string };

interface Waiting {
  resolve(fold: IpListFold): void;
  reject(err: Error): void;
}

let thread: { worker: Worker; waiting: Map<number, Waiting> } | undefined;
let nextId = 0;
const running = new Set<Promise<unknown>>();

/** The fold thread, started on first use; undefined where no worker can start. */
function foldThread() {
  if (thread !== undefined) return thread;
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
    if (thread === started) thread = undefined;
    worker.terminate();
    for (const w of waiting.values()) w.reject(new Error(e.message));
    waiting.clear();
  };
  thread = started;
  return thread;
}

/**
 * Folds on the fold thread. Should no thread start (a runtime without workers), the fold runs
 * here, as before: the list is right either way.
 */
export const foldOffThread: IpListFolder = Object.assign(
  (base: IpListTables, dropped: Uint32Array, added: IpListTables) => {
    const t = foldThread();
    if (t === undefined) return foldHere(base, dropped, added);
    const id = ++nextId;
    const done = new Promise<IpListFold>((resolve, reject) => {
      t.waiting.set(id, { resolve, reject });
      t.worker.postMessage({ id, base, dropped, added } satisfies FoldRequest);
    });
    const settled = done.then(() => {}, () => {}).finally(() => running.delete(settled));
    running.add(settled);
    return done;
  },
  { prepare: () => void foldThread() },
);

/** The server's fold: here below {@link FOLD_HERE_BELOW} entries, else on the fold thread. */
export const serverFold: IpListFolder = Object.assign(
  (base: IpListTables, dropped: Uint32Array, added: IpListTables) =>
    base.allow.length < FOLD_HERE_BELOW
      ? foldHere(base, dropped, added)
      : foldOffThread(base, dropped, added),
  { prepare: (size: number) => void (size >= FOLD_HERE_BELOW && foldThread()) },
);

/** Resolves once no fold is under way. */
export async function foldsSettled(): Promise<void> {
  while (running.size > 0) await Promise.allSettled([...running]);
}

/**
 * Waits for the folds under way, then ends the fold thread (a server closing, a test ending);
 * the next fold starts another.
 */
export async function stopFolds(): Promise<void> {
  await foldsSettled();
  thread?.worker.terminate();
  thread = undefined;
}
