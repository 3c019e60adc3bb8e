/** Randomness source; the only place that reads the system CSPRNG, so tests can inject one. */
export interface Random {
  bytes(length: number): Uint8Array;
}

export const systemRandom: Random = {
  bytes(length: number): Uint8Array {
    return crypto.getRandomValues(new Uint8Array(length));
  },
};

/** A lower-case hex identifier of `bytes` random bytes (trace and event ids use 16). */
export function randomHex(random: Random, bytes = 16): string {
  return random.bytes(bytes).toHex();
}

const URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** A URL-safe random string of `length` characters (unbiased: 64 symbols, 6 bits each). */
export function randomToken(random: Random, length = 43): string {
  const bytes = random.bytes(length);
  let out = "";
  for (const b of bytes) out += URL_SAFE[b & 63];
  return out;
}
