/**
 * The IP list's fold on a thread of its own: the server's {@link IpListFolder}. The fold passes
 * over every entry (26-348 ms for 100,000 on this project's machine, more with more entries), so
 * on the event loop it stalled every request waiting there; here the loop only posts the base
 * (shared memory: no copy) and the pending changes (a few hundred entries), and receives the new
 * base the same way. Each fold starts a worker and ends it: folds are rare (one per
 * max(256, √n) changes) and an idle thread would hold its memory for nothing.
 */
import type { IpListTables } from "./ip_list.ts";
import { foldHere, type IpListFold } from "./ip_list_updater.ts";

const WORKER_URL = new URL("./ip_list_fold_worker.ts", import.meta.url);

/** What the fold worker receives. */
export interface FoldRequest {
  readonly base: IpListTables;
  readonly dropped: Uint32Array;
  readonly added: IpListTables;
}

/** What it answers: the fold, or why it failed. */
export type FoldAnswer = { readonly fold: IpListFold } | { readonly error: string };

const running = new Set<Promise<unknown>>();

/**
 * Folds on a new worker thread. Should the thread not start (a runtime without workers), the
 * fold runs here, as before: the list is right either way.
 */
export function foldOffThread(
  base: IpListTables,
  dropped: Uint32Array,
  added: IpListTables,
): IpListFold | Promise<IpListFold> {
  let worker: Worker;
  try {
    worker = new Worker(WORKER_URL, { type: "module", name: "ip-list-fold" });
  } catch {
    return foldHere(base, dropped, added);
  }
  const done = new Promise<IpListFold>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<FoldAnswer>) => {
      const answer = e.data;
      if ("fold" in answer) resolve(answer.fold);
      else reject(new Error(answer.error));
    };
    worker.onerror = (e) => {
      e.preventDefault();
      reject(new Error(e.message));
    };
    worker.postMessage({ base, dropped, added } satisfies FoldRequest);
  }).finally(() => {
    worker.terminate();
    running.delete(done);
  });
  running.add(done);
  return done;
}

/** Resolves once no fold is under way (a server closing, a test ending). */
export async function foldsSettled(): Promise<void> {
  while (running.size > 0) await Promise.allSettled([...running]);
}
