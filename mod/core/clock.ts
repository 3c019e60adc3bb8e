/** Time source; the only place that reads the wall clock, so tests can inject a fake. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand instead of sleeping. */
export class FakeClock implements Clock {
  #now: number;
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(ms: number): void {
    this.#now = ms;
  }
}

/**
 * A clock that can add a measured offset to another (time synchronisation with
 * `time.apply_offset`): what TOTP, JWT `exp`/`nbf` and cluster heartbeats read. With the offset at
 * 0 it is the base clock.
 */
export class OffsetClock implements Clock {
  readonly base: Clock;
  #offset = 0;
  constructor(base: Clock) {
    this.base = base;
  }
  now(): number {
    return this.base.now() + this.#offset;
  }
  get offsetMs(): number {
    return this.#offset;
  }
  set offsetMs(ms: number) {
    this.#offset = Math.round(ms);
  }
}
