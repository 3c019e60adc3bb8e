/**
 * The V8 flags the server runs with (`deno task start` in deno.json carries the same string):
 * a 4 MB young generation, which cuts the data plane's GC pauses (evidence in docs/data-plane.md).
 * V8's memory reducer stays on: it gives a burst's heap back after an idle spell (measured in
 * docs/reliability.md, "Memory after a burst"). Benchmarks start the server with them so they measure what ships.
 */
export const SERVER_V8_FLAGS = "--v8-flags=--max-semi-space-size=4";
