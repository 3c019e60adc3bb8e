/**
 * Upstream deadlines without a timer or an `AbortSignal` per request: armed deadlines sit in an
 * array that one interval sweeps (every `tickMs`, only while any is armed), and an expired one
 * calls its `onExpire` (the upstream client closes the connection it guards). A deadline is
 * cleared as soon as what it guards happened, so a long response body is never cut by the
 * response timeout.
 *
 * A deadline is an object the caller keeps: the upstream client's connection is its own deadline
 * and re-arms itself for each request and body read ({@link Deadlines.arm}), so arming allocates
 * nothing; an armed one knows its slot in the array, so clearing it is a swap, not a search.
 */
import { realTimers, type TimerId, type Timers } from "../timers.ts";

export interface Deadline {
  /** When it expires (on the clock of {@link Timers.now}); meaningful while armed. */
  at: number;
  /** Its index among the armed deadlines, -1 when not armed (owned by {@link Deadlines}). */
  slot: number;
  onExpire(): void;
}

export interface Deadlines {
  /** A new deadline calling `onExpire` after `ms` (± one tick) unless cleared first. */
  start(ms: number, onExpire: () => void): Deadline;
  /** Arms `deadline` (again) to expire `ms` from now. */
  arm(deadline: Deadline, ms: number): void;
  clear(deadline: Deadline): void;
  close(): void;
}

/** The deadlines of one upstream client, swept every `tickMs` on `timers`. */
export function createDeadlines(tickMs = 20, timers: Timers = realTimers): Deadlines {
  const armed: Deadline[] = [];
  let timer: TimerId | undefined;
  function remove(d: Deadline): void {
    const last = armed.pop()!;
    if (last !== d) {
      armed[d.slot] = last;
      last.slot = d.slot;
    }
    d.slot = -1;
  }
  function sweep(): void {
    const now = timers.now();
    let expired: Deadline[] | undefined;
    // Backwards: a removal moves the last one, already looked at, into the hole.
    for (let i = armed.length - 1; i >= 0; i--) {
      const d = armed[i]!;
      if (d.at <= now) {
        remove(d);
        (expired ??= []).push(d);
      }
    }
    if (armed.length === 0) {
      timers.clearInterval(timer);
      timer = undefined;
    }
    if (expired !== undefined) { for (const d of expired) d.onExpire(); }
  }
  function arm(d: Deadline, ms: number): void {
    d.at = timers.now() + ms;
    if (d.slot < 0) {
      d.slot = armed.length;
      armed.push(d);
    }
    timer ??= timers.setInterval(sweep, Math.min(tickMs, ms));
  }
  return {
    start(ms, onExpire) {
      const deadline: Deadline = { at: 0, slot: -1, onExpire };
      arm(deadline, ms);
      return deadline;
    },
    arm,
    clear(deadline) {
      if (deadline.slot >= 0) remove(deadline);
    },
    close() {
      timers.clearInterval(timer);
      timer = undefined;
      for (const d of armed) d.slot = -1;
      armed.length = 0;
    },
  };
}
