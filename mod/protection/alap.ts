/**
 * ALAP decisions as a service: feeds the engine's findings to the tracker, stores its proposals
 * (auto-applied ones included) in `policy_objects`, serves the review queue, turns a
 * false-positive mark into an exception proposal, and expires decisions. Proposals are written
 * off the request path: the data plane only queues them. A temporary block or a ban, proposed
 * or applied, also raises an administrator notification (at most a burst at once, then one a
 * minute, with a count of those left out: `alap_notices.ts`) and a runtime-log line. Some
 * clients are never blocked and some only proposed (`alap_clients.ts`).
 */
import {
  type AlapPolicy,
  type AlapTracker,
  createAlapTracker,
  type DecisionBasis,
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
import type { AuditContext, DocumentKind, PolicyObjects, StoredObject } from "./policy_objects.ts";
import { type ClientRules, clientStanding } from "./alap_clients.ts";
import { BlockNotices } from "./alap_notices.ts";
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
  /** Why, in English; `basis` says it as data (absent on decisions stored before it). */
  readonly reason: string;
  readonly basis?: BasisDoc;
  readonly created: string;
  readonly expires_at: string | null;
  readonly reviewed_by: string | null;
  readonly reviewed_at: string | null;
}

/** A decision's basis as stored: `score` (with `score`, `window_seconds`), `sites`, `findings`. */
export type BasisDoc =
  | { readonly kind: "score"; readonly score: number; readonly window_seconds: number }
  | { readonly kind: "sites"; readonly sites: number }
  | { readonly kind: "findings"; readonly count: number; readonly rule_id: string }
  | { readonly kind: "false_positive" };

function basisDoc(b: DecisionBasis): BasisDoc {
  switch (b.kind) {
    case "score":
      return { kind: "score", score: b.score, window_seconds: b.windowS };
    case "findings":
      return { kind: "findings", count: b.count, rule_id: b.ruleId };
    default:
      return b;
  }
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
    basis: basisDoc(p.basis),
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
  /**
   * Who must never be blocked besides loopback (`alap_clients.ts`): the management listener's
   * addresses and clients, the sites' trusted proxies. Default: nobody else.
   */
  readonly clients?: ClientRules;
  /** A site's name, for the notifications (default: none). */
  readonly siteName?: (siteId: string) => string | undefined;
}

const NO_CLIENT_RULES: ClientRules = { management: () => false, trustedProxy: () => false };

const CLIENT_BLOCKS: ReadonlySet<string> = new Set(["temp_block", "ip_ban"]);

/** The request an observation comes from: its client and trace id (the access-log record). */
export interface ObservedRequest {
  readonly client_ip: string;
  readonly trace_id: string;
}

const DECISIONS: DocumentKind = { kind: KIND.decision, audit: "alap.decision", label: "decision" };

export function createAlap(deps: AlapDeps): Alap {
  return new Alap(deps);
}

export class Alap {
  readonly #deps: AlapDeps;
  /** Keys of proposed and applied decisions: the tracker proposes none of them again. */
  readonly #open = new Set<string>();
  readonly #notices: BlockNotices;
  #policyJson: string;
  #tracker: AlapTracker;
  /** The compiled policy's document the tracker was last checked against. */
  #policyDoc: AlapPolicyDoc | undefined;
  #queue: Proposal[] = [];
  #flushing = false;

  constructor(deps: AlapDeps) {
    this.#deps = deps;
    for (const d of deps.objects.list(KIND.decision) as unknown as DecisionDoc[]) {
      if (d.status === "proposed" || d.status === "applied") this.#open.add(d.key);
    }
    this.#policyJson = JSON.stringify(alapPolicySchema.parse({}));
    this.#tracker = this.#newTracker(alapPolicySchema.parse({}));
    this.#notices = new BlockNotices(deps);
  }

  /** Called by the data plane for a request with findings; never blocks it. */
  observe(
    siteId: string,
    req: ObservedRequest,
    inspection: Inspection,
    policy: AlapPolicyDoc,
  ): void {
    const f = inspection.findings[0];
    if (!f || f.confidence === "low") return;
    const o: Observation = {
      siteId,
      clientIp: req.client_ip,
      client: clientStanding(req.client_ip, this.#deps.clients ?? NO_CLIENT_RULES),
      traceId: req.trace_id,
      ruleId: f.ruleId,
      confidence: f.confidence,
      score: f.score,
      time: this.#deps.clock.now(),
    };
    const proposals = this.#currentTracker(policy).observe(o);
    if (proposals.length === 0) return;
    for (const p of proposals) this.#open.add(p.key);
    this.#queue.push(...proposals);
    if (!this.#flushing) {
      this.#flushing = true;
      setTimeout(() => this.flush(), 0);
    }
  }

  /** Writes queued proposals now (tests and shutdown). */
  flush(): void {
    const { objects, audit } = this.#deps;
    this.#flushing = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return;
    let applied = false;
    try {
      transaction(this.#deps.db, () => {
        for (const p of batch) {
          const item = objects.createInternal(KIND.decision, toDoc(p), p.scope.siteId);
          audit.record({
            ...SYSTEM,
            action: p.status === "applied" ? "alap.decision.apply" : "alap.decision.propose",
            target: item.id,
            result: "success",
            detail: { kind: p.kind, reason: p.reason },
          });
          if (p.status === "applied") applied = true;
          if (CLIENT_BLOCKS.has(p.kind)) this.#notices.tell(p, item.id);
        }
      });
    } catch (err) {
      this.#deps.logger.error("storing ALAP decisions failed", { error: err as Error });
      for (const p of batch) this.#open.delete(p.key);
      return;
    }
    if (applied) this.#deps.rebuild();
  }

  /** The review queue, newest first, optionally by status. */
  list(status?: string): StoredObject[] {
    this.expire();
    const all = this.#deps.objects.list(KIND.decision).reverse();
    return status === undefined ? all : all.filter((d) => d["status"] === status);
  }

  get(id: string): StoredObject {
    return this.#decision(id);
  }

  /** Approve, reject or revoke; audited, then recompiled. */
  review(id: string, action: ReviewAction, ctx: AuditContext): StoredObject {
    this.expire();
    const d = this.#decision(id);
    const next = review(d.status, action);
    if (!next.ok) throw new AppError(409, "CONFLICT", next.message);
    const { id: _id, created_at: _c, updated_at: _u, ...doc } = d;
    const updated: DecisionDoc = {
      ...(doc as unknown as DecisionDoc),
      status: next.status,
      reviewed_by: ctx.actor.name ?? ctx.actor.id ?? ctx.actor.type,
      reviewed_at: new Date(this.#deps.clock.now()).toISOString(),
    };
    const item = this.#deps.objects.replace(
      DECISIONS,
      id,
      updated as unknown as Record<string, unknown>,
      { ctx, verb: action, detail: { status: next.status, previous: d.status } },
    );
    if (next.status === "applied") this.#open.add(d.key);
    else this.#open.delete(d.key);
    return item;
  }

  /** Proposes an exception for the finding behind a logged block. */
  async falsePositive(
    traceId: string,
    pathPrefix: string | undefined,
    ctx: AuditContext,
  ): Promise<StoredObject> {
    const json = await this.#deps.findRecord(traceId);
    if (json === undefined) {
      throw new AppError(404, "NOT_FOUND", `No access-log record "${traceId}"`);
    }
    const rec = JSON.parse(json) as { site_id: string | null; finding: { rule: string } | null };
    if (!rec.site_id || !rec.finding) {
      throw new AppError(409, "CONFLICT", `Request "${traceId}" has no engine finding to except`);
    }
    const p = falsePositiveProposal(
      { siteId: rec.site_id, ruleId: rec.finding.rule, pathPrefix, traceId },
      this.#deps.clock.now(),
      null,
    );
    if (this.#open.has(p.key)) {
      throw new AppError(409, "CONFLICT", "An open exception for this rule already exists");
    }
    const item = this.#deps.objects.create(
      { kind: KIND.decision, audit: "alap.decision.false_positive" },
      toDoc(p) as unknown as Record<string, unknown>,
      ctx,
    );
    this.#open.add(p.key);
    return item;
  }

  /** Marks open decisions past their expiry as expired (recompiles if one was applied). */
  expire(): void {
    const { objects } = this.#deps;
    const now = this.#deps.clock.now();
    let changed = false;
    for (const d of objects.list(KIND.decision) as unknown as Array<StoredObject & DecisionDoc>) {
      const expiresAt = d.expires_at === null ? null : Date.parse(d.expires_at);
      if (!isExpired({ status: d.status, expiresAt }, now)) continue;
      const { id, created_at: _c, updated_at: _u, ...doc } = d;
      objects.putInternal(KIND.decision, id, { ...doc, status: "expired" });
      this.#open.delete(d.key);
      if (d.status === "applied") changed = true;
    }
    if (changed) this.#deps.rebuild();
  }

  #newTracker(doc: AlapPolicyDoc): AlapTracker {
    return createAlapTracker(toPolicy(doc), (k) => this.#open.has(k));
  }

  /**
   * The tracker for the policy in force: the compiled policy's document is compared by identity
   * (it only changes on a rebuild), so observing never reads the store on the request path.
   */
  #currentTracker(doc: AlapPolicyDoc): AlapTracker {
    if (doc !== this.#policyDoc) {
      const json = JSON.stringify(doc);
      if (json !== this.#policyJson) {
        this.#tracker = this.#newTracker(doc);
        this.#policyJson = json;
      }
      this.#policyDoc = doc;
    }
    return this.#tracker;
  }

  #decision(id: string): StoredObject & DecisionDoc {
    return this.#deps.objects.get(KIND.decision, "decision", id) as StoredObject & DecisionDoc;
  }
}
