/**
 * Trace ids for the data plane: 32 hex characters, time-ordered like a UUIDv7. The first 12 are
 * the time in milliseconds (48 bits); the other 20 are 10 bytes from the injected CSPRNG, so an id
 * stays unguessable (80 random bits) while newer ids sort after older ones. That order is what the
 * access log's unique `trace_id` index needs: fully random ids land on a random index page per
 * insert, several times dearer (docs/bench/2026-11-26-access-log-record-compact.md). The random bytes are drawn and
 * hex-encoded in bulk (one call per 256 ids), so the per-request cost is one substring.
 */
import type { Clock } from "../core/clock.ts";
import type { Random } from "../core/random.ts";

const RANDOM_BYTES = 10;
const RANDOM_DIGITS = RANDOM_BYTES * 2;
const IDS_PER_REFILL = 256;
const TIME_DIGITS = 12;

/** Returns a generator of fresh trace ids. */
export function createTraceIds(random: Random, clock: Clock): () => string {
  let pool = "";
  let offset = 0;
  let lastMs = -1;
  let prefix = "";
  return () => {
    const now = clock.now();
    if (now !== lastMs) {
      lastMs = now;
      prefix = Math.max(0, Math.floor(now)).toString(16).padStart(TIME_DIGITS, "0")
        .slice(-TIME_DIGITS);
    }
    if (offset + RANDOM_DIGITS > pool.length) {
      pool = random.bytes(RANDOM_BYTES * IDS_PER_REFILL).toHex();
      offset = 0;
    }
    const id = prefix + pool.slice(offset, offset + RANDOM_DIGITS);
    offset += RANDOM_DIGITS;
    return id;
  };
}
