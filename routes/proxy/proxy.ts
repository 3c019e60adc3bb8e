/**
 * The data-plane connector, the way Coraza's HTTP middleware is: it builds the per-process parts
 * once (upstream client, protection controls) and runs one {@link Transaction} per request on
 * the policy in force when the request arrived. The order of checks lives in the transaction.
 */
import type { Clock } from "../../mod/core/clock.ts";
import type { Logger } from "../../mod/core/logger.ts";
import type { AccessLog } from "../../mod/data_plane/access_log.ts";
import type { Policy } from "../../mod/data_plane/policy.ts";
import { type ProtectionControls, type ProxyContext, Transaction } from "./transaction.ts";
import { createFetchUpstream, type UpstreamClient } from "./upstream_client.ts";

export interface ProxyDeps {
  readonly policy: Policy;
  readonly accessLog: AccessLog;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly traceId: () => string;
  /** The protection controls (IP lists, ACL, rules, bot, rate limit, ALAP, edge, block page). */
  readonly protection?: ProtectionControls;
  /** How requests reach upstreams (default: `fetch` with one pooled client). */
  readonly upstream?: UpstreamClient;
}

/** Handles one request from a peer; `proto` is how the client reached the data plane. */
export type ProxyHandler = (
  req: Request,
  peer: string,
  proto: "http" | "https",
) => Promise<Response>;

export interface Proxy {
  readonly handle: ProxyHandler;
  /** Releases the pooled upstream connections. */
  close(): void;
}

export function createProxy(deps: ProxyDeps): Proxy {
  const { policy, traceId } = deps;
  const ctx: ProxyContext = {
    accessLog: deps.accessLog,
    clock: deps.clock,
    logger: deps.logger,
    upstream: deps.upstream ?? createFetchUpstream(deps.clock),
    protection: deps.protection,
  };
  return {
    handle: (req, peer, proto) =>
      new Transaction(ctx, req, peer, proto, policy.current, traceId()).run(),
    close: () => ctx.upstream.close(),
  };
}
