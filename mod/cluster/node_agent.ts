/**
 * The node's side of the cluster channel: every `cluster.heartbeat_interval` it reports to the
 * controller over mTLS (version, uptime, policy version, clock, data-plane counters, health) and
 * reads the controller's policy version from the answer; a policy follower (when given) fetches
 * a newer policy, told of it at once by the policy watch (`node_watch.ts`), or by the heartbeat
 * when the watch is not available. A node that cannot reach its controller keeps serving with
 * what it has and says so in its health; a refused node (revoked) takes no policy. Within
 * `RENEW_BEFORE_MS` of its certificate's expiry it renews it over the same channel (a new key,
 * made here).
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { VERSION } from "../core/version.ts";
import { ACTIONS, type SiteCounters } from "../data_plane/site_counters.ts";
import { type ControllerAnswer, ControllerClient } from "./controller_client.ts";
import type { NodeIdentity } from "./node_identity.ts";
import { NodeWatch, type WatchState } from "./node_watch.ts";
import { certificateExpiry, createCsr } from "../tls/x509.ts";

/** A node renews its certificate when it expires within this (30 days). */
export const RENEW_BEFORE_MS = 30 * 86_400_000;
/** After a renewal, failed or not, the next one waits this long (10 minutes). */
const RENEW_RETRY_MS = 600_000;
/**
 * The longest wait between heartbeats of a refused node (10 minutes). A refusal (401/403: revoked,
 * removed, an expired or replaced certificate) does not heal by retrying, so the wait doubles
 * from the heartbeat interval up to this, and the first accepted heartbeat resets it.
 */
export const REFUSED_MAX_DELAY_MS = 600_000;

/** `connected` after a heartbeat was accepted; `unreachable` or `refused` after one was not. */
export type ControllerLink = "connecting" | "connected" | "unreachable" | "refused";

/** What the node does with the controller's policy version (policy distribution). */
export interface PolicyFollower {
  /** The version of the policy this node enforces (null before the first one). */
  version(): string | null;
  /** Called with the controller's version after each accepted heartbeat. */
  follow(version: string, client: ControllerClient): Promise<void>;
}

export interface NodeAgentDeps {
  readonly identity: NodeIdentity;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly intervalMs: number;
  /** The data plane's per-site counters (summed into the report). */
  readonly counters: () => Iterable<SiteCounters>;
  /** Extra health facts for the report (readiness). */
  readonly health: () => Readonly<Record<string, unknown>>;
  readonly policy?: PolicyFollower;
  /** Stores a renewed key and certificate; without it the agent does not renew. */
  readonly saveRenewal?: (
    renewed: { readonly key: string; readonly cert: string },
  ) => Promise<void>;
}

export interface NodeAgentStatus {
  readonly link: ControllerLink;
  readonly last_heartbeat_at: string | null;
  readonly last_error: string | null;
  readonly controller_policy_version: string | null;
  /** When the last heartbeat was sent, accepted or not. */
  readonly last_attempt_at: string | null;
  /** When the next one is due (later than the interval while the controller refuses this node). */
  readonly next_attempt_at: string | null;
  /** How the node hears of a new policy between heartbeats (`node_watch.ts`). */
  readonly policy_watch: WatchState | "off";
}

/** Requests by action over every site since start. */
export function counterTotals(sites: Iterable<SiteCounters>): Record<string, number> {
  const out: Record<string, number> = { requests: 0 };
  for (const a of ACTIONS) out[a] = 0;
  for (const s of sites) {
    const per = s.requests.length / ACTIONS.length;
    for (let i = 0; i < s.requests.length; i++) {
      const n = s.requests[i]!;
      out.requests! += n;
      out[ACTIONS[Math.floor(i / per)]!]! += n;
    }
  }
  return out;
}

export class NodeAgent {
  readonly #deps: NodeAgentDeps;
  #identity: NodeIdentity;
  #client: ControllerClient;
  #certExpiry: number;
  #renewAfter = 0;
  #renewing: Promise<boolean> | undefined;
  readonly #started: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;
  #link: ControllerLink = "connecting";
  #lastOk: number | null = null;
  #lastError: string | null = null;
  #controllerVersion: string | null = null;
  #lastAttempt: number | null = null;
  #nextAttempt: number | null = null;
  /** Refused heartbeats in a row (the back-off's exponent). */
  #refusals = 0;
  readonly #watch: NodeWatch | undefined;
  /** The policy follows in progress, one after the other (heartbeat and watch may both ask). */
  #following: Promise<boolean> = Promise.resolve(true);

  constructor(deps: NodeAgentDeps) {
    this.#deps = deps;
    this.#started = deps.clock.now();
    this.#identity = deps.identity;
    this.#client = this.#connect(deps.identity);
    this.#certExpiry = certificateExpiry(deps.identity.cert);
    this.#watch = deps.policy
      ? new NodeWatch({
        nodeId: deps.identity.nodeId,
        logger: deps.logger,
        intervalMs: deps.intervalMs,
        client: () => this.#client,
        version: () => deps.policy!.version(),
        follow: (version) => this.follow(version),
      })
      : undefined;
  }

  #connect(id: NodeIdentity): ControllerClient {
    return new ControllerClient(id.controllerUrl, id.caCert, { cert: id.cert, key: id.key });
  }

  /** When the certificate this node presents expires (ms since the epoch). */
  certificateExpiry(): number {
    return this.#certExpiry;
  }

  /**
   * Renews the node's certificate: a new key and CSR made here, signed by the controller over
   * the current mTLS channel, saved, then presented from the next call on. False when it failed
   * (the current certificate stays in use; the next try waits `RENEW_RETRY_MS`). Calls during a
   * renewal share it.
   */
  renew(): Promise<boolean> {
    this.#renewing ??= this.#renew().finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  async #renew(): Promise<boolean> {
    const d = this.#deps;
    // At most one renewal per RENEW_RETRY_MS, also after a success (a node whose clock runs far
    // ahead would otherwise find every new certificate within the window at once).
    this.#renewAfter = d.clock.now() + RENEW_RETRY_MS;
    const id = this.#identity.nodeId;
    try {
      const { key, csr } = await createCsr(id);
      const answer = await this.#client.request("POST", `/api/cluster/nodes/${id}/certificate`, {
        csr,
      });
      const cert = answer.body["certificate"];
      if (answer.status !== 200 || typeof cert !== "string") {
        const code = (answer.body["error"] as { code?: string } | undefined)?.code;
        throw new Error(`the controller answered ${answer.status} ${code ?? ""}`.trim());
      }
      await d.saveRenewal?.({ key, cert });
      this.#identity = { ...this.#identity, key, cert };
      const old = this.#client;
      this.#client = this.#connect(this.#identity);
      old.close();
      this.#certExpiry = certificateExpiry(cert);
      d.logger.info("renewed the node certificate", {
        node_id: id,
        expires_at: new Date(this.#certExpiry).toISOString(),
      });
      return true;
    } catch (err) {
      d.logger.warn("cannot renew the node certificate; the current one stays in use", {
        node_id: id,
        expires_at: new Date(this.#certExpiry).toISOString(),
        error: String((err as Error)?.message ?? err),
      });
      return false;
    }
  }

  start(): void {
    this.#tick();
    this.#watch?.start();
  }

  /** The policy watch (tests run `once()` to avoid waiting). */
  watch(): NodeWatch | undefined {
    return this.#watch;
  }

  /**
   * Fetches and applies the controller's policy unless the node already enforces `version`;
   * false when that failed (the current policy stays). Calls wait for the one before.
   */
  follow(version: string): Promise<boolean> {
    const policy = this.#deps.policy;
    if (!policy) return Promise.resolve(false);
    const run = async (): Promise<boolean> => {
      if (version === policy.version()) return true;
      try {
        await policy.follow(version, this.#client);
        return true;
      } catch (err) {
        this.#lastError = "POLICY_SYNC_FAILED";
        this.#deps.logger.error("cannot apply the controller's policy; keeping the current one", {
          version,
          error: String((err as Error)?.message ?? err),
        });
        return false;
      }
    };
    this.#following = this.#following.then(run, run);
    return this.#following;
  }

  status(): NodeAgentStatus {
    return {
      link: this.#link,
      last_heartbeat_at: this.#lastOk === null ? null : new Date(this.#lastOk).toISOString(),
      last_error: this.#lastError,
      controller_policy_version: this.#controllerVersion,
      last_attempt_at: this.#lastAttempt === null
        ? null
        : new Date(this.#lastAttempt).toISOString(),
      next_attempt_at: this.#nextAttempt === null
        ? null
        : new Date(this.#nextAttempt).toISOString(),
      policy_watch: this.#watch?.state ?? "off",
    };
  }

  /**
   * How long the timer waits before the next heartbeat: the interval, or while the controller
   * refuses this node, twice the previous wait up to `REFUSED_MAX_DELAY_MS`.
   */
  delayMs(): number {
    const interval = this.#deps.intervalMs;
    if (this.#refusals === 0) return interval;
    return Math.min(REFUSED_MAX_DELAY_MS, Math.max(interval, interval * 2 ** this.#refusals));
  }

  /** One heartbeat now (the timer's work; tests call it to avoid waiting). */
  async beat(): Promise<ControllerAnswer | undefined> {
    const d = this.#deps;
    const id = this.#identity.nodeId;
    this.#lastAttempt = d.clock.now();
    let answer: ControllerAnswer;
    try {
      answer = await this.#client.request("POST", `/api/cluster/nodes/${id}/heartbeat`, {
        version: VERSION,
        uptime_s: Math.round((d.clock.now() - this.#started) / 1000),
        policy_version: d.policy?.version() ?? null,
        time: d.clock.now(),
        started_at: this.#started,
        counters: counterTotals(d.counters()),
        health: d.health(),
      });
    } catch (err) {
      this.#refusals = 0;
      if (this.#link !== "unreachable") {
        d.logger.warn("cannot reach the cluster controller; serving with the last policy", {
          controller: d.identity.controllerUrl,
          error: String((err as Error)?.message ?? err),
        });
      }
      this.#link = "unreachable";
      this.#lastError = "CONTROLLER_UNREACHABLE";
      return undefined;
    }
    if (answer.status !== 200) {
      const code = (answer.body["error"] as { code?: string } | undefined)?.code ?? "HTTP_ERROR";
      const refused = answer.status === 401 || answer.status === 403;
      const before = this.delayMs();
      this.#refusals = refused ? Math.min(this.#refusals + 1, 30) : 0;
      if (this.#link !== "refused" || this.#lastError !== code) {
        d.logger.error("the cluster controller refused this node's heartbeat", {
          status: answer.status,
          code,
          ...(refused ? { retry_in_ms: this.delayMs(), max_retry_ms: REFUSED_MAX_DELAY_MS } : {}),
        });
      } else if (
        refused && before < REFUSED_MAX_DELAY_MS && this.delayMs() >= REFUSED_MAX_DELAY_MS
      ) {
        d.logger.warn("still refused by the cluster controller; retrying at the longest interval", {
          code,
          retry_in_ms: this.delayMs(),
        });
      }
      this.#link = refused ? "refused" : "unreachable";
      this.#lastError = code;
      return answer;
    }
    this.#refusals = 0;
    if (this.#link !== "connected") {
      d.logger.info("connected to the cluster controller", { node_id: id });
    }
    this.#link = "connected";
    this.#lastOk = d.clock.now();
    this.#lastError = null;
    const version = answer.body["policy_version"];
    if (typeof version === "string") {
      this.#controllerVersion = version;
      if (d.policy && version !== d.policy.version()) await this.follow(version);
    }
    const now = d.clock.now();
    if (d.saveRenewal && this.#certExpiry - now < RENEW_BEFORE_MS && now >= this.#renewAfter) {
      await this.renew();
    }
    return answer;
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    this.#running = this.beat().then(() => {}, () => {}).finally(() => {
      this.#running = undefined;
      if (this.#stopped) return;
      const delay = this.delayMs();
      this.#nextAttempt = this.#deps.clock.now() + delay;
      this.#timer = setTimeout(() => this.#tick(), delay);
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await Promise.all([this.#running, this.#watch?.stop(), this.#following]);
    this.#client.close();
  }
}
