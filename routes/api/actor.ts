/** The audit actor, the acting caller and the request facts of a management request. */
import type { Actor, AuditEvent } from "../../mod/core/audit.ts";
import type { Caller } from "../../mod/identity/account_authority.ts";
import type { Ctx } from "./env.ts";

export function actorOf(c: Ctx): Actor {
  const p = c.get("principal");
  if (!p) return { type: "anonymous" };
  return p.kind === "token"
    ? { type: "token", id: p.id, name: `token:${p.id}` }
    : { type: "user", id: p.id, name: p.name };
}

/** Actor, client address and trace id for an audit event raised by this request. */
export function auditContext(c: Ctx): Pick<AuditEvent, "actor" | "clientIp" | "traceId"> {
  return { actor: actorOf(c), clientIp: c.get("clientIp"), traceId: c.get("traceId") };
}

/**
 * Who acts, with the permissions the guard resolved (a token's are its effective ones): what
 * account changes are judged against. Only on guarded routes, after the guard.
 */
export function callerOf(c: Ctx): Caller {
  const p = c.get("principal")!;
  return p.kind === "user"
    ? { userId: p.id, permissions: p.permissions }
    : { permissions: p.permissions };
}
