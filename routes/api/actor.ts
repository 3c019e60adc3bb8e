/** The audit actor and request facts of a management request. */
import type { Actor, AuditEvent } from "../../mod/core/audit.ts";
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
