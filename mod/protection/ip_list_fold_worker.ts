/**
 * The IP list's fold thread (`mod/protection/ip_list_fold_thread.ts`): each fold asked for,
 * answered with the new base in shared memory.
 */
/// <reference lib="deno.worker" />
import type { FoldAnswer, FoldRequest } from "./ip_list_fold_thread.ts";
import { foldHere } from "../../engine/ip_list_fold.ts";

self.onmessage = (e: MessageEvent<FoldRequest>) => {
  const { id, base, dropped, added } = e.data;
  let answer: FoldAnswer;
  try {
    answer = { id, fold: foldHere(base, dropped, added) };
  } catch (err) {
    answer = { id, error: err instanceof Error ? err.message : String(err) };
  }
  self.postMessage(answer);
};
