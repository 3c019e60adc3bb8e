/**
 * Preloaded into a `waf` child process (`deno run --preload`) by the test of the server's
 * unhandled-rejection guard: each SIGUSR2 rejects a promise nobody handles, as a bug in a side
 * service's client would.
 */
Deno.addSignalListener("SIGUSR2", () => {
  Promise.reject(new Error("rejection nobody handled (test hook)"));
});
