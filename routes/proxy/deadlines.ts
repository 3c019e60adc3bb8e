/**
 * Upstream deadlines without a timer per request: pending deadlines sit in a set that one
 * interval sweeps (every `tickMs`, only while any is pending). A deadline is cleared as soon as
 * the upstream answers, so a long response body is never cut by the response timeout.
 */

export interface Deadline {
  readonly signal: AbortSignal;
}

interface Entry extends Deadline {
  readonly at: number;
  readonly controller: AbortController;
}

export interface Deadlines {
  /** A signal that aborts with a `TimeoutError` after `ms` (± one tick) unless cleared. */
  start(ms: number): Deadline;
  clear(deadline: Deadline): void;
  close(): void;
}

export function createDeadlines(tickMs = 20): Deadlines {
  const pending = new Set<Entry>();
  let timer: ReturnType<typeof setInterval> | undefined;
  function sweep(): void {
    const now = performance.now();
    for (const e of pending) {
      if (e.at <= now) {
        pending.delete(e);
        e.controller.abort(new DOMException("The upstream did not answer in time", "TimeoutError"));
      }
    }
    if (pending.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }
  return {
    start(ms) {
      const controller = new AbortController();
      const entry: Entry = { at: performance.now() + ms, controller, signal: controller.signal };
      pending.add(entry);
      timer ??= setInterval(sweep, Math.min(tickMs, ms));
      return entry;
    },
    clear(deadline) {
      pending.delete(deadline as Entry);
    },
    close() {
      clearInterval(timer);
      timer = undefined;
      pending.clear();
    },
  };
}
