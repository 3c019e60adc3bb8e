/**
 * One-time join tokens. A token is `wafjoin.<node id>.<secret>.<CA fingerprint>`: the node id it
 * enrols, 43 random URL-safe characters (only their SHA-256 is stored), and the pin of the
 * controller's cluster CA, which the node checks before it sends the token anywhere. Shown once,
 * single use, expiring (default one hour).
 */
import type { ClusterRepo, JoinTokenRow } from "../../db/cluster_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { sha256Hex } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import { type Random, randomHex, randomToken } from "../core/random.ts";

export const DEFAULT_TOKEN_TTL_S = 3600;
export const MAX_TOKEN_TTL_S = 7 * 86_400;
const TOKEN = /^wafjoin\.([0-9a-f]{16})\.([A-Za-z0-9_-]{43})\.([0-9a-f]{64})$/;

export interface ParsedJoinToken {
  readonly nodeId: string;
  readonly secret: string;
  readonly caFingerprint: string;
}

/** Splits a join token; undefined when it is not one. */
export function parseJoinToken(token: string): ParsedJoinToken | undefined {
  const m = TOKEN.exec(token);
  return m ? { nodeId: m[1]!, secret: m[2]!, caFingerprint: m[3]! } : undefined;
}

export interface JoinTokenView {
  readonly id: string;
  readonly node_id: string;
  readonly note: string;
  readonly created_by: string;
  readonly created_at: string;
  readonly expires_at: string;
}

function view(row: JoinTokenRow): JoinTokenView {
  return {
    id: row.id,
    node_id: row.id,
    note: row.note,
    created_by: row.created_by,
    created_at: new Date(row.created_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
  };
}

export interface JoinTokenDeps {
  readonly repo: ClusterRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly transaction: <T>(fn: () => T) => T;
  /** The cluster CA's fingerprint (the pin inside every token). */
  readonly caFingerprint: string;
}

type Ctx = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export function createJoinTokens(deps: JoinTokenDeps) {
  return {
    /** Issues a token; the secret is in this answer only. */
    create(
      input: { note?: string; ttl_seconds?: number },
      ctx: Ctx,
    ): JoinTokenView & { token: string; ca_fingerprint: string } {
      const now = deps.clock.now();
      const id = randomHex(deps.random, 8);
      const secret = randomToken(deps.random);
      const row = {
        id,
        secret_hash: sha256Hex(secret),
        note: input.note ?? "",
        created_by: ctx.actor.name ?? ctx.actor.type,
        created_at: now,
        expires_at: now + (input.ttl_seconds ?? DEFAULT_TOKEN_TTL_S) * 1000,
      };
      deps.transaction(() => {
        deps.repo.purgeExpiredTokens(now);
        deps.repo.insertToken(row);
        deps.audit.record({
          ...ctx,
          action: "cluster.join_token.create",
          target: `cluster_node:${id}`,
          result: "success",
          detail: { node_id: id, expires_at: new Date(row.expires_at).toISOString() },
        });
      });
      return {
        ...view({ ...row, used_at: null }),
        token: `wafjoin.${id}.${secret}.${deps.caFingerprint}`,
        ca_fingerprint: deps.caFingerprint,
      };
    },
    /** Tokens still usable (metadata only). */
    list(): JoinTokenView[] {
      return deps.repo.openTokens(deps.clock.now()).map(view);
    },
    /** Withdraws an unused token. */
    remove(id: string, ctx: Ctx): void {
      deps.transaction(() => {
        if (!deps.repo.deleteToken(id)) {
          throw new AppError(404, "NOT_FOUND", `No unused join token "${id}"`);
        }
        deps.audit.record({
          ...ctx,
          action: "cluster.join_token.delete",
          target: `cluster_node:${id}`,
          result: "success",
        });
      });
    },
  };
}

export type JoinTokens = ReturnType<typeof createJoinTokens>;
