/**
 * When the access-log writer changes threads: escalation to a thread at normal priority once the
 * oldest unanswered request has waited too long (the low-priority thread is starved, or the store
 * is locked), and the return to a low-priority thread once the writer has been calm for a while.
 * The writer (`worker_writer.ts`) does the switching; this decides when.
 */
import type { PendingRequests } from "./writer_requests.ts";

/**
 * The default escalation threshold: a request is normally answered within the deferral (50 ms)
 * plus its insert, so a second without an answer means the low-priority thread is starved
 * (other processes keep both cores busy) or the store is locked.
 */
export const ESCALATE_AFTER_MS = 1000;
/**
 * The calm period before an escalated writer returns to low priority: a minute in which no
 * request waited over {@link CALM_LATE_MS}. Long enough that a store locked by a backup or a
 * machine saturated for a moment is over, short enough that one such moment does not cost the
 * low priority until the process restarts.
 */
export const CALM_MS = 60_000;
/** The calm period doubles after each return, up to an hour. */
export const CALM_MAX_MS = 3_600_000;
/** An answer later than this (ms) is not calm: the deferral (50 ms) plus an insert, twice over. */
export const CALM_LATE_MS = 100;

export interface PriorityWatchOptions {
  /** How long the oldest unanswered request may wait before the writer is escalated (ms). */
  readonly escalateAfterMs: number;
  /** The first calm period (ms); it doubles after each return, up to {@link CALM_MAX_MS}. */
  readonly calmMs: number;
  readonly requests: PendingRequests;
  /** Whether a thread runs (false: the last one failed and none is started yet). */
  readonly running: () => boolean;
  /** Hands every later request to a new thread, at low priority or not. */
  readonly switchTo: (low: boolean) => void;
  readonly onEscalate?: (info: { waited_ms: number; unanswered: number }) => void;
  readonly onDeescalate?: (info: { calm_ms: number }) => void;
}

/** Watches the writer's unanswered requests and switches threads when they say so. */
export class PriorityWatch {
  readonly #o: PriorityWatchOptions;
  readonly #confirmMs: number;
  #calmMs: number;
  /** Whether the current thread runs at normal priority because the low one fell behind. */
  #escalated = false;
  #escalations = 0;
  #deescalations = 0;
  #stopped = false;
  /** While escalated: when an answer last came late (or the escalation). */
  #lastLate = 0;
  /**
   * When the current thread had opened its store (undefined: not yet): a thread's start (its
   * module loaded, type-checked on a cold cache) can take longer than the threshold, and is not
   * falling behind.
   */
  #opened: number | undefined;
  /**
   * The oldest unanswered request found late, and when: it escalates only if still unanswered a
   * moment later, so a main thread that was itself blocked (the reply sat in its queue) does not.
   */
  #suspect: { id: number; at: number } | undefined;
  #confirm: ReturnType<typeof setTimeout> | undefined;
  /** Looks again while requests are unanswered; unref'd, so it never keeps a process alive. */
  #watch: ReturnType<typeof setTimeout> | undefined;
  #calm: ReturnType<typeof setTimeout> | undefined;

  constructor(options: PriorityWatchOptions) {
    this.#o = options;
    this.#calmMs = options.calmMs;
    this.#confirmMs = Math.min(100, options.escalateAfterMs / 2);
  }

  get escalated(): boolean {
    return this.#escalated;
  }

  escalations(): number {
    return this.#escalations;
  }

  deescalations(): number {
    return this.#deescalations;
  }

  /** A thread was started: nothing it was given is late before it has opened its store. */
  started(): void {
    this.#opened = undefined;
    this.#suspect = undefined;
  }

  /** The current thread opened its store at `now`. */
  opened(now: number): void {
    this.#opened = now;
  }

  /** A request posted at `posted` was answered at `now` (read only while escalated). */
  answered(posted: number, now: number): void {
    if (this.#escalated && now - posted > CALM_LATE_MS) this.#lastLate = now;
  }

  /** Escalates when the oldest unanswered request has waited too long. */
  check(now: number): void {
    if (this.#escalated || this.#stopped) return;
    const oldest = this.#o.requests.oldest();
    if (oldest === undefined || this.#opened === undefined) return;
    const [id, { posted }] = oldest;
    const waited = now - Math.max(posted, this.#opened);
    if (waited < this.#o.escalateAfterMs) return;
    if (this.#suspect?.id !== id) {
      this.#suspect = { id, at: now };
      clearTimeout(this.#confirm);
      this.#confirm = setTimeout(() => this.check(performance.now()), this.#confirmMs);
      Deno.unrefTimer(this.#confirm);
      return;
    }
    if (now - this.#suspect.at < this.#confirmMs) return;
    this.#escalated = true;
    this.#escalations++;
    this.#lastLate = now;
    clearTimeout(this.#watch);
    this.#watch = undefined;
    this.#o.switchTo(false);
    this.#armCalm(this.#calmMs);
    this.#o.onEscalate?.({
      waited_ms: Math.round(waited),
      unanswered: this.#o.requests.size,
    });
  }

  /** Looks again after the threshold while requests are unanswered. */
  arm(): void {
    if (this.#watch !== undefined || this.#escalated || this.#stopped) return;
    this.#watch = setTimeout(() => {
      this.#watch = undefined;
      this.check(performance.now());
      if (this.#o.requests.size > 0) this.arm();
    }, this.#o.escalateAfterMs);
    Deno.unrefTimer(this.#watch);
  }

  /** Stops every timer (the writer is closing). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#watch);
    clearTimeout(this.#confirm);
    clearTimeout(this.#calm);
  }

  /** While escalated: returns to low priority once the writer has been calm for the period. */
  #armCalm(delay: number): void {
    this.#calm = setTimeout(() => {
      this.#calm = undefined;
      if (!this.#escalated || this.#stopped) return;
      const now = performance.now();
      const oldest = this.#o.requests.oldest();
      if (oldest !== undefined && now - oldest[1].posted > CALM_LATE_MS) this.#lastLate = now;
      if (!this.#o.running() || now - this.#lastLate < this.#calmMs) {
        return this.#armCalm(Math.max(CALM_LATE_MS, this.#lastLate + this.#calmMs - now));
      }
      const was = this.#calmMs;
      this.#escalated = false;
      this.#deescalations++;
      this.#calmMs = Math.min(2 * this.#calmMs, Math.max(CALM_MAX_MS, this.#calmMs));
      this.#o.switchTo(true);
      if (this.#o.requests.size > 0) this.arm();
      this.#o.onDeescalate?.({ calm_ms: was });
    }, delay);
    Deno.unrefTimer(this.#calm);
  }
}
