/**
 * What administrators hear of ALAP's client blocks (temporary blocks and bans, proposed or
 * applied): an event-log line each, and a notification each up to {@link NOTIFY_BURST} at once,
 * then one a minute with a count of those left out.
 */
import type { Proposal } from "../../engine/alap.ts";
import type { Clock } from "../core/clock.ts";
import type { EventLog } from "../core/event_log.ts";
import type { Notifications } from "../core/notifications.ts";

/** Client blocks notified at once before the rate of one a minute applies. */
export const NOTIFY_BURST = 10;
const NOTIFY_EVERY_MS = 60_000;

export interface NoticeDeps {
  readonly notifications: Notifications;
  readonly events?: EventLog;
  readonly clock: Clock;
}

function minutes(p: Proposal): string {
  if (p.expiresAt === null) return "until revoked";
  return `for ${Math.round((p.expiresAt - p.createdAt) / 60_000)} min`;
}

/**
 * Tells administrators about client blocks: an event-log line each, and a notification each up
 * to {@link NOTIFY_BURST} at once, then one a minute with a count of those left out.
 */
export class BlockNotices {
  readonly #deps: NoticeDeps;
  #tokens = NOTIFY_BURST;
  #at: number;
  #notSent = 0;

  constructor(deps: NoticeDeps) {
    this.#deps = deps;
    this.#at = deps.clock.now();
  }

  /** Called inside the transaction that stores the decision `id`. */
  tell(p: Proposal, id: string): void {
    const ip = p.target.clientIp ?? "?";
    const applied = p.status === "applied";
    const what = p.kind === "temp_block" ? "temporary block" : "ban";
    this.#deps.events?.event(
      "alap",
      applied ? `ALAP applied a ${what}` : `ALAP proposes a ${what}`,
      {
        decision: id,
        client_ip: ip,
        site_id: p.scope.siteId,
        expires_at: p.expiresAt === null ? null : new Date(p.expiresAt).toISOString(),
        reason: p.reason,
      },
    );
    const now = this.#deps.clock.now();
    this.#tokens = Math.min(NOTIFY_BURST, this.#tokens + (now - this.#at) / NOTIFY_EVERY_MS);
    this.#at = now;
    if (this.#tokens < 1) {
      this.#notSent++;
      return;
    }
    this.#tokens--;
    const more = this.#notSent > 0
      ? ` ${this.#notSent} more ALAP block(s) were not notified one by one.`
      : "";
    this.#notSent = 0;
    this.#deps.notifications.notifyAdmins({
      level: "warning",
      kind: `alap.${p.kind}`,
      title: applied
        ? `ALAP blocked ${ip} ${minutes(p)}`
        : `ALAP proposes blocking ${ip} ${minutes(p)}: review it`,
      body: `${p.reason}. Decision ${id}: ${
        applied
          ? "revoke it with POST /api/alap/decisions/" + id + "/revoke"
          : "approve or reject it with POST /api/alap/decisions/" + id + "/approve (or /reject)"
      }.${more}`,
    });
  }
}
