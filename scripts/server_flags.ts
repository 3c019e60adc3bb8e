/**
 * The V8 flags the server runs with (`deno task start` in deno.json carries the same string):
 * a 4 MB young generation and no memory reducer, which cut the data plane's GC pauses (evidence
 * in docs/data-plane.md). Benchmarks start the server with them so they measure what ships.
 */
export const SERVER_V8_FLAGS = "--v8-flags=--max-semi-space-size=4,--no-memory-reducer";
