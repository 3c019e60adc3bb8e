/**
 * Upstream deadlines without a timer or an `AbortSignal` per request: pending deadlines sit in a
 * set that one interval sweeps (every `tickMs`, only while any is pending), and an expired one
 * calls its callback (the upstream client closes the connection it guards). A deadline is cleared
 * as soon as what it guards happened, so a long response body is never cut by the response
 * timeout.
 */

export interface Deadline {
  readonly at: number;
  readonly onExpire: () => void;
}

export interface Deadlines {
  /** Calls `onExpire` after `ms` (± one tick) unless cleared first. */
  start(ms: number, onExpire: () => void): Deadline;
  clear(deadline: Deadline): void;
  close(): void;
}

export function createDeadlines(tickMs = 20): Deadlines {
  const pending = new Set<Deadline>();
  let timer: ReturnType<typeof setInterval> | undefined;
  function sweep(): void {
    const now = performance.now();
    for (const d of pending) {
      if (d.at <= now) {
        pending.delete(d);
        d.onExpire();
      }
    }
    if (pending.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }
  return {
    start(ms, onExpire) {
      const deadline: Deadline = { at: performance.now() + ms, onExpire };
      pending.add(deadline);
      timer ??= setInterval(sweep, Math.min(tickMs, ms));
      return deadline;
    },
    clear(deadline) {
      pending.delete(deadline);
    },
    close() {
      clearInterval(timer);
      timer = undefined;
      pending.clear();
    },
  };
}
