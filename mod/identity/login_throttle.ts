/**
 * Who may try a password now. Failures are counted per (username, client address): that pair is
 * locked with exponential backoff, so an attacker can lock only the pair they use, never the
 * real administrator at another address, and a success resets the pair (a few typos cost a
 * local operator nothing once they get it right). Two ceilings count across pairs and only ever
 * ask for a CAPTCHA, never refuse: a username that failed often from any addresses (a
 * distributed guess at one account), and a client that failed often across usernames (password
 * spraying). Given the store, the counts are the deployment's (every controller sees the same
 * ones, and they survive a restart); without it they live in process memory, bounded.
 */
import type { Clock } from "../core/clock.ts";
import { createLockout, type LockoutStore } from "./lockout.ts";

export interface LoginLimits {
  /** Failures of one (username, client) pair before it is locked. */
  readonly threshold: number;
  /** First lock of a pair; each further failure doubles it, up to `maxLockMs`. */
  readonly baseLockMs: number;
  readonly maxLockMs: number;
  /** A key with no failure for this long starts again from zero. */
  readonly windowMs: number;
  /** Failures of one username from any addresses in the window before everyone needs a CAPTCHA. */
  readonly usernameCeiling: number;
  /** Failures of one client across usernames in the window before it needs a CAPTCHA. */
  readonly clientCeiling: number;
}

export const LOGIN_LIMITS: LoginLimits = {
  threshold: 5,
  baseLockMs: 30_000,
  maxLockMs: 15 * 60_000,
  windowMs: 15 * 60_000,
  usernameCeiling: 100,
  clientCeiling: 20,
};

/**
 * The backoff of one key (also used by two-factor checks and password confirmations): 5
 * failures, then 30 s doubling.
 */
export const LOGIN_LOCKOUT = {
  threshold: LOGIN_LIMITS.threshold,
  baseLockMs: LOGIN_LIMITS.baseLockMs,
  maxLockMs: LOGIN_LIMITS.maxLockMs,
  windowMs: LOGIN_LIMITS.windowMs,
} as const;

/** What the CAPTCHA policy needs to decide for one login attempt. */
export interface LoginPressure {
  /** Failures of this (username, client) pair in the window (0 without a username). */
  readonly pairFailures: number;
  /** A ceiling (username or client) is reached: a CAPTCHA is due whatever the pair did. */
  readonly ceilingReached: boolean;
}

const pairKey = (username: string, client: string) => `${username}\n${client}`;

export function createLoginThrottle(
  clock: Clock,
  limits: LoginLimits = LOGIN_LIMITS,
  store?: LockoutStore,
) {
  const window = { windowMs: limits.windowMs, baseLockMs: 0, maxLockMs: 0 };
  const shared = (scope: string) => store && { store, scope };
  const pairs = createLockout(clock, { ...limits }, shared("login.pair"));
  // Ceilings never lock: their threshold is out of reach, only their counts are read.
  const usernames = createLockout(
    clock,
    { ...window, threshold: Infinity },
    shared("login.username"),
  );
  const clients = createLockout(clock, { ...window, threshold: Infinity }, shared("login.client"));
  // The three counts of one failure are one write for the store.
  const atomically = <T>(fn: () => T): T => store ? store.atomically(fn) : fn();

  return {
    /** Seconds until this pair may try again; 0 when it is not locked. */
    retryAfter(username: string, client: string): number {
      return pairs.retryAfter([pairKey(username, client)]);
    },
    /** The counts behind the CAPTCHA decision (`username` unknown: the client alone). */
    pressure(client: string, username?: string): LoginPressure {
      const clientHot = clients.atLeast(client, limits.clientCeiling);
      if (username === undefined) return { pairFailures: 0, ceilingReached: clientHot };
      return {
        pairFailures: pairs.failures(pairKey(username, client)),
        ceilingReached: clientHot || usernames.atLeast(username, limits.usernameCeiling),
      };
    },
    /**
     * Counts one failed password (or second factor) of `username` from `client`; true when this
     * failure locked the pair (the `login.lockout` notification).
     */
    fail(username: string, client: string): boolean {
      return atomically(() => {
        const [failures] = pairs.fail([pairKey(username, client)]);
        usernames.fail([username]);
        clients.fail([client]);
        return failures === limits.threshold;
      });
    },
    /** A success resets its own pair only: the ceilings keep counting an attack in progress. */
    succeed(username: string, client: string): void {
      pairs.reset(pairKey(username, client));
    },
    /** Drops entries whose window and lock have both passed. */
    sweep(): void {
      pairs.sweep();
      usernames.sweep();
      clients.sweep();
    },
  };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
