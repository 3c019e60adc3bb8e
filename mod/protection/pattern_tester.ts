/**
 * The console's regex tester (`POST /api/rules/custom/test`) off the main thread: a pattern and
 * its samples are tried on a worker of their own, within a time limit, so a slow pattern never
 * holds the management API (`/health` included) or the data plane sharing the process.
 *
 * One worker serves the tests, one at a time in the order asked; it starts with the first test
 * and ends after {@link IDLE_MS} without one (its RE2 heap goes with it). A test's time limit runs
 * from when the worker is ready (it says so once its modules are loaded, which on a busy machine
 * can take longer than the limit itself). A test still running at its time limit ends the worker (a WebAssembly call cannot be interrupted otherwise) and is
 * answered as timed out; the next test starts another. At most {@link MAX_WAITING} tests wait
 * behind the running one; more are refused (`TESTER_BUSY`), so a caller cannot queue work
 * without bound.
 */
import { testPattern } from "../../engine/custom_rules.ts";
import { type Deadline, timerDeadline } from "../core/deadline.ts";
import { AppError } from "../core/errors.ts";

const WORKER_URL = new URL("./pattern_tester_worker.ts", import.meta.url);

/** How long one test may run on the worker. */
export const TESTER_TIMEOUT_MS = 2000;
/** Samples one test may try at most (refused with 400 beyond). */
export const MAX_SAMPLES = 10;
/** Characters of one sample at most (refused with 400 beyond). */
export const MAX_SAMPLE_CHARS = 4096;
/** Tests that may wait behind the running one. */
export const MAX_WAITING = 4;
/** How long the worker stays without a test before it ends. */
export const IDLE_MS = 60_000;
/** How long the worker may take to load before its test fails. */
export const START_MS = 30_000;

/** What a test answers: the pattern's validity and each sample's match, or a timeout. */
export type PatternTestResult =
  | ReturnType<typeof testPattern>
  | { readonly valid: "timeout"; readonly timeoutMs: number };

/** What the worker receives. */
export interface PatternTestRequest {
  readonly id: number;
  readonly pattern: string;
  readonly ignoreCase: boolean;
  readonly samples: readonly string[];
}

/** What it answers: a test's result, or (once, first) that it is ready. */
export type PatternTestAnswer =
  | { readonly id: number; readonly result: ReturnType<typeof testPattern> }
  | { readonly ready: true };

export interface PatternTesterOptions {
  /** How long one test may run (default {@link TESTER_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  /** How long the worker stays idle before it ends (default {@link IDLE_MS}). */
  readonly idleMs?: number;
  /** Starts the worker (default: the tester's worker module); tests inject a slow one. */
  readonly spawn?: () => Worker;
  /** Timers for the time limit and the idle end (default: `setTimeout`). */
  readonly timer?: Deadline;
}

interface Job {
  readonly request: Omit<PatternTestRequest, "id">;
  readonly resolve: (r: PatternTestResult) => void;
  readonly reject: (err: Error) => void;
}

/** The tester's worker and its queue of tests. */
export class PatternTester {
  readonly #timeoutMs: number;
  readonly #idleMs: number;
  readonly #spawn: () => Worker;
  readonly #timer: Deadline;
  readonly #queue: Job[] = [];
  #worker: Worker | undefined;
  /** Whether the worker has said it is ready (its modules loaded). */
  #ready = false;
  /** Cancels the limit on the worker's start, while it loads. */
  #starting: (() => void) | undefined;
  #running: { readonly id: number; readonly job: Job; cancel: () => void } | undefined;
  #idle: (() => void) | undefined;
  #nextId = 0;
  #closed = false;

  constructor(options: PatternTesterOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? TESTER_TIMEOUT_MS;
    this.#idleMs = options.idleMs ?? IDLE_MS;
    this.#spawn = options.spawn ??
      (() => new Worker(WORKER_URL, { type: "module", name: "pattern-tester" }));
    this.#timer = options.timer ?? timerDeadline;
  }

  /** Whether the worker runs now. */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  /**
   * Tries `pattern` on each sample as a custom rule would (compiled with RE2, its size limit
   * included), on the worker.
   *
   * @returns the result, or `{ valid: "timeout" }` when the test ran past its time limit
   * @throws AppError 503 `TESTER_BUSY` when {@link MAX_WAITING} tests already wait
   */
  test(
    pattern: string,
    ignoreCase: boolean,
    samples: readonly string[],
  ): Promise<PatternTestResult> {
    if (this.#closed) return Promise.reject(new Error("The pattern tester is closed"));
    if (this.#queue.length >= MAX_WAITING) {
      return Promise.reject(
        new AppError(503, "TESTER_BUSY", "The regex tester is busy: try again in a moment"),
      );
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ request: { pattern, ignoreCase, samples }, resolve, reject });
      this.#next();
    });
  }

  /** Ends the worker and fails the tests still waiting (a server closing, a test ending). */
  close(): void {
    this.#closed = true;
    this.#idle?.();
    this.#idle = undefined;
    const running = this.#running;
    this.#running = undefined;
    running?.cancel();
    this.#end();
    const closed = new Error("The pattern tester was closed");
    running?.job.reject(closed);
    for (const job of this.#queue.splice(0)) job.reject(closed);
  }

  /** Starts the next test when none runs. */
  #next(): void {
    if (this.#running !== undefined || this.#closed) return;
    const job = this.#queue.shift();
    if (job === undefined) {
      this.#idle = this.#timer(() => {
        this.#idle = undefined;
        this.#end();
      }, this.#idleMs);
      return;
    }
    this.#idle?.();
    this.#idle = undefined;
    let worker: Worker;
    try {
      worker = this.#started();
    } catch (err) {
      job.reject(err instanceof Error ? err : new Error(String(err)));
      this.#next();
      return;
    }
    const id = ++this.#nextId;
    this.#running = { id, job, cancel: () => {} };
    worker.postMessage({ id, ...job.request } satisfies PatternTestRequest);
    if (this.#ready) this.#startLimit();
  }

  /** Starts the running test's time limit (once the worker is ready). */
  #startLimit(): void {
    const running = this.#running;
    if (running === undefined) return;
    running.cancel = this.#timer(() => {
      // Still running at its limit: only ending the worker stops a WebAssembly call.
      if (this.#running !== running) return;
      this.#running = undefined;
      this.#end();
      running.job.resolve({ valid: "timeout", timeoutMs: this.#timeoutMs });
      this.#next();
    }, this.#timeoutMs);
  }

  /** The worker, started on first use. */
  #started(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const worker = this.#spawn();
    this.#ready = false;
    this.#starting = this.#timer(() => this.#failed("its worker did not start"), START_MS);
    worker.onmessage = (e: MessageEvent<PatternTestAnswer>) => {
      const answer = e.data;
      if ("ready" in answer) {
        this.#ready = true;
        this.#starting?.();
        this.#starting = undefined;
        this.#startLimit();
      } else this.#answered(answer.id, answer.result);
    };
    worker.onerror = (e) => {
      e.preventDefault();
      this.#failed(e.message);
    };
    this.#worker = worker;
    return worker;
  }

  #answered(id: number, result: ReturnType<typeof testPattern>): void {
    const running = this.#running;
    if (running === undefined || running.id !== id) return;
    this.#running = undefined;
    running.cancel();
    running.job.resolve(result);
    this.#next();
  }

  /** The worker broke: the running test fails, the next one starts another worker. */
  #failed(why: string): void {
    const running = this.#running;
    this.#running = undefined;
    running?.cancel();
    this.#end();
    running?.job.reject(new Error(`The regex tester failed: ${why}`));
    this.#next();
  }

  #end(): void {
    this.#starting?.();
    this.#starting = undefined;
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#ready = false;
  }
}
