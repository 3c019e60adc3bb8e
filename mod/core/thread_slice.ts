/**
 * Asks Linux for a short time slice for the calling thread: the event loop's (the main thread, and
 * each data-plane worker's).
 *
 * On a machine whose cores are busy, a woken event loop waits for the thread running on its core
 * to use up its slice (1.4 ms by default on two cores, checked at the scheduler's tick: 4 ms with
 * `CONFIG_HZ=250`); the requests that arrive meanwhile queue behind it. Since Linux 6.12 a
 * `SCHED_OTHER` thread may ask for a shorter slice (`sched_setattr`'s `sched_runtime`, 0.1-100 ms,
 * no privilege needed), and a woken thread with a shorter slice than the running one takes the
 * core at once when it is owed CPU time. It gets no more CPU than before, only sooner
 * (docs/bench/2026-11-26-tail-scheduler.md).
 *
 * `SCHED_FLAG_RESET_ON_FORK` keeps it to the calling thread: threads started afterwards (the
 * access-log writer, tokio's blocking pool) get the default slice, so they do not preempt the
 * event loop in turn. Older kernels ignore the slice; without glibc, on other architectures or
 * without FFI permission nothing changes.
 */
import { openLibc } from "./libc.ts";

/** The slice asked for, in ns: the smallest the kernel takes. */
export const EVENT_LOOP_SLICE_NS = 100_000;

const SCHED_SETATTR: Partial<Record<typeof Deno.build.arch, { set: bigint; get: bigint }>> = {
  x86_64: { set: 314n, get: 315n },
  aarch64: { set: 274n, get: 275n },
};
const SCHED_OTHER = 0;
const SCHED_FLAG_RESET_ON_FORK = 1n;
/** `struct sched_attr` up to `sched_util_max` (SCHED_ATTR_SIZE_VER1). */
const ATTR_SIZE = 56;

/** Sets the calling thread's slice to `ns`; true when the kernel took it. */
export function shortenThreadSlice(ns: number = EVENT_LOOP_SLICE_NS): boolean {
  const nr = Deno.build.os === "linux" ? SCHED_SETATTR[Deno.build.arch] : undefined;
  if (nr === undefined) return false;
  const lib = openLibc({
    syscall: { parameters: ["i64", "i64", "buffer", "i64", "i64"], result: "i64" },
  });
  if (lib === undefined) return false;
  try {
    const attr = new Uint8Array(ATTR_SIZE);
    const view = new DataView(attr.buffer);
    // The thread's own attributes (0: the calling thread), so its nice value stays as it is.
    if (lib.symbols.syscall(nr.get, 0n, attr, BigInt(ATTR_SIZE), 0n) !== 0n) return false;
    // A real-time or batch policy set by the operator (chrt) is left alone.
    if (view.getUint32(4, true) !== SCHED_OTHER) return false;
    view.setUint32(0, ATTR_SIZE, true);
    view.setBigUint64(8, SCHED_FLAG_RESET_ON_FORK, true);
    view.setBigUint64(24, BigInt(ns), true); // sched_runtime: the slice
    view.setBigUint64(32, 0n, true);
    view.setBigUint64(40, 0n, true);
    view.setUint32(48, 0, true);
    view.setUint32(52, 0, true);
    return lib.symbols.syscall(nr.set, 0n, attr, 0n, 0n) === 0n;
  } finally {
    lib.close();
  }
}
