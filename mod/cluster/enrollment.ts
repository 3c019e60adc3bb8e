/**
 * `POST /api/cluster/join` on the controller: a one-time token and a CSR in, a client certificate
 * out; and a node's renewal (`POST /api/cluster/nodes/{id}/certificate`) before it expires. The token is checked by id, its secret compared in constant time against the stored hash,
 * and consumed in the same transaction that records the node; the CSR must prove possession of
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

export function createEnrollment(deps: EnrollmentDeps) {
  const refuse = (
    ctx: Ctx,
    nodeId: string | undefined,
    reason: string,
    err: AppError,
    action = "cluster.join",
  ) => {
    deps.transaction(() =>
      deps.audit.record({
        ...ctx,
        action,
        target: nodeId ? `cluster_node:${nodeId}` : "cluster",
        result: "denied",
        detail: { reason, code: err.code },
      })
    );
    return err;
  };
  const badToken = () => new AppError(401, "JOIN_TOKEN_INVALID", TOKEN_REFUSED);

  /** The CSR of node `id`, or a refusal (audited as `action`) saying what is wrong with it. */
  const nodeCsr = async (ctx: Ctx, action: string, id: string, pem: string) => {
    const csr = await readCsr(pem);
    if (!csr) {
      throw refuse(
        ctx,
        id,
        "csr_invalid",
        new AppError(
          400,
          "CSR_INVALID",
          "The CSR is not a PEM certificate request with a valid signature",
        ),
        action,
      );
    }
    if (csr.commonName !== id) {
      throw refuse(
        ctx,
        id,
        "csr_identity",
        new AppError(
          400,
          "CSR_IDENTITY_MISMATCH",
          `The CSR names "${csr.commonName}", but the request is for node "${id}"`,
        ),
        action,
      );
    }
    return await signClientCsr(
      deps.ca.ca,
      { csr, commonName: id, uri: nodeUri(id), days: NODE_CERT_DAYS },
      deps.clock.now(),
      deps.random,
    );
  };

  return {
    async join(input: JoinRequest, ctx: Ctx): Promise<JoinAnswer> {
      const now = deps.clock.now();
      const parsed = parseJoinToken(input.token);
      if (!parsed) throw refuse(ctx, undefined, "malformed", badToken());
      const id = parsed.nodeId;
      const row = deps.repo.token(id);
      // The comparison runs even for an unknown id, so timing does not tell ids apart.
      const match = safeEqual(sha256Hex(parsed.secret), row?.secret_hash ?? "");
      if (!row || !match) throw refuse(ctx, id, "unknown", badToken());
      if (row.used_at !== null) throw refuse(ctx, id, "used", badToken());
      if (row.expires_at <= now) throw refuse(ctx, id, "expired", badToken());
      if (!safeEqual(parsed.caFingerprint, deps.ca.fingerprint)) {
        throw refuse(ctx, id, "other_ca", badToken());
      }
      const cert = await nodeCsr(ctx, "cluster.join", id, input.csr);
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
      if (!enrolled) throw refuse(ctx, id, "used", badToken());
      deps.enrolled?.(id, input.name);
      return { node_id: id, certificate: cert.cert, ca_certificate: deps.ca.ca.cert };
    },

    /**
     * Signs a new certificate for an authenticated node (its renewal before expiry). It is kept
     * as the node's pending certificate: the registered one stays valid until the node first
     * presents the new one (the registry then swaps them).
     */
    async renew(id: string, csrPem: string, ctx: Ctx): Promise<RenewAnswer> {
      const cert = await nodeCsr(ctx, "cluster.node.renew", id, csrPem);
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
    },
  };
}

export type Enrollment = ReturnType<typeof createEnrollment>;
