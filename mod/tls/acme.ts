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
import https from "node:https";
import { rootCertificates } from "node:tls";
import type * as AcmeClient from "acme-client";
import type { AxiosAdapter } from "axios";
import { z } from "zod";
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Notify } from "../core/notifications.ts";
import type { SecretBox } from "../core/secret_box.ts";
import { X509Certificate } from "node:crypto";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export const DIRECTORIES = {
  production: "https://acme-v02.api.letsencrypt.org/directory",
  staging: "https://acme-staging-v02.api.letsencrypt.org/directory",
} as const;

/** Renew when the certificate has less than this left. */
export const RENEW_BEFORE_MS = 30 * 86_400_000;
const SITE_KEY = "acme.site.";
const DIRECTORY_TIMEOUT_MS = 10_000;

/** GETs the directory once; throws naming it and the exact network or HTTP error. */
function reachable(directory: string, agent: https.Agent): Promise<void> {
  const refuse = (why: string) =>
    new AppError(
      502,
      "ACME_DIRECTORY_UNREACHABLE",
      `The ACME directory ${directory} could not be reached: ${why}`,
    );
  return new Promise((resolve, reject) => {
    const req = https.get(directory, { agent, timeout: DIRECTORY_TIMEOUT_MS }, (res) => {
      res.resume();
      if (res.statusCode === 200) resolve();
      else reject(refuse(`HTTP ${res.statusCode}`));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${DIRECTORY_TIMEOUT_MS} ms`)));
    req.on("error", (err) => reject(refuse(err.message)));
  });
}
const ACCOUNT_KEY = "acme.account.";

/** acme-client's retry settings (not in its types). */
interface AcmeRetrySettings {
  retryMaxAttempts: number;
  retryDefaultDelay: number;
}
/**
 * acme-client and its own HTTP client (axios, the version its lock entry resolves to, for the
 * adapter only), loaded at the first ACME order, not at start: with node-forge and axios they are
 * ~3 MB of the main isolate's live heap (module source and code) that every mark-compact marks,
 * for a path most installations never take (docs/data-plane.md, "What the 42 MB of live heap
 * are").
 */
let libs: Promise<{ acme: typeof AcmeClient; httpAdapter: AxiosAdapter }> | undefined;
const load = () =>
  libs ??= Promise.all([import("acme-client"), import("axios")]).then(([acme, axios]) => ({
    acme,
    httpAdapter: axios.default.getAdapter("http"),
  }));
const retrySettings = (acme: typeof AcmeClient) =>
  (acme.axios.defaults as unknown as { acmeSettings: AcmeRetrySettings }).acmeSettings;

/**
 * acme-client's HTTP adapter: axios's own, except that a request that got no answer and will not
 * be retried (its last attempt, or a timeout, which the library never retries) fails with an
 * `AppError` naming the directory, the request and the network's error. acme-client 5.4.0 would
 * otherwise read the missing answer on that path and throw a TypeError ("Cannot read properties
 * of undefined"). The error has no axios `config`, so the library's retry interceptor passes it
 * on as it is.
 */
function namedNetworkErrors(
  directory: string,
  acme: typeof AcmeClient,
  httpAdapter: AxiosAdapter,
): AxiosAdapter {
  return async (config) => {
    try {
      return await httpAdapter(config);
    } catch (err) {
      const e = err as { response?: unknown; code?: string; message?: string };
      if (e.response !== undefined) throw err;
      const attempt = (config as { retryAttempt?: number }).retryAttempt ?? 0;
      if (e.code !== "ECONNABORTED" && attempt < retrySettings(acme).retryMaxAttempts) throw err;
      const request = `${(config.method ?? "get").toUpperCase()} ${config.url ?? ""}`;
      throw new AppError(
        502,
        "ACME_DIRECTORY_UNREACHABLE",
        `The ACME server of ${directory} could not be reached at ${request}: ${
          e.message ?? e.code ?? String(err)
        }`,
      );
    }
  };
}

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

export interface AcmeFailure {
  readonly host: string;
  readonly challenge: string;
  readonly error: string;
}

interface Account {
  readonly key_sealed: string;
  readonly url: string | null;
  readonly email: string | null;
}

export interface AcmeSite {
  readonly id: string;
  readonly name: string;
  readonly hosts: readonly string[];
}

export interface AcmeDeps {
  readonly settings: SettingsRepo;
  readonly box: SecretBox;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly transaction: <T>(fn: () => T) => T;
  /** The site (404 when missing). */
  readonly site: (id: string) => AcmeSite | undefined;
  /** Installs the chain and key into the site (SNI at once). */
  readonly install: (id: string, pair: { cert: string; key: string }, who: AuditContext) => void;
  /** The data plane's pending HTTP-01 answers. */
  readonly challenges: {
    add(host: string, token: string, keyAuthorization: string): void;
    remove(host: string, token: string): void;
  };
  readonly notify?: Notify;
  /** Publishes the realtime `acme.certificate` event. */
  readonly publish?: (payload: Record<string, unknown>) => void;
  /** Polling of the CA while it validates (tests shorten it). */
  readonly backoff?: { attempts: number; minMs: number; maxMs: number };
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

export function createAcme(deps: AcmeDeps) {
  const { settings, box, clock } = deps;
  const inFlight = new Set<string>();
  /** acme-client's HTTP agent is process-wide: orders run one at a time. */
  let queue: Promise<unknown> = Promise.resolve();
  const iso = (ms: number) => new Date(ms).toISOString();
  const stateOf = (id: string) => settings.get(SITE_KEY + id) as AcmeSiteState | undefined;
  const save = (s: AcmeSiteState) =>
    deps.transaction(() => settings.set(SITE_KEY + s.site_id, s, clock.now()));

  async function account(directory: string, email: string | null) {
    const stored = settings.get(ACCOUNT_KEY + directory) as Account | undefined;
    const { acme } = await load();
    let key: string;
    if (stored === undefined) {
      key = (await acme.crypto.createPrivateEcdsaKey("P-256")).toString();
      const row: Account = {
        key_sealed: await box.seal(new TextEncoder().encode(key), ACCOUNT_KEY + directory),
        url: null,
        email,
      };
      deps.transaction(() => settings.set(ACCOUNT_KEY + directory, row, clock.now()));
    } else {
      try {
        key = new TextDecoder().decode(await box.open(stored.key_sealed, ACCOUNT_KEY + directory));
      } catch (err) {
        throw new AppError(
          500,
          "ACME_ACCOUNT_KEY_UNREADABLE",
          "The stored ACME account key cannot be opened (the data directory's key changed)",
          { cause: err },
        );
      }
    }
    const b = deps.backoff ?? { attempts: 10, minMs: 1000, maxMs: 10_000 };
    const client = new acme.Client({
      directoryUrl: directory,
      accountKey: key,
      accountUrl: stored?.url ?? undefined,
      backoffAttempts: b.attempts,
      backoffMin: b.minMs,
      backoffMax: b.maxMs,
    });
    const contact = email ? { contact: [`mailto:${email}`] } : {};
    // No address given: the account keeps its contact.
    if (stored?.url && (email === null || stored.email === email)) return client;
    if (stored?.url) {
      await client.updateAccount(contact);
    } else {
      // Creating an account for a key the CA knows answers the existing one (RFC 8555 7.3.1).
      await client.createAccount({ termsOfServiceAgreed: true, ...contact });
    }
    const url = client.getAccountUrl();
    const row = settings.get(ACCOUNT_KEY + directory) as Account;
    deps.transaction(() =>
      settings.set(ACCOUNT_KEY + directory, { ...row, url, email }, clock.now())
    );
    return client;
  }

  /** One order: authorise every host over HTTP-01, then finalise; throws naming what failed. */
  async function order(
    site: AcmeSite,
    client: AcmeClient.Client,
  ): Promise<{ cert: string; key: string }> {
    const hosts = [...site.hosts];
    const o = await client.createOrder({
      identifiers: hosts.map((value) => ({ type: "dns", value })),
    });
    const authorizations = await client.getAuthorizations(o);
    const failures: AcmeFailure[] = [];
    const served: [string, string][] = [];
    try {
      await Promise.all(authorizations.map(async (authz) => {
        const host = authz.identifier.value;
        if (authz.status === "valid") return;
        const challenge = authz.challenges.find((c) => c.type === "http-01");
        if (challenge === undefined) {
          failures.push({
            host,
            challenge: "http-01",
            error: "the CA offers no http-01 challenge",
          });
          return;
        }
        deps.challenges.add(
          host,
          challenge.token,
          await client.getChallengeKeyAuthorization(challenge),
        );
        served.push([host, challenge.token]);
        try {
          await client.completeChallenge(challenge);
          await client.waitForValidStatus(challenge);
        } catch (err) {
          failures.push({ host, challenge: "http-01", error: (err as Error).message });
        }
      }));
    } finally {
      for (const [host, token] of served) deps.challenges.remove(host, token);
    }
    if (failures.length > 0) {
      throw new AppError(
        502,
        "ACME_VALIDATION_FAILED",
        `ACME validation failed: ${
          failures.map((f) => `host "${f.host}" failed the ${f.challenge} challenge: ${f.error}`)
            .join("; ")
        }`,
        { details: { failures } },
      );
    }
    const { acme } = await load();
    const [key, csr] = await acme.crypto.createCsr(
      { commonName: hosts[0], altNames: hosts },
      await acme.crypto.createPrivateEcdsaKey("P-256"),
    );
    const finalized = await client.finalizeOrder(o, csr);
    const cert = await client.getCertificate(finalized);
    return { cert, key: key.toString() };
  }

  /**
   * Runs `fn` with acme-client's HTTPS agent trusting the system's CAs and `extra`, after
   * checking that the directory answers (naming the directory and the network's error when it
   * does not); a request of the order that later gets no answer fails the same way
   * (`namedNetworkErrors`), never with the library's TypeError.
   */
  function withTrust<T>(directory: string, extra: string | null, fn: () => Promise<T>): Promise<T> {
    const run = queue.then(async () => {
      const { acme, httpAdapter } = await load();
      const agent = extra === null
        ? new https.Agent()
        : new https.Agent({ ca: [...rootCertificates, extra] });
      acme.axios.defaults.httpsAgent = agent;
      acme.axios.defaults.timeout = 30_000;
      acme.axios.defaults.adapter = namedNetworkErrors(directory, acme, httpAdapter);
      // The library's own retry settings: 3 retries, 2 s apart at first.
      const settings = retrySettings(acme);
      settings.retryMaxAttempts = 3;
      settings.retryDefaultDelay = 2;
      await reachable(directory, agent);
      return await fn();
    });
    queue = run.catch(() => {});
    return run;
  }

  async function issue(
    siteId: string,
    input: AcmeInput,
    who: AuditContext,
    trigger: "request" | "renewal",
  ): Promise<AcmeSiteState> {
    const site = deps.site(siteId);
    if (site === undefined) throw new AppError(404, "NOT_FOUND", `No site with id "${siteId}"`);
    checkHosts(site.hosts);
    if (inFlight.has(siteId)) {
      throw new AppError(
        409,
        "ACME_IN_PROGRESS",
        `An ACME order for site "${site.name}" is already running`,
      );
    }
    const before = stateOf(siteId);
    const dirInput = input.directory ?? before?.directory ?? "production";
    const directory = dirInput in DIRECTORIES
      ? DIRECTORIES[dirInput as keyof typeof DIRECTORIES]
      : dirInput;
    const email = input.email ?? before?.email ?? null;
    const directoryCa = input.directory_ca === undefined
      ? before?.directory_ca ?? null
      : input.directory_ca;
    const started = clock.now();
    const base = {
      site_id: siteId,
      directory,
      email,
      directory_ca: directoryCa,
      names: [...site.hosts],
      last_attempt_at: iso(started),
    };
    inFlight.add(siteId);
    save({
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
      const pair = await withTrust(
        directory,
        directoryCa,
        async () => order(site, await account(directory, email)),
      );
      deps.install(siteId, pair, who);
      const cert = new X509Certificate(pair.cert);
      const notAfter = Date.parse(cert.validTo);
      const state: AcmeSiteState = {
        ...base,
        status: "valid",
        issuer: cert.issuer.replaceAll("\n", ", "),
        issued_at: iso(clock.now()),
        not_after: iso(notAfter),
        renew_after: iso(notAfter - RENEW_BEFORE_MS),
        last_error: null,
        failures: [],
      };
      save(state);
      deps.transaction(() =>
        deps.audit.record({
          ...who,
          action: "site.certificate.acme",
          target: siteId,
          result: "success",
          detail: { trigger, directory, names: state.names, not_after: state.not_after },
        })
      );
      deps.publish?.({
        site_id: siteId,
        site: site.name,
        result: trigger === "renewal" ? "renewed" : "issued",
        names: state.names,
        not_after: state.not_after,
      });
      return state;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const failures = err instanceof AppError
        ? (err.details?.["failures"] as AcmeFailure[] | undefined) ?? []
        : [];
      const prior = stateOf(siteId)!;
      save({ ...prior, status: "failed", last_error: message, failures });
      deps.transaction(() =>
        deps.audit.record({
          ...who,
          action: "site.certificate.acme",
          target: siteId,
          result: "failure",
          detail: { trigger, directory, names: base.names, error: message },
        })
      );
      deps.publish?.({
        site_id: siteId,
        site: site.name,
        result: "failed",
        names: base.names,
        error: message,
      });
      deps.notify?.({
        level: "warning",
        kind: "acme.failed",
        title: `ACME certificate for site "${site.name}" failed`,
        body: message,
        data: { site_id: siteId, directory, failures },
      });
      deps.logger.warn("ACME certificate failed", { site: site.name, error: message });
      if (err instanceof AppError) throw err;
      throw new AppError(502, "ACME_FAILED", `The ACME order failed: ${message}`, { cause: err });
    } finally {
      inFlight.delete(siteId);
    }
  }

  return {
    issue: (siteId: string, input: AcmeInput, who: AuditContext) =>
      issue(siteId, input, who, "request"),
    /** The site's ACME state, or null when it never had an ACME certificate. */
    state(siteId: string): AcmeSiteState | null {
      if (deps.site(siteId) === undefined) {
        throw new AppError(404, "NOT_FOUND", `No site with id "${siteId}"`);
      }
      return stateOf(siteId) ?? null;
    },
    /**
     * The renewal task: renews every ACME site whose certificate expires within 30 days (or
     * whose last attempt failed); forgets sites that no longer exist. Throws when one failed, so
     * the run is marked failed (each failure has notified already).
     */
    async renewDue(): Promise<{ renewed: string[]; failed: string[]; checked: number }> {
      const renewed: string[] = [];
      const failed: string[] = [];
      const rows = settings.list(SITE_KEY).map((r) => r.value as AcmeSiteState);
      for (const s of rows) {
        if (deps.site(s.site_id) === undefined) {
          deps.transaction(() => settings.delete(SITE_KEY + s.site_id));
          continue;
        }
        const due = s.status !== "valid" || s.renew_after === null ||
          Date.parse(s.renew_after) <= clock.now();
        if (!due || inFlight.has(s.site_id)) continue;
        try {
          await issue(s.site_id, {}, RENEWAL, "renewal");
          renewed.push(s.site_id);
        } catch {
          failed.push(s.site_id);
        }
      }
      if (failed.length > 0) {
        throw new Error(`ACME renewal failed for ${failed.length} site(s): ${failed.join(", ")}`);
      }
      return { renewed, failed, checked: rows.length };
    },
  };
}

export type Acme = ReturnType<typeof createAcme>;
