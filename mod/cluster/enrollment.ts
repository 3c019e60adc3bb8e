/**
 * `POST /api/cluster/join` on the controller: a one-time token and a CSR in, a client certificate
 * out; and a node's renewal (`POST /api/cluster/nodes/{id}/certificate`) before it expires. The
 * token is checked by id, its secret compared in constant time against the stored hash, and
 * consumed in the same transaction that records the node; the CSR must prove possession of
 * its key and name the node the token enrols. Every refusal is audited with its reason; the
 * caller learns only that the token or the CSR was refused.
 */
import type { ClusterRepo } from "../../db/cluster_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { safeEqual, sha256Hex } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import type { Random } from "../core/random.ts";
import { readCsr, signClientCsr } from "../tls/x509.ts";
import type { ClusterCa } from "./cluster_ca.ts";
import { parseJoinToken } from "./join_tokens.ts";

/** How long a node's client certificate is valid; the node renews it before it expires. */
export const NODE_CERT_DAYS = 365;

export interface JoinRequest {
  readonly token: string;
  readonly csr: string;
  readonly name: string;
}

export interface RenewAnswer {
  readonly certificate: string;
  readonly expires_at: string;
}

export interface JoinAnswer {
  readonly node_id: string;
  readonly certificate: string;
  readonly ca_certificate: string;
}

/** The SAN URI that names a node in its certificate. */
export function nodeUri(id: string): string {
  return `urn:waf:node:${id}`;
}

type Ctx = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface EnrollmentDeps {
  readonly repo: ClusterRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly transaction: <T>(fn: () => T) => T;
  readonly ca: ClusterCa;
  /** Told about each enrolled node (the realtime feed). */
  readonly enrolled?: (nodeId: string, name: string) => void;
}

const TOKEN_REFUSED = "Join token is invalid, expired or already used";

/** One refused join or renewal: what is audited; `error` is what the caller is answered. */
interface Refusal {
  readonly nodeId: string | undefined;
  readonly reason: string;
  readonly error: AppError;
  /** The audited action; `cluster.join` by default. */
  readonly action?: string;
}

/** Joins and certificate renewals of cluster nodes (what `createEnrollment` returns). */
export interface Enrollment {
  /** Enrols a node: consumes its join token and signs its CSR; every refusal is audited. */
  join(input: JoinRequest, ctx: Ctx): Promise<JoinAnswer>;
  /**
   * Signs a new certificate for an authenticated node (its renewal before expiry). It is kept
   * as the node's pending certificate: the registered one stays valid until the node first
   * presents the new one (the registry then swaps them).
   */
  renew(id: string, csrPem: string, ctx: Ctx): Promise<RenewAnswer>;
}

class NodeEnrollment implements Enrollment {
  readonly #deps: EnrollmentDeps;

  constructor(deps: EnrollmentDeps) {
    this.#deps = deps;
  }

  async join(input: JoinRequest, ctx: Ctx): Promise<JoinAnswer> {
    const deps = this.#deps;
    const now = deps.clock.now();
    const parsed = parseJoinToken(input.token);
    if (!parsed) throw this.#badToken(ctx, undefined, "malformed");
    const id = parsed.nodeId;
    const row = deps.repo.token(id);
    // The comparison runs even for an unknown id, so timing does not tell ids apart.
    const match = safeEqual(sha256Hex(parsed.secret), row?.secret_hash ?? "");
    if (!row || !match) throw this.#badToken(ctx, id, "unknown");
    if (row.used_at !== null) throw this.#badToken(ctx, id, "used");
    if (row.expires_at <= now) throw this.#badToken(ctx, id, "expired");
    if (!safeEqual(parsed.caFingerprint, deps.ca.fingerprint)) {
      throw this.#badToken(ctx, id, "other_ca");
    }
    const cert = await this.#nodeCsr(ctx, "cluster.join", id, input.csr);
    const enrolled = deps.transaction(() => {
      // Consumed here, with the node: two racing joins cannot both enrol.
      if (!deps.repo.useToken(id, deps.clock.now()) || deps.repo.node(id)) return false;
      deps.repo.insertNode({
        id,
        name: input.name,
        cert_serial: cert.serial,
        cert_fingerprint: cert.fingerprint,
        cert_not_after: cert.notAfter,
        enrolled_at: now,
      });
      deps.audit.record({
        ...ctx,
        actor: { type: "system", id, name: `node:${input.name}` },
        action: "cluster.join",
        target: `cluster_node:${id}`,
        result: "success",
        detail: { name: input.name, serial: cert.serial, fingerprint: cert.fingerprint },
      });
      return true;
    });
    if (!enrolled) throw this.#badToken(ctx, id, "used");
    deps.enrolled?.(id, input.name);
    return { node_id: id, certificate: cert.cert, ca_certificate: deps.ca.ca.cert };
  }

  async renew(id: string, csrPem: string, ctx: Ctx): Promise<RenewAnswer> {
    const deps = this.#deps;
    const cert = await this.#nodeCsr(ctx, "cluster.node.renew", id, csrPem);
    deps.transaction(() => {
      deps.repo.putRenewal({
        node_id: id,
        cert_serial: cert.serial,
        cert_fingerprint: cert.fingerprint,
        cert_not_after: cert.notAfter,
        issued_at: deps.clock.now(),
      });
      deps.audit.record({
        ...ctx,
        actor: { type: "system", id, name: `node:${id}` },
        action: "cluster.node.renew",
        target: `cluster_node:${id}`,
        result: "success",
        detail: { serial: cert.serial, expires_at: new Date(cert.notAfter).toISOString() },
      });
    });
    return { certificate: cert.cert, expires_at: new Date(cert.notAfter).toISOString() };
  }

  /** Audits a refusal and returns the error to throw. */
  #refuse(ctx: Ctx, r: Refusal): AppError {
    const deps = this.#deps;
    deps.transaction(() =>
      deps.audit.record({
        ...ctx,
        action: r.action ?? "cluster.join",
        target: r.nodeId ? `cluster_node:${r.nodeId}` : "cluster",
        result: "denied",
        detail: { reason: r.reason, code: r.error.code },
      })
    );
    return r.error;
  }

  /** A refused join token: the caller learns only that, the audit record says why. */
  #badToken(ctx: Ctx, nodeId: string | undefined, reason: string): AppError {
    return this.#refuse(ctx, {
      nodeId,
      reason,
      error: new AppError(401, "JOIN_TOKEN_INVALID", TOKEN_REFUSED),
    });
  }

  /** The CSR of node `id`, or a refusal (audited as `action`) saying what is wrong with it. */
  async #nodeCsr(ctx: Ctx, action: string, id: string, pem: string) {
    const csr = await readCsr(pem);
    if (!csr) {
      throw this.#refuse(ctx, {
        nodeId: id,
        reason: "csr_invalid",
        error: new AppError(
          400,
          "CSR_INVALID",
          "The CSR is not a PEM certificate request with a valid signature",
        ),
        action,
      });
    }
    if (csr.commonName !== id) {
      throw this.#refuse(ctx, {
        nodeId: id,
        reason: "csr_identity",
        error: new AppError(
          400,
          "CSR_IDENTITY_MISMATCH",
          `The CSR names "${csr.commonName}", but the request is for node "${id}"`,
        ),
        action,
      });
    }
    return await signClientCsr(
      this.#deps.ca.ca,
      { csr, commonName: id, uri: nodeUri(id), days: NODE_CERT_DAYS },
      this.#deps.clock.now(),
      this.#deps.random,
    );
  }
}

/** The controller's enrolment of nodes (joins and renewals). */
export function createEnrollment(deps: EnrollmentDeps): Enrollment {
  return new NodeEnrollment(deps);
}
