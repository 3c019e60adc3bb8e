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
  /** A site's name (the notification names the site, not only its id). */
  readonly siteName?: (siteId: string) => string | undefined;
}

/** Whole minutes the decision lasts, or null until revoked. */
function minutesOf(p: Proposal): number | null {
  return p.expiresAt === null ? null : Math.round((p.expiresAt - p.createdAt) / 60_000);
}

/** The parameters the console makes the notification's text of (`note.alap.*` in its catalogues). */
function params(p: Proposal, id: string, site: string | undefined, more: number) {
  const b = p.basis;
  return {
    variant: p.status === "applied" ? "applied" : "proposed",
    decision: id,
    ip: p.target.clientIp ?? null,
    site: site ?? null,
    site_id: p.scope.siteId,
    minutes: minutesOf(p),
    requests: p.evidence.length,
    basis: b.kind,
    score: b.kind === "score" ? b.score : null,
    window_s: b.kind === "score" ? b.windowS : null,
    sites: b.kind === "sites" ? b.sites : null,
    more,
  };
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
    const more = this.#notSent;
    this.#notSent = 0;
    const minutes = minutesOf(p);
    const lasting = minutes === null ? "until revoked" : `for ${minutes} min`;
    const site = p.scope.siteId === null ? undefined : this.#deps.siteName?.(p.scope.siteId);
    const link = `/console/alap/${id}`;
    this.#deps.notifications.notifyAdmins({
      level: "warning",
      kind: `alap.${p.kind}`,
      title: applied
        ? `ALAP blocked ${ip} ${lasting}`
        : `ALAP proposes blocking ${ip} ${lasting}: review it`,
      body: `${p.reason}${site ? ` on site ${site}` : ""}. ${
        applied
          ? "Revoke the decision on the console's ALAP page if it is wrong"
          : "Approve or reject it on the console's ALAP page"
      }: ${link}.${more > 0 ? ` ${more} more ALAP block(s) were not notified one by one.` : ""}`,
      params: params(p, id, site, more),
      link,
    });
  }
}
