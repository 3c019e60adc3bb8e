/**
 * ACME certificates for sites (RFC 8555, through the maintained `acme-client` library): an order
 * for the site's exact host names, each authorised with the HTTP-01 challenge that the data plane
 * answers itself (`mod/data_plane/acme_challenges.ts`), a fresh key and CSR per certificate, and
 * the chain installed into the site at once (SNI). One account per directory URL: its key is
 * created once and stored sealed with the data directory's key. Each site's ACME state (directory,
 * contact, status, last error, expiry) is a settings row `acme.site.<id>`; the scheduler's
 * `certificate-renewal` task renews 30 days before expiry. Success and failure are audited and
 * published (`acme.certificate`); a failure names the host, the challenge and the CA's reason and
 * raises a notification.
 */
import { X509Certificate } from "node:crypto";
import { z } from "zod";
import type { Audit, AuditEvent } from "../core/audit.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Notify } from "../core/notifications.ts";
import { type AccountDeps, openAccount } from "./acme_account.ts";
import { AcmeAgent } from "./acme_agent.ts";
import {
  type AcmeFailure,
  type AcmeSite,
  type ChallengeAnswers,
  orderCertificate,
} from "./acme_order.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export const DIRECTORIES = {
  production: "https://acme-v02.api.letsencrypt.org/directory",
  staging: "https://acme-staging-v02.api.letsencrypt.org/directory",
} as const;

/** Renew when the certificate has less than this left. */
export const RENEW_BEFORE_MS = 30 * 86_400_000;
const SITE_KEY = "acme.site.";

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/;

/** `POST /api/sites/{id}/certificate/acme`; omitted fields keep the site's previous choice. */
export const acmeInputSchema = z.strictObject({
  /** `production` (Let's Encrypt, the default), `staging`, or a directory's https URL. */
  directory: z.union([
    z.enum(["production", "staging"]),
    z.string().max(2000).refine((v) => {
      try {
        return new URL(v).protocol === "https:";
      } catch {
        return false;
      }
    }, { message: 'expected "production", "staging" or the https URL of an ACME directory' }),
  ]).optional(),
  /** The account's contact address (expiry warnings from the CA). */
  email: z.email().max(254).optional(),
  /** PEM trust anchors for a private CA's directory (its HTTPS certificate), besides the system's. */
  directory_ca: z.string().max(65_536).regex(PEM_CERT, "expected PEM certificates").nullable()
    .optional(),
});
export type AcmeInput = z.infer<typeof acmeInputSchema>;

/** A site's ACME state, as `GET /api/sites/{id}/certificate/acme` shows it. */
export interface AcmeSiteState {
  readonly site_id: string;
  readonly directory: string;
  readonly email: string | null;
  readonly directory_ca: string | null;
  /** `pending` while an order runs, `valid` after an issuance, `failed` after a failed one. */
  readonly status: "pending" | "valid" | "failed";
  readonly names: readonly string[];
  readonly issuer: string | null;
  readonly issued_at: string | null;
  readonly not_after: string | null;
  /** When the renewal task will renew it (30 days before expiry). */
  readonly renew_after: string | null;
  readonly last_attempt_at: string;
  readonly last_error: string | null;
  /** Which host failed which challenge, and why (the last failure). */
  readonly failures: readonly AcmeFailure[];
}

export interface AcmeDeps extends AccountDeps {
  readonly audit: Audit;
  readonly logger: Logger;
  /** The site (404 when missing). */
  readonly site: (id: string) => AcmeSite | undefined;
  /** Installs the chain and key into the site (SNI at once). */
  readonly install: (id: string, pair: { cert: string; key: string }, who: AuditContext) => void;
  /** The data plane's pending HTTP-01 answers. */
  readonly challenges: ChallengeAnswers;
  readonly notify?: Notify;
  /** Publishes the realtime `acme.certificate` event. */
  readonly publish?: (payload: Record<string, unknown>) => void;
  /** The first retry delay of a request that got no answer (default 2 s; tests shorten it). */
  readonly retryDelayMs?: number;
}

/** An IP literal or a wildcard cannot be validated with HTTP-01. */
function checkHosts(hosts: readonly string[]): void {
  for (const [i, h] of hosts.entries()) {
    if (h.startsWith("*.") || h.startsWith("[") || /^\d+\.\d+\.\d+\.\d+$/.test(h)) {
      throw new AppError(
        400,
        "ACME_UNSUPPORTED_HOST",
        `Host "${h}" cannot get an ACME certificate with the HTTP-01 challenge (wildcards and IP addresses need another challenge): upload a certificate for this site instead`,
        { details: { field: `hosts[${i}]` } },
      );
    }
  }
}

const RENEWAL: AuditContext = { actor: { type: "system", name: "certificate-renewal" } };

const iso = (ms: number) => new Date(ms).toISOString();

/** One issuance in progress: for which site, asked by whom, against which directory. */
interface Issuance {
  readonly site: AcmeSite;
  readonly who: AuditContext;
  readonly trigger: "request" | "renewal";
  readonly directory: string;
  /** What every state of this attempt records. */
  readonly base: Pick<
    AcmeSiteState,
    "site_id" | "directory" | "email" | "directory_ca" | "names" | "last_attempt_at"
  >;
}

export function createAcme(deps: AcmeDeps): Acme {
  return new Acme(deps);
}

export class Acme {
  readonly #deps: AcmeDeps;
  readonly #inFlight = new Set<string>();
  readonly #agent: AcmeAgent;

  constructor(deps: AcmeDeps) {
    this.#deps = deps;
    this.#agent = new AcmeAgent(deps.retryDelayMs);
  }

  issue(siteId: string, input: AcmeInput, who: AuditContext): Promise<AcmeSiteState> {
    return this.#issue(siteId, input, who, "request");
  }

  /** The site's ACME state, or null when it never had an ACME certificate. */
  state(siteId: string): AcmeSiteState | null {
    if (this.#deps.site(siteId) === undefined) {
      throw new AppError(404, "NOT_FOUND", `No site with id "${siteId}"`);
    }
    return this.#stateOf(siteId) ?? null;
  }

  /**
   * The renewal task: renews every ACME site whose certificate expires within 30 days (or
   * whose last attempt failed); forgets sites that no longer exist. Throws when one failed, so
   * the run is marked failed (each failure has notified already).
   */
  async renewDue(): Promise<{ renewed: string[]; failed: string[]; checked: number }> {
    const { settings, clock } = this.#deps;
    const renewed: string[] = [];
    const failed: string[] = [];
    const rows = settings.list(SITE_KEY).map((r) => r.value as AcmeSiteState);
    for (const s of rows) {
      if (this.#deps.site(s.site_id) === undefined) {
        this.#deps.transaction(() => settings.delete(SITE_KEY + s.site_id));
        continue;
      }
      const due = s.status !== "valid" || s.renew_after === null ||
        Date.parse(s.renew_after) <= clock.now();
      if (!due || this.#inFlight.has(s.site_id)) continue;
      try {
        await this.#issue(s.site_id, {}, RENEWAL, "renewal");
        renewed.push(s.site_id);
      } catch {
        failed.push(s.site_id);
      }
    }
    if (failed.length > 0) {
      throw new Error(`ACME renewal failed for ${failed.length} site(s): ${failed.join(", ")}`);
    }
    return { renewed, failed, checked: rows.length };
  }

  #stateOf(id: string): AcmeSiteState | undefined {
    return this.#deps.settings.get(SITE_KEY + id) as AcmeSiteState | undefined;
  }

  #save(s: AcmeSiteState): void {
    const { settings, clock } = this.#deps;
    this.#deps.transaction(() => settings.set(SITE_KEY + s.site_id, s, clock.now()));
  }

  async #issue(
    siteId: string,
    input: AcmeInput,
    who: AuditContext,
    trigger: "request" | "renewal",
  ): Promise<AcmeSiteState> {
    const site = this.#deps.site(siteId);
    if (site === undefined) throw new AppError(404, "NOT_FOUND", `No site with id "${siteId}"`);
    checkHosts(site.hosts);
    if (this.#inFlight.has(siteId)) {
      throw new AppError(
        409,
        "ACME_IN_PROGRESS",
        `An ACME order for site "${site.name}" is already running`,
      );
    }
    const before = this.#stateOf(siteId);
    const dirInput = input.directory ?? before?.directory ?? "production";
    const directory = dirInput in DIRECTORIES
      ? DIRECTORIES[dirInput as keyof typeof DIRECTORIES]
      : dirInput;
    const email = input.email ?? before?.email ?? null;
    const directoryCa = input.directory_ca === undefined
      ? before?.directory_ca ?? null
      : input.directory_ca;
    const base = {
      site_id: siteId,
      directory,
      email,
      directory_ca: directoryCa,
      names: [...site.hosts],
      last_attempt_at: iso(this.#deps.clock.now()),
    };
    const issuance: Issuance = { site, who, trigger, directory, base };
    this.#inFlight.add(siteId);
    this.#save({
      issuer: null,
      issued_at: null,
      not_after: null,
      renew_after: null,
      ...before,
      ...base,
      status: "pending",
      last_error: null,
      failures: [],
    });
    try {
      const pair = await this.#agent.run(
        directory,
        directoryCa,
        async () =>
          orderCertificate(
            await openAccount(this.#deps, directory, email),
            site,
            this.#deps.challenges,
          ),
      );
      return this.#succeeded(issuance, pair);
    } catch (err) {
      throw this.#failed(issuance, err);
    } finally {
      this.#inFlight.delete(siteId);
    }
  }

  /** Installs the certificate, records the valid state, audits and publishes it. */
  #succeeded(i: Issuance, pair: { cert: string; key: string }): AcmeSiteState {
    const { site, who, trigger, directory, base } = i;
    this.#deps.install(base.site_id, pair, who);
    const cert = new X509Certificate(pair.cert);
    const notAfter = Date.parse(cert.validTo);
    const state: AcmeSiteState = {
      ...base,
      status: "valid",
      issuer: cert.issuer.replaceAll("\n", ", "),
      issued_at: iso(this.#deps.clock.now()),
      not_after: iso(notAfter),
      renew_after: iso(notAfter - RENEW_BEFORE_MS),
      last_error: null,
      failures: [],
    };
    this.#save(state);
    this.#deps.transaction(() =>
      this.#deps.audit.record({
        ...who,
        action: "site.certificate.acme",
        target: base.site_id,
        result: "success",
        detail: { trigger, directory, names: state.names, not_after: state.not_after },
      })
    );
    this.#deps.publish?.({
      site_id: base.site_id,
      site: site.name,
      result: trigger === "renewal" ? "renewed" : "issued",
      names: state.names,
      not_after: state.not_after,
    });
    return state;
  }

  /**
   * Records the failed state, audits, publishes, notifies and logs it; the error to throw (an
   * `AppError` as it is, anything else as `ACME_FAILED`).
   */
  #failed(i: Issuance, err: unknown): AppError {
    const { site, who, trigger, directory, base } = i;
    const message = err instanceof Error ? err.message : String(err);
    const failures = err instanceof AppError
      ? (err.details?.["failures"] as AcmeFailure[] | undefined) ?? []
      : [];
    const prior = this.#stateOf(base.site_id)!;
    this.#save({ ...prior, status: "failed", last_error: message, failures });
    this.#deps.transaction(() =>
      this.#deps.audit.record({
        ...who,
        action: "site.certificate.acme",
        target: base.site_id,
        result: "failure",
        detail: { trigger, directory, names: base.names, error: message },
      })
    );
    this.#deps.publish?.({
      site_id: base.site_id,
      site: site.name,
      result: "failed",
      names: base.names,
      error: message,
    });
    this.#deps.notify?.({
      level: "warning",
      kind: "acme.failed",
      title: `ACME certificate for site "${site.name}" failed`,
      body: message,
      data: { site_id: base.site_id, directory, failures },
      params: { site_id: base.site_id, site: site.name, error: message },
      link: "/console/sites",
    });
    this.#deps.logger.warn("ACME certificate failed", { site: site.name, error: message });
    if (err instanceof AppError) return err;
    return new AppError(502, "ACME_FAILED", `The ACME order failed: ${message}`, { cause: err });
  }
}
