/**
 * glibc through FFI, for the few process-level calls Deno has no API for (`malloc_trim`,
 * `sched_setattr`). Asked, never tried: without `--allow-ffi`, `Deno.dlopen` on a terminal prompts
 * (Allow? [y/n/A]), and the prompt is synchronous, so it would hold the event loop (the data plane
 * already listening) until someone answers it. So the permission is queried first
 * (`Deno.permissions.querySync` never prompts), and nothing is opened without all of `--allow-ffi`
 * (`-A` in `deno task start` and the compiled binary), on anything but Linux, or without glibc.
 */

/** glibc's soname on Linux. */
const LIBC = "libc.so.6";

/** Opens glibc with `symbols`, or returns undefined when it must not or cannot be opened. */
export function openLibc<const S extends Deno.ForeignLibraryInterface>(
  symbols: S,
): Deno.DynamicLibrary<S> | undefined {
  if (Deno.build.os !== "linux") return undefined;
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return undefined;
  try {
    return Deno.dlopen(LIBC, symbols);
  } catch {
    // Not glibc (musl).
    return undefined;
  }
}
