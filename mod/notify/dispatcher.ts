/**
 * Delivers notifications to channels, never on a request's path: a new notification (or a test)
 * becomes one stored delivery per subscribed channel, and a background loop sends what is due,
 * recording every attempt. A failed attempt is retried with growing delays, then the delivery is
 * marked failed; pending deliveries survive a restart. Each attempt has a deadline.
 *
 * Several controllers on one production store each run this loop over the same deliveries: an
 * attempt begins only after its row is claimed (its due time moved past the attempt's deadline
 * by a compare-and-set), so one delivery is sent by one controller; a claimer that dies
 * mid-attempt leaves the row due again once that deadline has passed.
 */
import type { DeliveryRow, NotifyRepo } from "../../db/notify_repo.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { NotificationView } from "../core/notifications.ts";
import { type Random, randomHex } from "../core/random.ts";
import type { Channels } from "./channels.ts";
import { pageOf, readCursor } from "../core/page_cursor.ts";
import type { Message } from "./formats.ts";
import { sendMessage } from "./send.ts";

/** Delays before the 2nd, 3rd, ... attempt; the attempt after the last delay is the last one. */
export const RETRY_DELAYS_MS: readonly number[] = [10_000, 60_000, 300_000, 1_800_000];
const BATCH = 8;
/** How long past an attempt's deadline its claim holds (recording the outcome takes a moment). */
const CLAIM_MARGIN_MS = 5_000;
const KEEP_DELIVERIES_MS = 30 * 86_400_000;

export interface DispatcherDeps {
  readonly repo: NotifyRepo;
  readonly channels: Channels;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly retryDelaysMs?: readonly number[];
  /** Deadline of one attempt. */
  readonly timeoutMs?: number;
  /**
   * `server.management.base_url`: with it, a notification about a console page carries that
   * page's full URL (`url`), so a channel's reader can open it.
   */
  readonly consoleUrl?: string;
}

export interface AttemptView {
  readonly attempt: number;
  readonly time: string;
  readonly ok: boolean;
  readonly status: number | null;
  readonly error: string | null;
  readonly duration_ms: number;
}

export interface DeliveryView {
  readonly id: string;
  readonly channel_id: string;
  readonly event: string;
  readonly status: DeliveryRow["status"];
  readonly attempts: AttemptView[];
  readonly next_attempt_at: string | null;
  readonly created_at: string;
  readonly finished_at: string | null;
  readonly last_error: string | null;
  readonly title: string;
}

const iso = (t: number | null) => t === null ? null : new Date(t).toISOString();

function deliveryView(repo: NotifyRepo, d: DeliveryRow): DeliveryView {
  return {
    id: d.id,
    channel_id: d.channel_id,
    event: d.event,
    status: d.status,
    title: (JSON.parse(d.payload) as Message).title,
    attempts: repo.attempts(d.id).map((a) => ({
      attempt: a.attempt,
      time: new Date(a.time).toISOString(),
      ok: a.ok === 1,
      status: a.status,
      error: a.error,
      duration_ms: a.duration_ms,
    })),
    next_attempt_at: d.status === "pending" ? iso(d.next_attempt_at) : null,
    created_at: new Date(d.created_at).toISOString(),
    finished_at: iso(d.finished_at),
    last_error: d.last_error,
  };
}

/** `link` (a console path) under the console's public URL; null without either. */
function consoleLink(base: string | undefined, link: string | null): string | null {
  if (!base || !link) return null;
  return base.replace(/\/+$/, "") + link;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  return new Dispatcher(deps);
}

export class Dispatcher {
  readonly #deps: DispatcherDeps;
  readonly #delays: readonly number[];
  readonly #timeoutMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = true;
  readonly #outcomes = new Map<string, number>();

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
    this.#delays = deps.retryDelaysMs ?? RETRY_DELAYS_MS;
    this.#timeoutMs = deps.timeoutMs ?? 10_000;
  }

  /** A stored notification: one delivery per enabled channel subscribed to its kind. */
  offer(view: NotificationView, data: Readonly<Record<string, unknown>>): void {
    const channels = this.#deps.channels.subscribed(view.kind);
    if (channels.length === 0) return;
    const message: Message = {
      event: view.kind,
      level: view.level,
      title: view.title,
      body: view.body,
      time: view.time,
      notification_id: view.id,
      url: consoleLink(this.#deps.consoleUrl, view.link),
      data,
    };
    for (const c of channels) this.#enqueue(c.id, message);
    this.#schedule();
  }

  /** Queues a test message to one channel (enabled or not); returns the delivery id. */
  test(channelId: string, by: string): string {
    this.#deps.channels.find(channelId);
    const id = this.#enqueue(channelId, {
      event: "test",
      level: "info",
      title: "Test notification from waf",
      body: `${by} sent this test message to check the channel.`,
      time: new Date(this.#deps.clock.now()).toISOString(),
      notification_id: null,
      url: null,
      data: {},
    });
    this.#schedule();
    return id;
  }

  deliveries(
    channelId: string,
    options: { cursor?: string; limit: number },
  ): { items: DeliveryView[]; next_cursor: string | null } {
    const { repo } = this.#deps;
    this.#deps.channels.find(channelId);
    const before = readCursor(options.cursor);
    const rows = repo.deliveries(channelId, { before, limit: options.limit + 1 });
    const { page, next_cursor } = pageOf(rows, options.limit, (d) => ({
      time: d.created_at,
      id: d.id,
    }));
    return { items: page.map((d) => deliveryView(repo, d)), next_cursor };
  }

  delivery(id: string): DeliveryView | undefined {
    const d = this.#deps.repo.getDelivery(id);
    return d ? deliveryView(this.#deps.repo, d) : undefined;
  }

  /** Outcomes of attempts since start, by channel type (`"slack delivered"` -> count). */
  outcomes(): ReadonlyMap<string, number> {
    return this.#outcomes;
  }

  pending(): number {
    return this.#deps.repo.pendingCount();
  }

  /** Sends what is due now and resolves when done (the timer does this on its own). */
  async runDue(): Promise<void> {
    while (this.#running) await this.#running;
    await this.#run();
  }

  start(): void {
    this.#stopped = false;
    this.#deps.repo.pruneDeliveries(this.#deps.clock.now() - KEEP_DELIVERIES_MS);
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #enqueue(channelId: string, message: Message): string {
    const id = `dlv_${randomHex(this.#deps.random, 8)}`;
    this.#deps.repo.insertDelivery({
      id,
      channelId,
      event: message.event,
      payload: JSON.stringify(message),
      now: this.#deps.clock.now(),
    });
    return id;
  }

  #schedule(delayMs = 0): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#run(), Math.max(0, delayMs));
  }

  /** One drain at a time: two would both take the same due delivery and send it twice. */
  #run(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.#schedule();
      } else this.#armForNext();
    });
    return this.#running;
  }

  #armForNext(): void {
    const next = this.#deps.repo.nextDue();
    if (next !== null) {
      this.#schedule(Math.min(60_000, Math.max(10, next - this.#deps.clock.now())));
    }
  }

  async #drain(): Promise<void> {
    for (;;) {
      const now = this.#deps.clock.now();
      const due = this.#deps.repo.due(now, BATCH);
      if (due.length === 0 || this.#stopped) return;
      const until = now + this.#timeoutMs + CLAIM_MARGIN_MS;
      const mine = due.filter((d) => this.#deps.repo.claim(d.id, d.next_attempt_at!, until));
      await Promise.all(mine.map((d) => this.#attempt(d)));
    }
  }

  async #attempt(d: DeliveryRow): Promise<void> {
    const { clock, logger } = this.#deps;
    const n = d.attempts + 1;
    const started = performance.now();
    let ok = false;
    let status: number | null = null;
    let error: string | null = null;
    let type = "unknown";
    try {
      const channel = await this.#deps.channels.open(d.channel_id);
      if (channel === undefined) throw new Error("the channel was deleted");
      type = channel.type;
      status = (await sendMessage(channel, JSON.parse(d.payload) as Message, {
        deliveryId: d.id,
        nowMs: clock.now(),
        timeoutMs: this.#timeoutMs,
      })).status;
      ok = true;
    } catch (err) {
      const e = err as Error & { status?: number };
      status = e.status ?? null;
      error = (e.name === "TimeoutError" ? `no answer within ${this.#timeoutMs} ms` : e.message)
        .slice(0, 500);
    }
    const now = clock.now();
    const last = n > this.#delays.length;
    const state = ok ? "delivered" : last ? "failed" : "pending";
    const outcome = `${type} ${ok ? "delivered" : "failed"}`;
    this.#outcomes.set(outcome, (this.#outcomes.get(outcome) ?? 0) + 1);
    try {
      this.#deps.repo.recordAttempt({
        delivery_id: d.id,
        attempt: n,
        time: now,
        ok: ok ? 1 : 0,
        status,
        error,
        duration_ms: Math.round(performance.now() - started),
      }, {
        status: state,
        nextAt: state === "pending" ? now + this.#delays[n - 1]! : null,
        finishedAt: state === "pending" ? null : now,
      });
    } catch (err) {
      logger.error("notification delivery could not be recorded", { error: err as Error });
    }
    if (!ok) {
      logger.warn("notification delivery failed", {
        delivery: d.id,
        channel: d.channel_id,
        attempt: n,
        error,
        final: last,
      });
    }
  }
}
