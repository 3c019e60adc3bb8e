/**
 * The IP list's fold thread (`mod/protection/ip_list_fold_thread.ts`): each fold asked for, answered with the
 * new base in shared memory.
 */
/// <reference lib="deno.worker" />
import type { FoldAnswer, FoldRequest, FoldStall } from "./ip_list_fold_thread.ts";
import { foldHere } from "../../engine/ip_list_fold.ts";

self.onmessage = (e: MessageEvent<FoldRequest | FoldStall>) => {
  if ("stall" in e.data) {
    // The test hook: a thread that does not answer, as a fold that never ends.
    const end = Date.now() + e.data.stall;
    while (Date.now() < end) { /* busy */ }
    return;
  }
  const { id, base, dropped, added } = e.data;
  let answer: FoldAnswer;
  try {
    answer = { id, fold: foldHere(base, dropped, added) };
  } catch (err) {
    answer = { id, error: err instanceof Error ? err.message : String(err) };
  }
  self.postMessage(answer);
};
