/**
 * ALAP decisions as a service: feeds the engine's findings to the tracker, stores its proposals
 * (auto-applied ones included) in `policy_objects`, serves the review queue, turns a
 * false-positive mark into an exception proposal, and expires decisions. Proposals are written
 * off the request path: the data plane only queues them. A temporary block or a ban, proposed
 * or applied, also raises an administrator notification (at most {@link NOTIFY_BURST} at once,
 * then one a minute, with a count of those left out) and a runtime-log line.
 */
import {
  type AlapPolicy,
  createAlapTracker,
  type DecisionStatus,
  falsePositiveProposal,
  isExpired,
  type Observation,
  type Proposal,
  review,
  type ReviewAction,
} from "../../engine/alap.ts";
import type { Inspection } from "../../engine/types.ts";
import { type Db, transaction } from "../../db/store.ts";
import type { Audit } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { EventLog } from "../core/event_log.ts";
import type { Logger } from "../core/logger.ts";
import type { Notifications } from "../core/notifications.ts";
import type { AuditContext, PolicyObjects, StoredObject } from "./policy_objects.ts";
import { KIND } from "./protection_compile.ts";
import { type AlapPolicyDoc, alapPolicySchema } from "./protection_schema.ts";

/** A decision as stored (and returned by the API). */
export interface DecisionDoc {
  readonly key: string;
  readonly kind: Proposal["kind"];
  readonly status: DecisionStatus;
  readonly scope: { readonly site_id: string | null };
  readonly target: {
    readonly client_ip?: string;
    readonly rule_id?: string;
    readonly path_prefix?: string;
  };
  readonly evidence: readonly string[];
  readonly reason: string;
  readonly created: string;
  readonly expires_at: string | null;
  readonly reviewed_by: string | null;
  readonly reviewed_at: string | null;
}

const SYSTEM: AuditContext = { actor: { type: "system", name: "alap" } };

function toPolicy(doc: AlapPolicyDoc): AlapPolicy {
  return {
    enabled: doc.enabled,
    autoApply: doc.auto_apply,
    clientWindowMs: doc.client_window_seconds * 1000,
    clientScoreThreshold: doc.client_score_threshold,
    tempBlockMs: doc.temp_block_minutes * 60_000,
    globalSites: doc.global_sites,
    banMs: doc.ban_days * 86_400_000,
    signatureWindowMs: doc.signature_window_minutes * 60_000,
    signatureThreshold: doc.signature_threshold,
    signatureBlockMs: doc.signature_block_days * 86_400_000,
    maxTracked: 50_000,
  };
}

function toDoc(p: Proposal): DecisionDoc {
  return {
    key: p.key,
    kind: p.kind,
    status: p.status,
    scope: { site_id: p.scope.siteId },
    target: {
      ...(p.target.clientIp !== undefined ? { client_ip: p.target.clientIp } : {}),
      ...(p.target.ruleId !== undefined ? { rule_id: p.target.ruleId } : {}),
      ...(p.target.pathPrefix !== undefined ? { path_prefix: p.target.pathPrefix } : {}),
    },
    evidence: p.evidence,
    reason: p.reason,
    created: new Date(p.createdAt).toISOString(),
    expires_at: p.expiresAt === null ? null : new Date(p.expiresAt).toISOString(),
    reviewed_by: null,
    reviewed_at: null,
  };
}

export interface AlapDeps {
  readonly db: Db;
  readonly objects: PolicyObjects;
  readonly audit: Audit;
  readonly notifications: Notifications;
  readonly events?: EventLog;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly rebuild: () => void;
  /** The stored access-log record (JSON) of a trace id. */
  readonly findRecord: (traceId: string) => Promise<string | undefined>;
}

/** Client blocks notified at once before the rate of one a minute applies. */
export const NOTIFY_BURST = 10;
const NOTIFY_EVERY_MS = 60_000;
const CLIENT_BLOCKS: ReadonlySet<string> = new Set(["temp_block", "ip_ban"]);

function minutes(p: Proposal): string {
  if (p.expiresAt === null) return "until revoked";
  return `for ${Math.round((p.expiresAt - p.createdAt) / 60_000)} min`;
}

export function createAlap(deps: AlapDeps) {
  const { objects, clock } = deps;
  const open = new Set<string>();
  for (const d of objects.list(KIND.decision) as unknown as DecisionDoc[]) {
    if (d.status === "proposed" || d.status === "applied") open.add(d.key);
  }
  let policyJson = JSON.stringify(alapPolicySchema.parse({}));
  let tracker = createAlapTracker(toPolicy(alapPolicySchema.parse({})), (k) => open.has(k));
  let queue: Proposal[] = [];
  let flushing = false;
  let notifyTokens = NOTIFY_BURST;
  let notifyAt = clock.now();
  let notSent = 0;

  /** Tells administrators about a client block (inside the transaction that stores it). */
  function notifyBlock(p: Proposal, id: string): void {
    const ip = p.target.clientIp ?? "?";
    const applied = p.status === "applied";
    const what = p.kind === "temp_block" ? "temporary block" : "ban";
    deps.events?.event("alap", applied ? `ALAP applied a ${what}` : `ALAP proposes a ${what}`, {
      decision: id,
      client_ip: ip,
      site_id: p.scope.siteId,
      expires_at: p.expiresAt === null ? null : new Date(p.expiresAt).toISOString(),
      reason: p.reason,
    });
    const now = clock.now();
    notifyTokens = Math.min(NOTIFY_BURST, notifyTokens + (now - notifyAt) / NOTIFY_EVERY_MS);
    notifyAt = now;
    if (notifyTokens < 1) {
      notSent++;
      return;
    }
    notifyTokens--;
    const more = notSent > 0 ? ` ${notSent} more ALAP block(s) were not notified one by one.` : "";
    notSent = 0;
    deps.notifications.notifyAdmins({
      level: "warning",
      kind: `alap.${p.kind}`,
      title: applied
        ? `ALAP blocked ${ip} ${minutes(p)}`
        : `ALAP proposes blocking ${ip} ${minutes(p)}: review it`,
      body: `${p.reason}. Decision ${id}: ${
        applied
          ? "revoke it with POST /api/alap/decisions/" + id + "/revoke"
          : "approve or reject it with POST /api/alap/decisions/" + id + "/approve (or /reject)"
      }.${more}`,
    });
  }

  /**
   * The tracker for the policy in force: the compiled policy's document is compared by identity
   * (it only changes on a rebuild), so observing never reads the store on the request path.
   */
  let policyDoc: AlapPolicyDoc | undefined;
  function currentTracker(doc: AlapPolicyDoc) {
    if (doc !== policyDoc) {
      const json = JSON.stringify(doc);
      if (json !== policyJson) {
        tracker = createAlapTracker(toPolicy(doc), (k) => open.has(k));
        policyJson = json;
      }
      policyDoc = doc;
    }
    return tracker;
  }

  function flush(): void {
    flushing = false;
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    let applied = false;
    try {
      transaction(deps.db, () => {
        for (const p of batch) {
          const item = objects.createInternal(KIND.decision, toDoc(p), p.scope.siteId);
          deps.audit.record({
            ...SYSTEM,
            action: p.status === "applied" ? "alap.decision.apply" : "alap.decision.propose",
            target: item.id,
            result: "success",
            detail: { kind: p.kind, reason: p.reason },
          });
          if (p.status === "applied") applied = true;
          if (CLIENT_BLOCKS.has(p.kind)) notifyBlock(p, item.id);
        }
      });
    } catch (err) {
      deps.logger.error("storing ALAP decisions failed", { error: err as Error });
      for (const p of batch) open.delete(p.key);
      return;
    }
    if (applied) deps.rebuild();
  }

  function decision(id: string): StoredObject & DecisionDoc {
    return objects.get(KIND.decision, "decision", id) as StoredObject & DecisionDoc;
  }

  return {
    /** Called by the data plane for a request with findings; never blocks it. */
    observe(
      siteId: string,
      clientIp: string,
      traceId: string,
      inspection: Inspection,
      policy: AlapPolicyDoc,
    ): void {
      const f = inspection.findings[0];
      if (!f || f.confidence === "low") return;
      const o: Observation = {
        siteId,
        clientIp,
        traceId,
        ruleId: f.ruleId,
        confidence: f.confidence,
        score: f.score,
        time: clock.now(),
      };
      const proposals = currentTracker(policy).observe(o);
      if (proposals.length === 0) return;
      for (const p of proposals) open.add(p.key);
      queue.push(...proposals);
      if (!flushing) {
        flushing = true;
        setTimeout(flush, 0);
      }
    },
    /** Writes queued proposals now (tests and shutdown). */
    flush,

    /** The review queue, newest first, optionally by status. */
    list(status?: string): StoredObject[] {
      this.expire();
      const all = objects.list(KIND.decision).reverse();
      return status === undefined ? all : all.filter((d) => d["status"] === status);
    },
    get(id: string): StoredObject {
      return decision(id);
    },

    /** Approve, reject or revoke; audited, then recompiled. */
    review(id: string, action: ReviewAction, ctx: AuditContext): StoredObject {
      this.expire();
      const d = decision(id);
      const next = review(d.status, action);
      if (!next.ok) throw new AppError(409, "CONFLICT", next.message);
      const { id: _id, created_at: _c, updated_at: _u, ...doc } = d;
      const updated: DecisionDoc = {
        ...(doc as unknown as DecisionDoc),
        status: next.status,
        reviewed_by: ctx.actor.name ?? ctx.actor.id ?? ctx.actor.type,
        reviewed_at: new Date(clock.now()).toISOString(),
      };
      const item = objects.replace(
        KIND.decision,
        "alap.decision",
        "decision",
        id,
        updated as unknown as Record<string, unknown>,
        ctx,
        undefined,
        action,
        { status: next.status, previous: d.status },
      );
      if (next.status === "applied") open.add(d.key);
      else open.delete(d.key);
      return item;
    },

    /** Proposes an exception for the finding behind a logged block. */
    async falsePositive(
      traceId: string,
      pathPrefix: string | undefined,
      ctx: AuditContext,
    ): Promise<StoredObject> {
      const json = await deps.findRecord(traceId);
      if (json === undefined) {
        throw new AppError(404, "NOT_FOUND", `No access-log record "${traceId}"`);
      }
      const rec = JSON.parse(json) as { site_id: string | null; finding: { rule: string } | null };
      if (!rec.site_id || !rec.finding) {
        throw new AppError(409, "CONFLICT", `Request "${traceId}" has no engine finding to except`);
      }
      const p = falsePositiveProposal(
        rec.site_id,
        rec.finding.rule,
        pathPrefix,
        traceId,
        clock.now(),
        null,
      );
      if (open.has(p.key)) {
        throw new AppError(409, "CONFLICT", "An open exception for this rule already exists");
      }
      const item = objects.create(
        KIND.decision,
        "alap.decision.false_positive",
        toDoc(p) as unknown as Record<string, unknown>,
        ctx,
      );
      open.add(p.key);
      return item;
    },

    /** Marks open decisions past their expiry as expired (recompiles if one was applied). */
    expire(): void {
      const now = clock.now();
      let changed = false;
      for (const d of objects.list(KIND.decision) as unknown as Array<StoredObject & DecisionDoc>) {
        const expiresAt = d.expires_at === null ? null : Date.parse(d.expires_at);
        if (!isExpired({ status: d.status, expiresAt }, now)) continue;
        const { id, created_at: _c, updated_at: _u, ...doc } = d;
        objects.putInternal(KIND.decision, id, { ...doc, status: "expired" });
        open.delete(d.key);
        if (d.status === "applied") changed = true;
      }
      if (changed) deps.rebuild();
    },
  };
}

export type Alap = ReturnType<typeof createAlap>;
