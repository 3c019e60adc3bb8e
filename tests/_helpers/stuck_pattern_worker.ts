/**
 * A regex tester worker (mod/protection/pattern_tester_worker.ts) that never answers: a test's
 * stand-in for a pattern that runs for minutes on its samples. It says it is ready, then spins
 * on the first test it gets, as a WebAssembly call that does not return would.
 */
/// <reference lib="deno.worker" />
self.onmessage = () => {
  for (;;) {
    // Spins until the tester ends the worker.
  }
};
self.postMessage({ ready: true });
