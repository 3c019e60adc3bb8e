/**
 * Gives the C heap's freed pages back to the system now and then (glibc's `malloc_trim(0)`).
 *
 * glibc's allocator keeps what a thread frees in that thread's arena, and returns it to the
 * system only when the free space sits at the top of the arena. Deno starts dozens of threads
 * (tokio's blocking pool while the modules load, V8's background threads, the access-log writer),
 * so a two-core machine has 16 arenas, and what their freed chunks hold stays resident
 * (docs/bench/2026-11-26-resident-memory.md). `MALLOC_ARENA_MAX` would cap the arenas, but it is read from the
 * environment before `main.ts` runs, and `mallopt(M_ARENA_MAX)` then no longer changes the
 * arenas that exist. `malloc_trim(0)` walks every arena and returns each free page inside it
 * (`madvise(MADV_DONTNEED)`); it runs on a blocking-pool thread (`nonblocking`), so the event loop
 * does not wait for the call, but glibc locks each arena while trimming it: a thread that
 * allocates from that arena meanwhile waits, the main thread too while the main arena is trimmed
 * (docs/bench/2026-11-26-resident-memory.md).
 *
 * Where there is no glibc (musl, macOS) or no FFI permission (all of it: `--allow-ffi` or `-A`;
 * the permission is queried, never requested), nothing runs.
 */
import { openLibc } from "./libc.ts";

/** How often the trim runs: often enough to keep the holes small, rarely enough to cost nothing. */
export const MALLOC_TRIM_INTERVAL_MS = 10_000;

export interface MallocTrimmer {
  /** Whether trims run (glibc was found and may be loaded). */
  readonly active: boolean;
  /** Trims once now; resolves when it is done (false when nothing runs). */
  trim(): Promise<boolean>;
  /** Stops the timer and unloads the library once a running trim has finished. */
  stop(): Promise<void>;
}

/** Starts trimming every `intervalMs`; the timer does not keep the process alive. */
export function startMallocTrimmer(intervalMs = MALLOC_TRIM_INTERVAL_MS): MallocTrimmer {
  const lib = openLibc({
    malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
  });
  let running: Promise<boolean> | undefined;
  let stopped = false;
  const trim = (): Promise<boolean> => {
    if (lib === undefined || stopped) return Promise.resolve(false);
    running ??= lib.symbols.malloc_trim(0n).then(
      () => true,
      () => false,
    ).finally(() => running = undefined);
    return running;
  };
  const timer = lib === undefined ? undefined : setInterval(() => void trim(), intervalMs);
  if (timer !== undefined) Deno.unrefTimer(timer);
  return {
    active: lib !== undefined,
    trim,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      // The library stays loaded until a trim on the blocking pool has returned.
      await running;
      lib?.close();
    },
  };
}
