/**
 * Authenticates a node call by its client certificate. A call is accepted only when the
 * certificate chains to the cluster CA, names a node that is enrolled and not revoked, and its
 * serial and fingerprint are the ones recorded at the join (specification 4.2), or those of the
 * node's renewal, which then replaces them. Otherwise 401 (no or untrusted certificate) or 403
 * (another node's, a revoked one), with an audit record.
 */
import type { ClusterRepo, NodeRow, RenewalRow } from "../../db/cluster_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { safeEqual } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import { certificateFacts, issuedBy } from "../tls/x509.ts";

/** The client certificate of a node call, as the cluster listener saw it. */
export interface NodeCredential {
  readonly authorized: boolean;
  readonly der: Uint8Array;
}

export type NodeAuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/**
 * A refusal that only an operator can end (a revoked node, or a removed one still calling) is
 * audited when it first happens and then at most once per this (1 hour) per certificate, with the
 * number of refusals in between, so a node left running cannot flood the audit log.
 */
export const REPEATED_REFUSAL_AUDIT_MS = 3_600_000;
/** Reasons of a lasting refusal (see `REPEATED_REFUSAL_AUDIT_MS`). */
const LASTING_REFUSALS: ReadonlySet<string> = new Set(["revoked", "unknown_node"]);
/** The throttle remembers at most this many certificates (only the cluster CA's can be here). */
const REFUSAL_MEMORY = 4096;

export interface NodeAuthDeps {
  readonly repo: ClusterRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
  readonly caCert: string;
}

/** One refused node call: what is audited and what the caller is answered. */
interface Refusal {
  readonly nodeId: string;
  readonly reason: string;
  readonly status: 401 | 403;
  readonly code: string;
  readonly message: string;
  /** The presented certificate's fingerprint (keys the audit throttle of lasting refusals). */
  readonly fingerprint?: string;
}

type Certified = { readonly cert_serial: string; readonly cert_fingerprint: string };

/** Checks node calls' certificates and audits the refusals (lasting ones throttled). */
export class NodeAuthenticator {
  readonly #deps: NodeAuthDeps;
  /** Per certificate and reason: when the refusal was last audited and how many came since. */
  readonly #lasting = new Map<string, { at: number; since: number }>();

  constructor(deps: NodeAuthDeps) {
    this.#deps = deps;
  }

  /** Checks a node call's certificate against the registration of `nodeId`; throws if not. */
  async authenticate(
    nodeId: string,
    peer: NodeCredential | undefined,
    ctx: NodeAuditContext,
  ): Promise<void> {
    const deps = this.#deps;
    if (!peer) {
      throw this.#refuse(ctx, {
        nodeId,
        reason: "no_certificate",
        status: 401,
        code: "NODE_CERTIFICATE_REQUIRED",
        message:
          "Node authentication required: present the node's client certificate on the cluster listener",
      });
    }
    const now = deps.clock.now();
    if (!peer.authorized || !await issuedBy(peer.der, deps.caCert, now)) {
      throw this.#refuse(ctx, {
        nodeId,
        reason: "untrusted_certificate",
        status: 401,
        code: "NODE_CERTIFICATE_UNTRUSTED",
        message: "The client certificate is not issued by this cluster's CA",
      });
    }
    const facts = await certificateFacts(peer.der);
    const row = deps.repo.node(nodeId);
    const is = (c: Certified | undefined) =>
      c !== undefined && facts !== undefined && safeEqual(facts.serial, c.cert_serial) &&
      safeEqual(facts.fingerprint, c.cert_fingerprint);
    // The registered certificate, or the renewed one the node presents for the first time.
    const renewal = row && !is(row) ? deps.repo.renewal(nodeId) : undefined;
    const renewed = is(renewal);
    if (!row || (!is(row) && !renewed)) {
      throw this.#refuse(ctx, {
        nodeId,
        reason: row ? "identity_mismatch" : "unknown_node",
        status: 403,
        code: "NODE_IDENTITY_MISMATCH",
        message: `The client certificate is not the one registered for node "${nodeId}"`,
        fingerprint: facts?.fingerprint,
      });
    }
    if (row.revoked_at !== null) {
      throw this.#refuse(ctx, {
        nodeId,
        reason: "revoked",
        status: 403,
        code: "NODE_REVOKED",
        message: `Node "${nodeId}" has been revoked`,
        fingerprint: facts?.fingerprint,
      });
    }
    if (renewed) this.#promote(nodeId, row, renewal!, ctx);
  }

  /** The node's first call with its renewed certificate: it becomes the registered one. */
  #promote(nodeId: string, row: NodeRow, renewal: RenewalRow, ctx: NodeAuditContext): void {
    const deps = this.#deps;
    deps.transaction(() => {
      deps.repo.promoteRenewal(renewal);
      deps.audit.record({
        ...ctx,
        actor: { type: "system", id: nodeId, name: `node:${row.name}` },
        action: "cluster.node.certificate",
        target: `cluster_node:${nodeId}`,
        result: "success",
        detail: { serial: renewal.cert_serial, previous_serial: row.cert_serial },
      });
    });
  }

  /** Audits `r` (a lasting refusal at most once per period) and returns the error to throw. */
  #refuse(ctx: NodeAuditContext, r: Refusal): AppError {
    const extra = LASTING_REFUSALS.has(r.reason)
      ? this.#auditDue(`${r.reason}:${r.fingerprint ?? r.nodeId}`)
      : {};
    if (extra) {
      this.#deps.transaction(() =>
        this.#deps.audit.record({
          ...ctx,
          action: "cluster.node.authenticate",
          target: `cluster_node:${r.nodeId}`,
          result: "denied",
          detail: { reason: r.reason, ...extra },
        })
      );
    }
    return new AppError(r.status, r.code, r.message);
  }

  /** The detail to add when this lasting refusal is audited now; undefined: counted for later. */
  #auditDue(key: string): { repeated?: number } | undefined {
    const lasting = this.#lasting;
    const now = this.#deps.clock.now();
    const seen = lasting.get(key);
    if (seen && now - seen.at < REPEATED_REFUSAL_AUDIT_MS) {
      seen.since++;
      return undefined;
    }
    lasting.delete(key);
    if (lasting.size >= REFUSAL_MEMORY) {
      for (const [k, v] of lasting) if (now - v.at >= REPEATED_REFUSAL_AUDIT_MS) lasting.delete(k);
      // Still full: forget the oldest (its next refusal is audited again).
      if (lasting.size >= REFUSAL_MEMORY) lasting.delete(lasting.keys().next().value!);
    }
    lasting.set(key, { at: now, since: 0 });
    return seen && seen.since > 0 ? { repeated: seen.since } : {};
  }
}
