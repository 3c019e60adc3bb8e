/** The one wrapper around `fflate`: builds a ZIP archive in memory from named entries. */
import { zipSync } from "fflate";

export interface ZipEntry {
  readonly path: string;
  readonly data: Uint8Array;
}

/** A deflated ZIP of `entries`, every entry stamped with `mtime` (ms), never the wall clock. */
export function createZip(entries: readonly ZipEntry[], mtime: number): Uint8Array {
  const files: Record<string, [Uint8Array, { mtime: Date; level: 6 }]> = {};
  for (const entry of entries) {
    if (entry.path in files) throw new Error(`Duplicate ZIP entry "${entry.path}"`);
    files[entry.path] = [entry.data, { mtime: new Date(mtime), level: 6 }];
  }
  return zipSync(files);
}
