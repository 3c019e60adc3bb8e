/**
 * The descriptor budget of the connection fronts: what the process's descriptor limit leaves
 * for connections, split into a pool for the data plane and a reserve of its own for the
 * management listener (so a flood on the data listener cannot take the console and `/health`
 * down with it), and what each connection is charged: the descriptors it really holds.
 *
 * - A connection the own HTTP/1.1 server serves holds its client socket, and one upstream
 *   connection while a request is handled (the upstream pool's share; idle pooled connections
 *   live in the reserve).
 * - A piped connection (management, or handed over to `Deno.serve`: upgrades, HTTP/2, CONNECT)
 *   also holds both ends of its loopback pipe, and, on the data plane, an upstream connection.
 * - Behind the HTTPS front, its TLS socket and pipe come on top (`extraDescriptors`).
 *
 * A pool lives per thread (each data worker has its share of the data pool, the main thread
 * the management reserve), shared by the fronts of one plane on that thread.
 */

/** Which pool a front draws from. */
export type Plane = "data" | "management";

/** The client socket. */
export const OWN_DESCRIPTORS = 1;
/** The client socket and both ends of the loopback pipe. */
export const PIPED_DESCRIPTORS = 3;
/** The management reserve: this share of what the limit leaves for connections ... */
const MANAGEMENT_SHARE = 0.15;
/** ... at most this many descriptors (its 1,000 default connections, piped, take 3,000). */
const MANAGEMENT_MAX = 3_000;

/** What the descriptor limit leaves for connections after the process's own needs. */
export function usableDescriptors(limit = readLimit()): number {
  if (limit === undefined) return Number.MAX_SAFE_INTEGER;
  const reserve = Math.max(64, Math.floor(limit * 0.1));
  return Math.max(64, limit - reserve);
}

/**
 * The descriptors of `plane`'s pool on one thread: the management reserve, or `share` of the
 * rest (a data worker's part). From the limit `limit` (default: this process's).
 */
export function planeBudget(plane: Plane, share = 1, limit = readLimit()): number {
  const usable = usableDescriptors(limit);
  if (usable === Number.MAX_SAFE_INTEGER) return usable;
  const management = Math.max(16, Math.min(MANAGEMENT_MAX, Math.floor(usable * MANAGEMENT_SHARE)));
  if (plane === "management") return management;
  return Math.max(16, Math.floor((usable - management) * share));
}

function readLimit(): number | undefined {
  try {
    const text = Deno.readTextFileSync("/proc/self/limits");
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(text);
    return m && m[1] !== "unlimited" ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The descriptors one plane's fronts on this thread may hold, and hold. */
export class DescriptorPool {
  used = 0;
  /** Fronts drawing from it (the pool is dropped when the last one closes). */
  fronts = 0;
  constructor(readonly plane: Plane, readonly budget: number) {}

  /** Whether `n` more fit. */
  fits(n: number): boolean {
    return this.used + n <= this.budget;
  }

  /** How full it is, 0 to 1 (and past 1 while a handled request holds an upstream). */
  get pressure(): number {
    return this.used / this.budget;
  }
}

const pools = new Map<Plane, DescriptorPool>();

/**
 * The pool of `plane` on this thread, opened with `budget` by its first front; every front that
 * opens it closes it with {@link releasePool}.
 */
export function openPool(plane: Plane, budget: () => number): DescriptorPool {
  let pool = pools.get(plane);
  if (pool === undefined) pools.set(plane, pool = new DescriptorPool(plane, budget()));
  pool.fronts++;
  return pool;
}

/** A front is done with `pool`; the last one drops it (a later front reads the limit again). */
export function releasePool(pool: DescriptorPool): void {
  if (--pool.fronts <= 0 && pools.get(pool.plane) === pool) pools.delete(pool.plane);
}
