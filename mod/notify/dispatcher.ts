/**
 * Delivers notifications to channels, never on a request's path: a new notification (or a test)
 * becomes one stored delivery per subscribed channel, and a background loop sends what is due,
 * recording every attempt. A failed attempt is retried with growing delays, then the delivery is
 * marked failed; pending deliveries survive a restart. Each attempt has a deadline.
 */
import type { DeliveryRow, NotifyRepo } from "../../db/notify_repo.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { NotificationView } from "../core/notifications.ts";
import { type Random, randomHex } from "../core/random.ts";
import type { Channels, OpenChannel } from "./channels.ts";
import { answerProblem, httpRequest, mailText, type Message } from "./formats.ts";
import { sendMail } from "./smtp.ts";

/** Delays before the 2nd, 3rd, ... attempt; the attempt after the last delay is the last one. */
export const RETRY_DELAYS_MS: readonly number[] = [10_000, 60_000, 300_000, 1_800_000];
const BATCH = 8;
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

export function createDispatcher(deps: DispatcherDeps) {
  const { repo, clock } = deps;
  const delays = deps.retryDelaysMs ?? RETRY_DELAYS_MS;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;
  const outcomes = new Map<string, number>();

  function enqueue(channelId: string, message: Message): string {
    const id = `dlv_${randomHex(deps.random, 8)}`;
    repo.insertDelivery({
      id,
      channelId,
      event: message.event,
      payload: JSON.stringify(message),
      now: clock.now(),
    });
    return id;
  }

  function schedule(delayMs = 0): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(run, Math.max(0, delayMs));
  }

  /** One drain at a time: two would both take the same due delivery and send it twice. */
  function run(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    running = drain().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        schedule();
      } else armForNext();
    });
    return running;
  }

  function armForNext(): void {
    const next = repo.nextDue();
    if (next !== null) schedule(Math.min(60_000, Math.max(10, next - clock.now())));
  }

  async function drain(): Promise<void> {
    for (;;) {
      const due = repo.due(clock.now(), BATCH);
      if (due.length === 0 || stopped) return;
      await Promise.all(due.map(attempt));
    }
  }

  async function send(channel: OpenChannel, message: Message, deliveryId: string) {
    if (channel.type === "email") {
      const s = channel.settings as {
        host: string;
        port: number;
        security: "starttls" | "tls" | "none";
        username?: string;
        from: string;
        to: string[];
        ca?: string;
      };
      const { subject, text } = mailText(message);
      await sendMail({ ...s, password: channel.secrets.password, timeoutMs }, {
        from: s.from,
        to: s.to,
        subject,
        text,
      });
      return { status: null };
    }
    const plan = httpRequest(channel.type, message, channel.secrets, clock.now(), deliveryId);
    const res = await fetch(plan.url, {
      method: "POST",
      headers: plan.headers,
      body: plan.body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    const problem = answerProblem(channel.type, res.status, text);
    if (problem !== null) throw Object.assign(new Error(problem), { status: res.status });
    return { status: res.status };
  }

  async function attempt(d: DeliveryRow): Promise<void> {
    const n = d.attempts + 1;
    const started = performance.now();
    let ok = false;
    let status: number | null = null;
    let error: string | null = null;
    let type = "unknown";
    try {
      const channel = await deps.channels.open(d.channel_id);
      if (channel === undefined) throw new Error("the channel was deleted");
      type = channel.type;
      status = (await send(channel, JSON.parse(d.payload) as Message, d.id)).status;
      ok = true;
    } catch (err) {
      const e = err as Error & { status?: number };
      status = e.status ?? null;
      error = (e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : e.message)
        .slice(0, 500);
    }
    const now = clock.now();
    const last = n > delays.length;
    const state = ok ? "delivered" : last ? "failed" : "pending";
    outcomes.set(
      `${type} ${ok ? "delivered" : "failed"}`,
      (outcomes.get(`${type} ${ok ? "delivered" : "failed"}`) ?? 0) + 1,
    );
    try {
      repo.recordAttempt({
        delivery_id: d.id,
        attempt: n,
        time: now,
        ok: ok ? 1 : 0,
        status,
        error,
        duration_ms: Math.round(performance.now() - started),
      }, {
        status: state,
        nextAt: state === "pending" ? now + delays[n - 1]! : null,
        finishedAt: state === "pending" ? null : now,
      });
    } catch (err) {
      deps.logger.error("notification delivery could not be recorded", { error: err as Error });
    }
    if (!ok) {
      deps.logger.warn("notification delivery failed", {
        delivery: d.id,
        channel: d.channel_id,
        attempt: n,
        error,
        final: last,
      });
    }
  }

  function deliveryView(d: DeliveryRow): DeliveryView {
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

  return {
    /** A stored notification: one delivery per enabled channel subscribed to its kind. */
    offer(view: NotificationView, data: Readonly<Record<string, unknown>>): void {
      const channels = deps.channels.subscribed(view.kind);
      if (channels.length === 0) return;
      const message: Message = {
        event: view.kind,
        level: view.level,
        title: view.title,
        body: view.body,
        time: view.time,
        notification_id: view.id,
        data,
      };
      for (const c of channels) enqueue(c.id, message);
      schedule();
    },
    /** Queues a test message to one channel (enabled or not); returns the delivery id. */
    test(channelId: string, by: string): string {
      deps.channels.find(channelId);
      const id = enqueue(channelId, {
        event: "test",
        level: "info",
        title: "Test notification from waf",
        body: `${by} sent this test message to check the channel.`,
        time: new Date(clock.now()).toISOString(),
        notification_id: null,
        data: {},
      });
      schedule();
      return id;
    },
    deliveries(channelId: string, options: { cursor?: string; limit: number }) {
      deps.channels.find(channelId);
      let before: { time: number; id: string } | undefined;
      if (options.cursor) {
        const [time, id] = options.cursor.split(".");
        if (!time || !id || !/^\d+$/.test(time)) {
          throw new AppError(400, "BAD_REQUEST", 'Invalid field "cursor": not a cursor', {
            details: { field: "cursor" },
          });
        }
        before = { time: Number(time), id };
      }
      const rows = repo.deliveries(channelId, { before, limit: options.limit + 1 });
      const page = rows.slice(0, options.limit);
      const last = page[page.length - 1];
      return {
        items: page.map(deliveryView),
        next_cursor: rows.length > options.limit && last ? `${last.created_at}.${last.id}` : null,
      };
    },
    delivery(id: string): DeliveryView | undefined {
      const d = repo.getDelivery(id);
      return d ? deliveryView(d) : undefined;
    },
    /** Outcomes of attempts since start, by channel type (`"slack delivered"` -> count). */
    outcomes: (): ReadonlyMap<string, number> => outcomes,
    pending: () => repo.pendingCount(),
    /** Sends what is due now and resolves when done (the timer does this on its own). */
    async runDue(): Promise<void> {
      while (running) await running;
      await run();
    },
    start(): void {
      stopped = false;
      repo.pruneDeliveries(clock.now() - KEEP_DELIVERIES_MS);
      schedule();
    },
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
