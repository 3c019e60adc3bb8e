/**
 * Trace ids for the data plane: 16 bytes from the injected CSPRNG each, as 32 hex characters,
 * so ids stay unguessable. The random bytes are drawn in bulk (one call per 256 ids), which
 * keeps the per-request cost to a table lookup per byte.
 */
import type { Random } from "./random.ts";

const ID_BYTES = 16;
const IDS_PER_REFILL = 256;
const HEX: readonly string[] = Array.from(
  { length: 256 },
  (_, i) => i.toString(16).padStart(2, "0"),
);

/** Returns a generator of fresh trace ids. */
export function createTraceIds(random: Random): () => string {
  let pool: Uint8Array = new Uint8Array(0);
  let offset = 0;
  return () => {
    if (offset + ID_BYTES > pool.length) {
      pool = random.bytes(ID_BYTES * IDS_PER_REFILL);
      offset = 0;
    }
    let id = "";
    for (let i = offset; i < offset + ID_BYTES; i++) id += HEX[pool[i]!];
    offset += ID_BYTES;
    return id;
  };
}
