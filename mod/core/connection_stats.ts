/**
 * Counters of the connection fronts (net/conn_front.ts): connections open, accepted, refused
 * at the door and closed early, per listener. The fronts write plain fields; monitoring reads
 * them at scrape time (`waf_connections_*`, docs/monitoring.md).
 */

/** Why a connection was refused as it arrived. */
export const REFUSE_REASONS = ["per_client", "total", "fd_limit"] as const;
export type RefuseReason = typeof REFUSE_REASONS[number];

/** Why an open connection was closed by the front. */
export const CLOSE_REASONS = [
  "header_timeout",
  "body_timeout",
  "keepalive_timeout",
  "send_timeout",
  "bad_framing",
  "body_rate",
  "shed",
] as const;
export type CloseReason = typeof CLOSE_REASONS[number];

export interface ListenerConnections {
  readonly listener: string;
  open: number;
  accepted: number;
  /** Failed accepts (descriptor limit and the like); each is followed by a back-off. */
  acceptErrors: number;
  readonly refused: Record<RefuseReason, number>;
  readonly closed: Record<CloseReason, number>;
}

export interface ConnectionStats {
  /** The counters of one listener (created on first use). */
  listener(name: string): ListenerConnections;
  all(): Iterable<ListenerConnections>;
}

export function createConnectionStats(): ConnectionStats {
  const byName = new Map<string, ListenerConnections>();
  return {
    listener(name) {
      let s = byName.get(name);
      if (!s) {
        s = {
          listener: name,
          open: 0,
          accepted: 0,
          acceptErrors: 0,
          refused: Object.fromEntries(REFUSE_REASONS.map((r) => [r, 0])) as Record<
            RefuseReason,
            number
          >,
          closed: Object.fromEntries(CLOSE_REASONS.map((r) => [r, 0])) as Record<
            CloseReason,
            number
          >,
        };
        byName.set(name, s);
      }
      return s;
    },
    all: () => byName.values(),
  };
}
