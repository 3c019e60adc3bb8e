/**
 * What a data directory held before `waf serve` started writing, so that a start failing after
 * it wrote (a port taken between the listener check and the bind) removes what it created and
 * nothing else: the directory itself when this start made it (from its first new parent), or
 * else the entries that were not there before. A directory that existed keeps everything it had,
 * including its store's SQLite journal files (`waf.db-wal`), which may hold committed data.
 */
import { pathExists } from "../mod/core/fs.ts";

/** The data directory's state before the start. */
export interface DirSnapshot {
  readonly dir: string;
  /** The first path on the way to `dir` that did not exist (`dir` itself, or a parent). */
  readonly missing: string | undefined;
  /** The names in `dir` when it existed. */
  readonly entries: ReadonlySet<string>;
}

function parentOf(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const slash = trimmed.lastIndexOf("/");
  return slash > 0 ? trimmed.slice(0, slash) : slash === 0 ? "/" : ".";
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out;
}

/** Records what `dir` holds now (or which part of its path is missing). */
export async function snapshotDir(dir: string): Promise<DirSnapshot> {
  let missing: string | undefined;
  for (let at = dir; !(await pathExists(at)); at = parentOf(at)) missing = at;
  return { dir, missing, entries: new Set(missing === undefined ? await names(dir) : []) };
}

const JOURNAL = /^(.+)-(?:wal|shm|journal)$/;

/** Removes what was created in or for `snapshot.dir` since the snapshot. */
export async function removeCreated(snapshot: DirSnapshot): Promise<void> {
  if (snapshot.missing !== undefined) {
    await Deno.remove(snapshot.missing, { recursive: true }).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
    return;
  }
  for (const name of await names(snapshot.dir)) {
    if (snapshot.entries.has(name)) continue;
    const journalOf = JOURNAL.exec(name)?.[1];
    if (journalOf !== undefined && snapshot.entries.has(journalOf)) continue;
    await Deno.remove(`${snapshot.dir}/${name}`, { recursive: true });
  }
}
