/**
 * The node's policy watch: one long-poll kept open on the controller's cluster listener
 * (`GET /api/cluster/nodes/{id}/policy/watch?since=<version>`, mTLS like the heartbeat) that the
 * controller answers as soon as its policy version differs from the node's, or after
 * `WATCH_WAIT_MS` with "no change". On a change the node fetches the policy as after a heartbeat,
 * so it follows within a fraction of a second whatever `cluster.heartbeat_interval` says. When the
 * watch fails the heartbeat still carries the version: a controller without the route (404, an
 * older build) is asked again only after `UNSUPPORTED_RETRY_MS`, other failures back off from the
 * heartbeat interval up to `FAILING_MAX_DELAY_MS`.
 */
import type { Logger } from "../core/logger.ts";
import type { ControllerClient } from "./controller_client.ts";
import { WATCH_WAIT_MS } from "./policy_watch.ts";
import { realTimers, type TimerId, type Timers } from "../../net/timers.ts";

/** A watch answered by nothing for this long (the controller's wait and some slack) is given up. */
const WATCH_TIMEOUT_MS = WATCH_WAIT_MS + 10_000;
/** A controller without the route is asked again after this (10 minutes: it may be upgraded). */
export const UNSUPPORTED_RETRY_MS = 600_000;
/** The longest wait between failing watches (1 minute; the heartbeat follows meanwhile). */
export const FAILING_MAX_DELAY_MS = 60_000;
/** Watches start at least this far apart (250 ms), so no answer can make them a busy loop. */
const MIN_GAP_MS = 250;

/** `watching` after an answer; `unsupported`: the controller has no watch (heartbeat only). */
export type WatchState = "starting" | "watching" | "unsupported" | "failing" | "stopped";

export interface NodeWatchDeps {
  readonly nodeId: string;
  readonly logger: Logger;
  readonly intervalMs: number;
  /** The current connection (replaced when the certificate is renewed). */
  readonly client: () => ControllerClient;
  /** The version the node enforces (null before the first one). */
  readonly version: () => string | null;
  /** Follows the controller's `version`; false when it could not. */
  readonly follow: (version: string) => Promise<boolean>;
  /** The real ones unless a test moves time by hand. */
  readonly timers?: Timers;
}

export class NodeWatch {
  readonly #deps: NodeWatchDeps;
  #state: WatchState = "starting";
  #failures = 0;
  #stopped = false;
  #loop: Promise<void> | undefined;
  #abort: AbortController | undefined;
  readonly #timers: Timers;
  #timer: TimerId | undefined;
  #wake: (() => void) | undefined;

  constructor(deps: NodeWatchDeps) {
    this.#deps = deps;
    this.#timers = deps.timers ?? realTimers;
  }

  get state(): WatchState {
    return this.#state;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * One watch: waits for the controller's answer and follows a changed version. Returns how long
   * to wait before the next one.
   */
  async once(): Promise<number> {
    const d = this.#deps;
    const client = d.client();
    const since = d.version() ?? "";
    this.#abort = new AbortController();
    let answer;
    try {
      answer = await client.request(
        "GET",
        `/api/cluster/nodes/${d.nodeId}/policy/watch?since=${encodeURIComponent(since)}`,
        undefined,
        { timeoutMs: WATCH_TIMEOUT_MS, signal: this.#abort.signal },
      );
    } catch (err) {
      // Stopped, or the connection closed under the request by a certificate renewal.
      if (this.#stopped || client !== d.client()) return 0;
      return this.#failed("CONTROLLER_UNREACHABLE", err);
    } finally {
      this.#abort = undefined;
    }
    if (answer.status === 404) {
      if (this.#state !== "unsupported") {
        d.logger.info("the controller has no policy watch; following its policy by heartbeat", {
          retry_in_ms: UNSUPPORTED_RETRY_MS,
        });
      }
      this.#state = "unsupported";
      this.#failures = 0;
      return UNSUPPORTED_RETRY_MS;
    }
    if (answer.status !== 200) {
      const code = (answer.body["error"] as { code?: string } | undefined)?.code;
      return this.#failed(code ?? `HTTP_${answer.status}`);
    }
    if (this.#state !== "watching") d.logger.info("watching the controller's policy");
    this.#state = "watching";
    this.#failures = 0;
    const version = answer.body["policy_version"];
    if (typeof version === "string" && version !== d.version() && !await d.follow(version)) {
      // A policy this node cannot apply: the next try waits like a failure, not at once.
      return this.#delay();
    }
    return 0;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#state = "stopped";
    this.#timers.clearTimeout(this.#timer);
    this.#wake?.();
    this.#abort?.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const started = this.#timers.now();
      const delay = await this.once().catch((err) => this.#failed("WATCH_FAILED", err));
      const gap = Math.max(delay, MIN_GAP_MS - (this.#timers.now() - started));
      if (!this.#stopped && gap > 0) await this.#sleep(gap);
    }
  }

  #failed(code: string, err?: unknown): number {
    this.#failures = Math.min(this.#failures + 1, 30);
    if (this.#state !== "failing") {
      this.#deps.logger.warn("the policy watch failed; following the policy by heartbeat", {
        code,
        ...(err === undefined ? {} : { error: String((err as Error)?.message ?? err) }),
        retry_in_ms: this.#delay(),
      });
    }
    this.#state = "failing";
    return this.#delay();
  }

  #delay(): number {
    const base = Math.max(this.#deps.intervalMs, 1000);
    return Math.min(FAILING_MAX_DELAY_MS, base * 2 ** Math.max(0, this.#failures - 1));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
      this.#timer = this.#timers.setTimeout(resolve, ms);
    }).finally(() => {
      this.#timer = undefined;
      this.#wake = undefined;
    });
  }
}
