/**
 * acme-client and its one HTTP agent: the library is loaded at the first order, and each order
 * runs alone with the agent trusting the system's CAs and the directory's own, after checking
 * that the directory answers. A request that gets no answer fails naming the directory, the
 * request and the network's error, never with the library's TypeError.
 */
import https from "node:https";
import { rootCertificates } from "node:tls";
import type * as AcmeClient from "acme-client";
import type { AxiosAdapter } from "axios";
import { AppError } from "../core/errors.ts";

const DIRECTORY_TIMEOUT_MS = 10_000;
/** acme-client's first retry comes this long after a request got no answer, the next ones later. */
const RETRY_DELAY_MS = 2_000;

/** acme-client's retry settings (not in its types). */
interface AcmeRetrySettings {
  retryMaxAttempts: number;
  retryDefaultDelay: number;
}

/**
 * acme-client and its own HTTP client (axios, the version its lock entry resolves to, for the
 * adapter only), loaded at the first ACME order, not at start: they weigh on the main isolate's
 * live heap for a path most installations never take (docs/bench/2026-11-25-live-heap.md).
 */
let libs: Promise<{ acme: typeof AcmeClient; httpAdapter: AxiosAdapter }> | undefined;
export const loadAcme = () =>
  libs ??= Promise.all([import("acme-client"), import("axios")]).then(([acme, axios]) => ({
    acme,
    httpAdapter: axios.default.getAdapter("http"),
  }));
const retrySettings = (acme: typeof AcmeClient) =>
  (acme.axios.defaults as unknown as { acmeSettings: AcmeRetrySettings }).acmeSettings;

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

/** acme-client's HTTP agent is process-wide: orders run one at a time. */
export class AcmeAgent {
  #queue: Promise<unknown> = Promise.resolve();
  readonly #retryDelayMs: number;

  /** `retryDelayMs`: the library's first retry delay (it waits that times the attempt number). */
  constructor(retryDelayMs = RETRY_DELAY_MS) {
    this.#retryDelayMs = retryDelayMs;
  }

  /**
   * Runs `fn` with acme-client's HTTPS agent trusting the system's CAs and `extra`, after
   * checking that the directory answers (naming the directory and the network's error when it
   * does not); a request of the order that later gets no answer fails the same way
   * (`namedNetworkErrors`), never with the library's TypeError.
   */
  run<T>(directory: string, extra: string | null, fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      const { acme, httpAdapter } = await loadAcme();
      const agent = extra === null
        ? new https.Agent()
        : new https.Agent({ ca: [...rootCertificates, extra] });
      acme.axios.defaults.httpsAgent = agent;
      acme.axios.defaults.timeout = 30_000;
      acme.axios.defaults.adapter = namedNetworkErrors(directory, acme, httpAdapter);
      // The library's own retry settings: 3 retries, 2 s apart at first (in seconds).
      const settings = retrySettings(acme);
      settings.retryMaxAttempts = 3;
      settings.retryDefaultDelay = this.#retryDelayMs / 1000;
      await reachable(directory, agent);
      return await fn();
    });
    this.#queue = run.catch(() => {});
    return run;
  }
}
