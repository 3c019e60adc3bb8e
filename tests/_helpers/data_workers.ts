/**
 * The tests' handle on a data-worker pool (`app/data_workers.ts`): makes a worker crash, end,
 * stall or fail to start, sets how long a question to every worker waits, and reads each
 * worker's last cache report. None of it is on the pool's public interface (`DataWorkerPool`).
 */
import { type DataWorkerPool, WorkerPool } from "../../app/data_workers.ts";
import { WORKER_URL } from "../../app/data_worker_slot.ts";
import type { CacheStats } from "../../app/data_worker_protocol.ts";

/** A worker module that fails to load. */
const FAILING_URL = "data:text/javascript,throw new Error('failed to load (test hook)')";

export interface WorkerHooks {
  /** Makes worker `index` (1..N) throw an uncaught error. */
  crash(index: number): void;
  /** Terminates worker `index`'s thread outright (it is restarted like a crash). */
  kill(index: number): void;
  /** The next `n` worker starts fail (their module does not load); 0 ends it. */
  failStarts(n: number): void;
  /** Keeps worker `index` busy for `ms` (a blocked event loop, as long work is). */
  stall(index: number, ms: number): void;
  /**
   * Sets how long a question to every worker waits, returning the one before. A test that
   * expects every worker to answer sets it long: on a loaded machine a worker's answer (or the
   * main thread's turn to read it, after a blocking worker start) can take past 1 s.
   */
  setAskTimeout(ms: number): number;
  /** Worker `index`'s last cache report (a new object with each report). */
  cacheReport(index: number): CacheStats | undefined;
}

export function workerHooks(pool: DataWorkerPool | undefined): WorkerHooks {
  if (!(pool instanceof WorkerPool)) throw new Error("not a data-worker pool");
  const slot = (index: number) => pool.slots[index - 1];
  return {
    crash: (index) => slot(index)?.post({ t: "crash" }),
    kill: (index) => slot(index)?.crashed("terminated (test hook)"),
    failStarts(n) {
      let left = n;
      pool.workerModule = () => left > 0 ? (left--, FAILING_URL) : WORKER_URL;
    },
    stall: (index, ms) => slot(index)?.post({ t: "stall", ms }),
    setAskTimeout(ms) {
      const before = pool.questions.timeoutMs;
      pool.questions.timeoutMs = ms;
      return before;
    },
    cacheReport: (index) => slot(index)?.cache,
  };
}
