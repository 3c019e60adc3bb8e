/**
 * The regex tester's worker (`mod/protection/pattern_tester.ts`): compiles each pattern asked
 * for with RE2, as saving a custom rule would, and tries it on the samples.
 */
/// <reference lib="deno.worker" />
import type { PatternTestAnswer, PatternTestRequest } from "./pattern_tester.ts";
import { testPattern } from "../../engine/custom_rules.ts";

self.onmessage = (e: MessageEvent<PatternTestRequest>) => {
  const { id, pattern, ignoreCase, samples } = e.data;
  self.postMessage(
    { id, result: testPattern(pattern, ignoreCase, samples) } satisfies PatternTestAnswer,
  );
};
// Loaded (RE2's instance included): the tests' time limits start from here.
self.postMessage({ ready: true } satisfies PatternTestAnswer);
