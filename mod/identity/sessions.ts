/**
 * Admin sessions. A session id is 32 random bytes (base64url) handed to the browser once; the
 * store keeps only its SHA-256. A session lives 30 minutes without use (idle) and 12 hours at
 * most (absolute), and dies at its next request when the account's credential epoch moves
 * (password, role, username, 2FA or disabled state changed). The CSRF value is an HMAC of
 * the session id, so the double-submitted cookie is also bound to this one session.
 */
import type { SessionRow, UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Clock } from "../core/clock.ts";
import { b64url, hmac, sha256Hex } from "../core/digest.ts";
import { permissionsOf, type RoleMap } from "./permissions.ts";
import type { Random } from "../core/random.ts";

export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_ABSOLUTE_MS = 12 * 60 * 60_000;
/** Writing `last_seen_at` at most this often keeps reads from turning into writes. */
const TOUCH_EVERY_MS = 60_000;
const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface SessionPrincipal {
  readonly kind: "user";
  readonly id: string;
  readonly name: string;
  readonly role: string;
  readonly permissions: readonly string[];
  readonly sessionHash: string;
}

export interface Authenticated {
  readonly user: UserRow;
  readonly session: SessionRow;
  readonly principal: SessionPrincipal;
}

export interface NewSessionResult {
  readonly id: string;
  readonly csrf: string;
  readonly expiresAt: number;
}

export function createSessions(deps: {
  repo: UsersRepo;
  clock: Clock;
  random: Random;
  key: Uint8Array;
  roles: RoleMap;
}) {
  const csrfFor = (id: string) => hmac(deps.key, `csrf:${id}`);
  return {
    csrfFor,

    /** Starts a session for `user`; call inside the login's transaction. */
    create(user: UserRow, clientIp: string, userAgent: string | null): NewSessionResult {
      const id = b64url(deps.random.bytes(32));
      const now = deps.clock.now();
      const expiresAt = now + SESSION_ABSOLUTE_MS;
      deps.repo.insertSession({
        id_hash: sha256Hex(id),
        user_id: user.id,
        created_at: now,
        expires_at: expiresAt,
        client_ip: clientIp,
        user_agent: userAgent?.slice(0, 256) ?? null,
        credential_epoch: user.credential_epoch,
      });
      return { id, csrf: csrfFor(id), expiresAt };
    },

    /** The live session behind `id`, or undefined when it is unknown, expired or stale. */
    authenticate(id: string): Authenticated | undefined {
      if (!ID_PATTERN.test(id)) return undefined;
      const hash = sha256Hex(id);
      const found = deps.repo.getSessionAndUser(hash);
      if (!found || found.session.revoked_at !== null) return undefined;
      const { session, user } = found;
      const now = deps.clock.now();
      if (now >= session.expires_at || now - session.last_seen_at >= SESSION_IDLE_MS) {
        return undefined;
      }
      if (!user || user.disabled || user.credential_epoch !== session.credential_epoch) {
        return undefined;
      }
      if (now - session.last_seen_at >= TOUCH_EVERY_MS) deps.repo.touchSession(hash, now);
      return {
        user,
        session,
        principal: {
          kind: "user",
          id: user.id,
          name: user.username,
          role: user.role,
          permissions: permissionsOf(deps.roles, user.role),
          sessionHash: hash,
        },
      };
    },

    /** Ends one session (logout). */
    revoke(sessionHash: string): boolean {
      return deps.repo.revokeSession(sessionHash, deps.clock.now());
    },

    /** Deletes sessions past their absolute lifetime and revoked ones older than a day. */
    purge(): number {
      const now = deps.clock.now();
      return deps.repo.purgeSessions(now, now - 24 * 60 * 60_000);
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
