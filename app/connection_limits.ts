/**
 * A listener's `limits` block (waf.yaml) as the connection front applies it: the transport
 * (`net/conn_front.ts`) takes plain numbers, the composition turns the configuration into them.
 */
import { type Config, durationMs } from "../mod/config/config.ts";
import type { ConnectionLimits } from "../net/conn_front.ts";

/**
 * The limits of one front; with `shares` fronts on one port (data workers with `reusePort`,
 * among which the kernel spreads connections), each gets its share of the caps and of the
 * descriptor budget.
 */
export function limitsFromConfig(
  limits: Config["server"]["data"]["limits"],
  shares = 1,
): ConnectionLimits {
  const share = (n: number) => n === 0 ? 0 : Math.max(1, Math.ceil(n / shares));
  return {
    headerTimeoutMs: durationMs(limits.header_timeout),
    bodyTimeoutMs: durationMs(limits.body_timeout),
    bodyMinRate: limits.body_min_rate,
    bodyMinRateAfterMs: durationMs(limits.body_min_rate_after),
    keepAliveTimeoutMs: durationMs(limits.keepalive_timeout),
    maxConnections: share(limits.max_connections),
    maxPerClient: share(limits.max_connections_per_client),
    descriptorShare: 1 / shares,
  };
}
