/**
 * The V8 flags the server runs with (`deno task start` in deno.json carries the same string, and
 * `scripts/compile.ts` embeds it in the binary); why each, with the figures, in
 * docs/data-plane.md, "Memory and V8 flags":
 *
 * - a 4 MB young generation, which cuts the data plane's scavenge pauses;
 * - no allocation-site pretenuring: under load V8 switched a few per-request allocation sites to
 *   allocating in the old generation, where their objects died at once and waited for a
 *   mark-compact, keeping what they pointed to alive;
 * - a mark-compact at 1.25x the live data instead of up to 4x (`--heap-growing-percent=25`): the
 *   heap's peak is what the process keeps resident, and with pretenuring off the old generation
 *   grows slowly enough that the extra mark-compacts cost no CPU that shows.
 *
 * V8's memory reducer stays on: it gives a burst's heap back after an idle spell
 * (docs/reliability.md, "Memory after a burst"). Benchmarks start the server with them so they
 * measure what ships.
 */
export const SERVER_V8_FLAGS =
  "--v8-flags=--max-semi-space-size=4,--no-allocation-site-pretenuring,--heap-growing-percent=25";

/**
 * Deno's own flags the server runs with (`deno task start` carries them, `scripts/compile.ts`
 * builds the binary with them, the benchmarks' `startWaf` starts the WAF with them):
 *
 * - no V8 code cache: Deno keeps its code-cache database (`v8_code_cache_v2`) mapped after the
 *   modules have loaded, and the pages it read stay in the process's resident set; it only saves
 *   compiling the modules' top levels at start, and what runs under load is compiled either way
 *   (docs/data-plane.md, "Memory and V8 flags");
 * - `request.signal` aborts only when a request fails, not after every answer: Deno's legacy
 *   behaviour warned once per process in the server log after the first bodiless POST or DELETE
 *   (something inside Hono reads the signal); nothing here takes the signal's abort for "sent".
 */
export const SERVER_DENO_FLAGS: readonly string[] = [
  "--no-code-cache",
  "--unstable-no-legacy-abort",
];
