/** The shared buffer between the PostgreSQL store's facade and its connection thread. */

/** Int32 slots: 0 state (0 waiting, 1 answered), 1 answer length, 2 down flag, 3 answer id. */
export const HEADER_BYTES = 16;

/**
 * Waits until the connection thread has answered (slot 0 set), for at most `limitMs`, and says
 * whether the answer is the one to request `id` (slot 3). A wake-up alone proves nothing: the
 * thread stores its answer, then notifies, and the facade may read that answer between the two,
 * send its next request and be woken by the late notify; so each wake-up reads the state again
 * and waits on for the time left.
 *
 * @returns true once the answer to `id` is there; false when the time ran out or another
 *   request's answer is there
 */
export function waitForAnswer(header: Int32Array, id: number, limitMs: number): boolean {
  const deadline = performance.now() + limitMs;
  for (;;) {
    if (Atomics.load(header, 0) !== 0) return Atomics.load(header, 3) === id;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    Atomics.wait(header, 0, 0, left);
  }
}
