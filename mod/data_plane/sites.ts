/**
 * The sites service: create, change and delete sites in the store, each with its audit record
 * in the same transaction, then rebuild the compiled policy so the data plane enforces the
 * change at once. Private keys are stored sealed (`site_keys.ts`), never returned or audited.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { createSecureContext } from "node:tls";
import type { SitesRepo } from "../../db/sites_repo.ts";
import { DEFAULT_UPSTREAM_KIND } from "../../engine/path_normalize.ts";
import { transaction } from "../../db/store.ts";
import type { Db } from "../../db/store.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError, badRequest } from "../core/errors.ts";
import type { Policy } from "./policy.ts";
import { type Random, randomHex } from "../core/random.ts";
import { type Site, type SiteConfig, siteFromRow } from "./site_schema.ts";

/** What the certificate of a site says, and whether it is valid now. */
export interface CertificateState {
  readonly subject: string;
  readonly issuer: string;
  readonly names: readonly string[];
  readonly not_before: string;
  readonly not_after: string;
  /** `expiring`: valid for less than 30 more days. */
  readonly state: "valid" | "expiring" | "expired" | "not_yet_valid";
}

/** A site as the API shows it: the certificate (and its state) but never the private key. */
export interface SiteView extends Omit<Site, "tls" | "created_at" | "updated_at"> {
  readonly tls: { readonly cert: string; readonly certificate: CertificateState } | null;
  readonly created_at: string;
  readonly updated_at: string;
}

const EXPIRING_MS = 30 * 86_400_000;

export function certificateState(pem: string, now: number): CertificateState {
  const cert = new X509Certificate(pem);
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  const state = now < from
    ? "not_yet_valid"
    : now > to
    ? "expired"
    : to - now < EXPIRING_MS
    ? "expiring"
    : "valid";
  return {
    subject: cert.subject.replaceAll("\n", ", "),
    issuer: cert.issuer.replaceAll("\n", ", "),
    names: (cert.subjectAltName ?? "").split(", ").filter((n) => n !== "")
      .map((n) => n.replace(/^(DNS|IP Address):/, "")),
    not_before: new Date(from).toISOString(),
    not_after: new Date(to).toISOString(),
    state,
  };
}

export function siteView(site: Site, now: number): SiteView {
  return {
    ...site,
    tls: site.tls
      ? { cert: site.tls.cert, certificate: certificateState(site.tls.cert, now) }
      : null,
    created_at: new Date(site.created_at).toISOString(),
    updated_at: new Date(site.updated_at).toISOString(),
  };
}

/** One upstream's passive health as the data plane sees it now. */
export interface UpstreamHealth {
  readonly origin: string;
  readonly healthy: boolean;
  readonly failures: number;
  readonly down_until: string | null;
  readonly last_ok_at: string | null;
}

/** Who asked, for the audit record. */
export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface SitesDeps {
  readonly db: Db;
  readonly repo: SitesRepo;
  readonly audit: Audit;
  readonly policy: Policy;
  readonly clock: Clock;
  readonly random: Random;
  /** The level of a site created or replaced without one (chosen at setup; else balanced). */
  readonly defaultLevel?: () => SiteConfig["level"] | undefined;
}

function notFound(id: string): AppError {
  return new AppError(404, "NOT_FOUND", `No site with id "${id}"`);
}

/** Refuses a host that another site already serves (exact or the same wildcard). */
function checkHosts(repo: SitesRepo, hosts: readonly string[], selfId?: string): void {
  const seen = new Set<string>();
  for (const [i, h] of hosts.entries()) {
    if (seen.has(h)) {
      throw new AppError(
        400,
        "BAD_REQUEST",
        `Invalid field "hosts[${i}]": "${h}" is listed twice`,
        {
          details: { field: `hosts[${i}]` },
        },
      );
    }
    seen.add(h);
  }
  for (const row of repo.list()) {
    if (row.id === selfId) continue;
    const other = siteFromRow(row);
    for (const [i, h] of hosts.entries()) {
      if (other.hosts.includes(h)) {
        throw new AppError(
          409,
          "CONFLICT",
          `Host "${h}" is already served by site "${other.name}"`,
          { details: { field: `hosts[${i}]`, site_id: other.id } },
        );
      }
    }
  }
}

/** Resolves the key (kept from the stored site when omitted) and checks the pair loads. */
function resolveTls(
  input: SiteConfig["tls"],
  stored: Site["tls"] | undefined,
): Site["tls"] {
  if (input === null) return null;
  const key = input.key ?? stored?.key;
  if (key === undefined) {
    throw badRequest('Invalid field "tls.key": expected a PEM private key', "tls.key");
  }
  try {
    createSecureContext({ cert: input.cert, key });
    // Loading a pair does not check that the key belongs to the certificate; this does.
    if (!new X509Certificate(input.cert).checkPrivateKey(createPrivateKey(key))) {
      throw new Error("The private key does not match the certificate");
    }
  } catch (err) {
    throw new AppError(
      400,
      "BAD_REQUEST",
      'Invalid field "tls": the certificate and key do not load as a pair',
      { details: { field: "tls" }, cause: err },
    );
  }
  return { cert: input.cert, key };
}

function stored(config: SiteConfig, tls: Site["tls"]): string {
  const { name: _name, upstream_kind, ...rest } = config;
  // The default is left out, so a node of an older build (whose stored schema is strict) still
  // reads every site that does not name a kind.
  const kind = upstream_kind === DEFAULT_UPSTREAM_KIND ? {} : { upstream_kind };
  return JSON.stringify({ ...rest, ...kind, tls });
}

/** What the audit record says about a site: its settings, never key material. */
function auditDetail(config: SiteConfig): Record<string, unknown> {
  return {
    name: config.name,
    hosts: config.hosts,
    upstreams: config.upstreams,
    mode: config.mode,
    level: config.level,
    upstream_kind: config.upstream_kind,
    tls: config.tls !== null,
  };
}

function load(repo: SitesRepo, id: string): Site {
  const row = repo.get(id);
  if (!row) throw notFound(id);
  return siteFromRow(row);
}

/** Refuses a name another site has. */
function checkName(repo: SitesRepo, name: string, selfId?: string): void {
  const row = repo.getByName(name);
  if (row && row.id !== selfId) {
    throw new AppError(409, "CONFLICT", `A site named "${name}" already exists`, {
      details: { field: "name", site_id: row.id },
    });
  }
}

export function createSites(deps: SitesDeps) {
  return { ...siteReads(deps), ...siteWrites(deps) };
}

/** Sites as the API shows them, and their upstreams' health in the running data plane. */
function siteReads(deps: SitesDeps) {
  const { repo, policy, clock } = deps;
  return {
    /** The level a site gets when its request names none. */
    defaultLevel(): SiteConfig["level"] {
      return deps.defaultLevel?.() ?? "balanced";
    },
    list(): SiteView[] {
      return repo.list().map((r) => siteView(siteFromRow(r), clock.now()));
    },
    get(id: string): SiteView {
      return siteView(load(repo, id), clock.now());
    },
    /** Every site's upstreams with the passive health of the running data plane. */
    health(): { site_id: string; name: string; upstreams: UpstreamHealth[] }[] {
      const now = clock.now();
      const iso = (ms: number) => ms > 0 ? new Date(ms).toISOString() : null;
      return policy.current.sites.map((site) => ({
        site_id: site.id,
        name: site.name,
        upstreams: site.pool.upstreams.map((u) => ({
          origin: u.origin,
          healthy: u.downUntil <= now,
          failures: u.failures,
          down_until: u.downUntil > now ? iso(u.downUntil) : null,
          last_ok_at: iso(u.lastOkAt),
        })),
      }));
    },
  };
}

/** Changes of sites: each in one transaction with its audit record, then the policy rebuilt. */
function siteWrites(deps: SitesDeps) {
  const { db, repo, audit, policy, clock } = deps;
  /** Runs `change` in a transaction, rebuilds the policy and answers site `id` as it is now. */
  const commit = (id: string, change: () => void): SiteView => {
    const site = transaction(db, () => {
      change();
      return load(repo, id);
    });
    policy.rebuild();
    return siteView(site, clock.now());
  };
  return {
    create(config: SiteConfig, who: AuditContext): SiteView {
      const id = randomHex(deps.random, 12);
      return commit(id, () => {
        checkName(repo, config.name);
        checkHosts(repo, config.hosts);
        const tls = resolveTls(config.tls, undefined);
        const now = clock.now();
        repo.insert({
          id,
          name: config.name,
          config: stored(config, tls),
          created_at: now,
          updated_at: now,
        });
        audit.record({
          ...who,
          action: "site.create",
          target: id,
          result: "success",
          detail: auditDetail(config),
        });
      });
    },
    update(id: string, config: SiteConfig, who: AuditContext): SiteView {
      return commit(id, () => {
        const before = load(repo, id);
        checkName(repo, config.name, id);
        checkHosts(repo, config.hosts, id);
        const tls = resolveTls(config.tls, before.tls);
        repo.update({
          id,
          name: config.name,
          config: stored(config, tls),
          updated_at: clock.now(),
        });
        audit.record({
          ...who,
          action: "site.update",
          target: id,
          result: "success",
          detail: auditDetail(config),
        });
      });
    },
    /**
     * Installs a certificate chain and key obtained for the site (ACME): the site's settings are
     * unchanged, the policy is rebuilt so SNI serves the new pair at once. Audited without key
     * material.
     */
    installCertificate(
      id: string,
      pair: { cert: string; key: string },
      source: string,
      who: AuditContext,
    ): SiteView {
      return commit(id, () => {
        const before = load(repo, id);
        const { id: _id, created_at: _c, updated_at: _u, ...rest } = before;
        const tls = resolveTls(pair, undefined);
        const config: SiteConfig = { ...rest, tls };
        repo.update({
          id,
          name: before.name,
          config: stored(config, tls),
          updated_at: clock.now(),
        });
        const state = certificateState(pair.cert, clock.now());
        audit.record({
          ...who,
          action: "site.certificate.install",
          target: id,
          result: "success",
          detail: { source, issuer: state.issuer, names: state.names, not_after: state.not_after },
        });
      });
    },
    remove(id: string, who: AuditContext): void {
      transaction(db, () => {
        const before = load(repo, id);
        repo.remove(id);
        audit.record({
          ...who,
          action: "site.delete",
          target: id,
          result: "success",
          detail: { name: before.name, hosts: before.hosts },
        });
      });
      policy.rebuild();
    },
  };
}

export type Sites = ReturnType<typeof createSites>;
