/**
 * The semantic engine on the data plane's event loop.
 *
 * `inspect()` is synchronous, and judging a large text body (up to the site's
 * `inspect_body_bytes`, 1 MiB by default) costs tens of milliseconds. Such a request is judged
 * in slices instead ({@link InspectionRun}: one input or one 16 KB window per step), and after
 * each {@link SLICE_MS} of work the event loop gets a turn, so one request with a large body
 * cannot hold every other request on the node. Small requests, nearly all of them, are
 * judged in one go.
 */

import {
  type EngineRequest,
  type Inspection,
  InspectionRun,
  type InspectOptions,
} from "../../engine/mod.ts";

/** Work done before the event loop gets a turn, in milliseconds. */
export const SLICE_MS = 10;
/** Bodies below this size are judged in one go: they cost well under a slice. */
export const SLICED_FROM_BYTES = 64 * 1024;

/**
 * Inspects one request, pausing between slices of work when its body is large. A small request
 * is judged at once and its inspection returned as it is, without a promise (no event-loop hop
 * for the requests that need none).
 *
 * @param req the request as plain data
 * @param opts the site's level
 * @param sliceMs work between two pauses
 * @returns the same inspection `inspect()` returns
 */
export function inspectSliced(
  req: EngineRequest,
  opts: InspectOptions,
  sliceMs: number = SLICE_MS,
): Inspection | Promise<Inspection> {
  const run = new InspectionRun(req, opts);
  if ((req.body?.length ?? 0) < SLICED_FROM_BYTES) {
    while (run.step());
    return run.result();
  }
  return sliced(run, sliceMs);
}

async function sliced(run: InspectionRun, sliceMs: number): Promise<Inspection> {
  let since = performance.now();
  while (run.step()) {
    if (performance.now() - since >= sliceMs) {
      await turn();
      since = performance.now();
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
