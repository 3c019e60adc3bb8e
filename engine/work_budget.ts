/**
 * A request's inspection budget: the work its inspection may do, counted in units rather than
 * timed, so what happens when it runs out is the same on every machine and in every test.
 *
 * A unit is one character read once: by one detector, by the decoder, by a custom rule's
 * matcher (weighted by its pattern's size, see `custom_rules.ts`). When the budget runs out the
 * inspection stops where it is: what was read stays judged, the rest is not, and the request is
 * flagged (`inspection: budget` in its access-log record). It never waits and never throws.
 */
import type { EngineRequest } from "./types.ts";

/**
 * Work units a request's inspection may spend at least: ample for real traffic (a request of a
 * few kilobytes spends well under a million), bounded for floods.
 */
export const DEFAULT_BUDGET = 8 << 20;
/**
 * Work units per character of the request on top of {@link DEFAULT_BUDGET}. Every character is
 * judged about 1.33 times (overlapping windows) by each of the 21 detectors, about 28 units,
 * plus what decoding reveals (base64, nested JSON, joined comments): twice that fits, so the
 * whole request up to the inspection limit is judged and padding cannot push a payload out of
 * reach, while the work stays linear in the request's size whatever its shape.
 */
export const BUDGET_PER_CHAR = 64;

/** Work units that may be spent, and whether they ran out. */
export class WorkBudget {
  #left: number;
  #exhausted = false;

  /** @param units the work allowed */
  constructor(units: number) {
    this.#left = units;
  }

  /** True once a charge did not fit (or {@link stop} was called): no more work is done. */
  get exhausted(): boolean {
    return this.#exhausted;
  }

  /** Units left. */
  get left(): number {
    return this.#left;
  }

  /**
   * Charges `units` of work about to be done.
   *
   * @returns true when they fit; false, and exhausted from then on, when they do not
   */
  spend(units: number): boolean {
    if (this.#exhausted) return false;
    if (units > this.#left) {
      this.#exhausted = true;
      return false;
    }
    this.#left -= units;
    return true;
  }

  /** Ends the work as if the budget had run out (a caller's own limit, such as a deadline). */
  stop(): void {
    this.#exhausted = true;
  }
}

/** Characters of a request's target, headers and body (the body's bytes). */
export function requestSize(req: EngineRequest): number {
  let size = req.path.length + req.query.length + (req.body?.length ?? 0);
  for (const [name, value] of req.headers) size += name.length + value.length;
  return size;
}

/**
 * The engine's budget for one request: {@link DEFAULT_BUDGET} plus {@link BUDGET_PER_CHAR} per
 * character of its target, headers and body.
 */
export function budgetFor(req: EngineRequest): number {
  return DEFAULT_BUDGET + BUDGET_PER_CHAR * requestSize(req);
}
