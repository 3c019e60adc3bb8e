/**
 * The clock and timers of the transport, taken as a parameter (Deno std's `FakeTime` pattern):
 * the real ones by default, a fake one in tests (`tests/_helpers/fake_timers.ts`), so deadline
 * tests tick instead of sleeping.
 */

/** A timer's id, as `setTimeout` and `setInterval` give it. */
export type TimerId = number | ReturnType<typeof setTimeout>;

export interface Timers {
  /** Milliseconds on a monotonic clock (`performance.now()`): what deadlines are measured on. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerId;
  clearTimeout(id: TimerId | undefined): void;
  setInterval(fn: () => void, ms: number): TimerId;
  clearInterval(id: TimerId | undefined): void;
  /** Lets the process exit while the timer is pending (`Deno.unrefTimer`). */
  unref(id: TimerId): void;
}

/** The runtime's clock and timers. */
export const realTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (id) => clearInterval(id),
  unref: (id) => Deno.unrefTimer(id),
};
