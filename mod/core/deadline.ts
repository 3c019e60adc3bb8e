/**
 * A cancellable deadline: `fire` after `ms`, unless the returned function is called first. The
 * services that wait on a worker (the IP-list fold, the regex tester) take one, so tests can fire
 * it by hand instead of sleeping.
 */

/** Starts a deadline (`fire` after `ms`); returns what cancels it. */
export type Deadline = (fire: () => void, ms: number) => () => void;

/** The deadline of a timer. */
export const timerDeadline: Deadline = (fire, ms) => {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
};
