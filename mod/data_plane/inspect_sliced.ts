/**
 * The semantic engine on the data plane's event loop.
 *
 * `inspect()` is synchronous, and judging a large text body (up to the site's
 * `inspect_body_bytes`, 1 MiB by default) costs tens of milliseconds. Such a request is judged
 * in slices instead ({@link InspectionRun}: one input or one 16 KB window per step), and after
 * each {@link SLICE_MS} of work the event loop gets a turn, so one request with a large body
 * cannot hold every other request on the node. Small requests, nearly all of them, are
 * judged in one go.
 *
 * The engine's own budget (`engine/work_budget.ts`, work counted in units) bounds what any
 * request costs; a deadline on the injected clock backs it up: a sliced inspection still
 * running {@link DEADLINE_MS} after it started is stopped where it is, as when the budget runs
 * out (what was read is judged, the request is flagged `inspection: budget`).
 */

import {
  type EngineRequest,
  type Inspection,
  InspectionRun,
  type InspectOptions,
} from "../../engine/mod.ts";
import type { Clock } from "../core/clock.ts";

/** Work done before the event loop gets a turn, in milliseconds. */
export const SLICE_MS = 10;
/** Bodies below this size are judged in one go: they cost well under a slice. */
export const SLICED_FROM_BYTES = 64 * 1024;
/**
 * Wall-clock time a sliced inspection may take. Far above what the budget lets any request
 * cost on an idle core, so it only ends an inspection on a machine starved of CPU.
 */
export const DEADLINE_MS = 5000;

/** How an inspection is paced: work between pauses, and the clock its deadline is read on. */
export interface SliceOptions {
  /** Work between two pauses, in milliseconds ({@link SLICE_MS} by default). */
  readonly sliceMs?: number;
  /** The clock the deadline is measured on; without one there is no deadline. */
  readonly clock?: Clock;
  /** The deadline, in milliseconds ({@link DEADLINE_MS} by default). */
  readonly deadlineMs?: number;
}

/**
 * Inspects one request, pausing between slices of work when its body is large. A small request
 * is judged at once and its inspection returned as it is, without a promise (no event-loop hop
 * for the requests that need none).
 *
 * @param req the request as plain data
 * @param opts the site's level
 * @param pace work between two pauses (a number: milliseconds), the clock and the deadline
 * @returns the same inspection `inspect()` returns (`truncated` when the deadline ended it)
 */
export function inspectSliced(
  req: EngineRequest,
  opts: InspectOptions,
  pace: SliceOptions | number = {},
): Inspection | Promise<Inspection> {
  const run = new InspectionRun(req, opts);
  if ((req.body?.length ?? 0) < SLICED_FROM_BYTES) {
    while (run.step());
    return run.result();
  }
  return sliced(run, typeof pace === "number" ? { sliceMs: pace } : pace);
}

async function sliced(run: InspectionRun, pace: SliceOptions): Promise<Inspection> {
  const sliceMs = pace.sliceMs ?? SLICE_MS;
  const clock = pace.clock;
  const deadline = clock === undefined ? Infinity : clock.now() + (pace.deadlineMs ?? DEADLINE_MS);
  let since = performance.now();
  while (run.step()) {
    if (performance.now() - since >= sliceMs) {
      await turn();
      since = performance.now();
    }
    if (clock !== undefined && clock.now() >= deadline) {
      run.stop();
      break;
    }
  }
  return run.result();
}

/**
 * Lets the event loop run once. A timer is what lets pending I/O through: promise jobs,
 * `setImmediate` and message channels resume before the loop polls its sockets.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
