/**
 * The management listener's own addresses and the addresses its signed-in clients came from
 * lately: what ALAP never blocks (`mod/protection/alap_clients.ts`), so an operator testing a
 * site from the machine they administer it from cannot lock themselves out. Only authenticated
 * requests (a session or an API token) make a client known: an unauthenticated one must not be
 * able to exempt itself by calling the management port.
 */
import { parseIp } from "../../engine/ip_address.ts";
import type { Clock } from "./clock.ts";

/** How long a client stays known after its last authenticated request. */
export const KNOWN_FOR_MS = 24 * 3_600_000;
/** Clients remembered at most (the longest unseen leaves first). */
export const MAX_KNOWN = 1024;

/** One spelling per address (`::ffff:10.0.0.1` is `10.0.0.1`, `0::1` is `::1`); undefined if none. */
export function addressKey(text: string): string | undefined {
  const ip = parseIp(text);
  return ip && `${ip.version}:${ip.words.join(".")}`;
}

export class ManagementClients {
  readonly #clock: Clock;
  readonly #own = new Set<string>();
  /** Address key to the time it was last seen, oldest first. */
  readonly #seen = new Map<string, number>();

  constructor(clock: Clock, own: readonly string[] = []) {
    this.#clock = clock;
    for (const a of own) {
      const key = addressKey(a);
      if (key) this.#own.add(key);
    }
  }

  /** An authenticated management request came from `ip`. */
  remember(ip: string): void {
    const key = addressKey(ip);
    if (!key || this.#own.has(key)) return;
    this.#seen.delete(key);
    if (this.#seen.size >= MAX_KNOWN) this.#seen.delete(this.#seen.keys().next().value!);
    this.#seen.set(key, this.#clock.now());
  }

  /** True for the listener's own addresses and clients seen within {@link KNOWN_FOR_MS}. */
  has(ip: string): boolean {
    const key = addressKey(ip);
    if (!key) return false;
    if (this.#own.has(key)) return true;
    const at = this.#seen.get(key);
    return at !== undefined && this.#clock.now() - at <= KNOWN_FOR_MS;
  }
}
