/**
 * The IP list's fold thread (`engine/ip_list_fold.ts`): one fold, answered with the new base in
 * shared memory.
 */
/// <reference lib="deno.worker" />
import type { FoldAnswer, FoldRequest } from "./ip_list_fold.ts";
import { foldHere } from "./ip_list_updater.ts";

self.onmessage = (e: MessageEvent<FoldRequest>) => {
  const { base, dropped, added } = e.data;
  let answer: FoldAnswer;
  try {
    answer = { fold: foldHere(base, dropped, added) };
  } catch (err) {
    answer = { error: err instanceof Error ? err.message : String(err) };
  }
  self.postMessage(answer);
};
