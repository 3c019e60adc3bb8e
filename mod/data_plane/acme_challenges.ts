/**
 * The HTTP-01 answers the data plane serves while an ACME order is validated: for a pending
 * token of one of the site's host names, `GET /.well-known/acme-challenge/<token>` answers the
 * key authorisation before any protection check (RFC 8555 section 8.3). The issuer adds a token
 * before it asks the CA to validate and removes it afterwards; nothing else is ever answered
 * under that path here (other requests for it go through the site as usual).
 */
export const ACME_CHALLENGE_PREFIX = "/.well-known/acme-challenge/";

export interface AcmeChallenges {
  /** The key authorisation for `token` on `host` (lower case, no port), if one is pending. */
  answer(host: string, token: string): string | undefined;
  add(host: string, token: string, keyAuthorization: string): void;
  remove(host: string, token: string): void;
  /** Pending tokens (diagnostics and tests). */
  readonly size: number;
}

export function createAcmeChallenges(): AcmeChallenges {
  const pending = new Map<string, string>();
  const key = (host: string, token: string) => `${host} ${token}`;
  return {
    answer: (host, token) => pending.get(key(host, token)),
    add(host, token, keyAuthorization) {
      pending.set(key(host, token), keyAuthorization);
    },
    remove(host, token) {
      pending.delete(key(host, token));
    },
    get size() {
      return pending.size;
    },
  };
}

/** Where the pending answers of a deployment are kept (db/acme_challenges_repo.ts). */
export interface AcmeChallengeStore {
  put(host: string, token: string, keyAuthorization: string): void;
  delete(host: string, token: string): void;
  /** Every pending answer, across the deployment's controllers. */
  all(): readonly { host: string; token: string; keyAuthorization: string }[];
}

/** {@link AcmeChallenges} shared with the deployment's other controllers, and its refresh. */
export interface SharedAcmeChallenges extends AcmeChallenges {
  /** Reads the store again: answers another controller added appear, removed ones go. */
  refresh(): void;
}

/**
 * The answers of an order are kept in the store as well as in `local` (this controller's data
 * plane), so behind a load balancer the CA's request may reach any controller: the one that
 * ordered writes them, the others {@link SharedAcmeChallenges.refresh} when told of a change. A
 * store that fails leaves the local answers working (the ordering controller still answers).
 */
export function shareAcmeChallenges(
  local: AcmeChallenges,
  store: AcmeChallengeStore,
  warn: (message: string, err: unknown) => void,
): SharedAcmeChallenges {
  const key = (host: string, token: string) => `${host} ${token}`;
  /** The answers this controller serves because another one added them. */
  let remote = new Map<string, { host: string; token: string }>();
  const own = new Set<string>();
  return {
    answer: (host, token) => local.answer(host, token),
    add(host, token, keyAuthorization) {
      own.add(key(host, token));
      local.add(host, token, keyAuthorization);
      try {
        store.put(host, token, keyAuthorization);
      } catch (err) {
        warn("the ACME challenge could not be shared with the other controllers", err);
      }
    },
    remove(host, token) {
      own.delete(key(host, token));
      local.remove(host, token);
      try {
        store.delete(host, token);
      } catch (err) {
        warn("the ACME challenge could not be removed from the store", err);
      }
    },
    get size() {
      return local.size;
    },
    refresh() {
      const next = new Map<string, { host: string; token: string }>();
      for (const a of store.all()) {
        const k = key(a.host, a.token);
        if (own.has(k)) continue;
        next.set(k, a);
        if (local.answer(a.host, a.token) !== a.keyAuthorization) {
          local.add(a.host, a.token, a.keyAuthorization);
        }
      }
      for (const [k, a] of remote) if (!next.has(k)) local.remove(a.host, a.token);
      remote = next;
    },
  };
}
