/**
 * Stops `waf serve` when the command that launched it through `deno task` is gone. The README's
 * start command is a chain: `npx` (node) → `sh -c` → `deno task` → `deno run main.ts serve`.
 * `npx` forwards SIGTERM to its `sh`, which dies without passing it on, so `deno task` (which
 * does forward signals) and the server were orphaned, holding both ports. The server therefore
 * watches its parent: when that parent is `deno task` and it loses its own parent (it dies or is
 * re-parented), the launch is over and the server shuts down as on SIGTERM. Linux only (it
 * reads `/proc`); elsewhere, or when not started by `deno task`, it watches nothing.
 */

export interface LauncherWatchDeps {
  /** This process's parent id (`Deno.ppid`). */
  readonly ppid: number;
  /** Reads a `/proc` file; undefined when it does not exist. */
  readonly readProc: (path: string) => string | undefined;
  readonly intervalMs?: number;
}

/** The parent id in `/proc/<pid>/stat` (the field after the parenthesised command name). */
function parentOf(stat: string | undefined): number | undefined {
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ppid = Number(fields[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** True when `cmdline` (NUL-separated) is `deno task ...`. */
export function isDenoTask(cmdline: string | undefined): boolean {
  if (!cmdline) return false;
  const argv = cmdline.split("\0");
  const exe = argv[0]?.split("/").pop() ?? "";
  return /^deno(\.exe)?$/.test(exe) && argv[1] === "task";
}

/**
 * Calls `onGone` once the launching `deno task` has lost its parent; returns a stop function.
 * Does nothing (and returns a no-op) when the parent is not `deno task` or /proc is unreadable.
 */
export function watchLauncher(deps: LauncherWatchDeps, onGone: () => void): () => void {
  const parent = deps.ppid;
  if (!isDenoTask(deps.readProc(`/proc/${parent}/cmdline`))) return () => {};
  const grandparent = parentOf(deps.readProc(`/proc/${parent}/stat`));
  if (grandparent === undefined) return () => {};
  const timer = setInterval(() => {
    if (parentOf(deps.readProc(`/proc/${parent}/stat`)) !== grandparent) {
      clearInterval(timer);
      onGone();
    }
  }, deps.intervalMs ?? 1000);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}

/** Reads `/proc` for {@link watchLauncher}. */
export function readProc(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}
