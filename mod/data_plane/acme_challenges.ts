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
