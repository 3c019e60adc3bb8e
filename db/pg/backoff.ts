/**
 * The reconnect delay of the PostgreSQL clients (the `postgres` driver's `backoff` option, in
 * seconds): 50 ms doubling up to 1 s, apart from the one-second probe of the store's connection
 * thread. The driver's default grows as 3^n / 100 up to 20 s, so after a 30 s outage a
 * controller found its database again only 10 to 20 s after it was back.
 */
export const MAX_RECONNECT_DELAY_S = 1;

export function reconnectBackoff(retries: number): number {
  return Math.min(0.05 * 2 ** Math.max(0, retries), MAX_RECONNECT_DELAY_S);
}
