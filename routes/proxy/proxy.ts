/**
 * The data-plane connector, the way Coraza's HTTP middleware is: it builds the per-process parts
 * once (upstream client, protection controls) and runs one {@link Transaction} per request on
 * the policy in force when the request arrived. The order of checks lives in the transaction.
 */
import type { AcmeChallenges } from "../../mod/data_plane/acme_challenges.ts";
import type { ApiSecRuntime } from "../../mod/apisec/apisec_runtime.ts";
import type { Clock } from "../../mod/core/clock.ts";
import type { Logger } from "../../mod/core/logger.ts";
import type { AccessLog } from "../../mod/access_log/access_log.ts";
import type { Policy } from "../../mod/data_plane/policy.ts";
import { type ProtectionControls, type ProxyContext, Transaction } from "./transaction.ts";
import { createHttp1Upstream } from "../../net/upstream/http1_client.ts";
import type { UpstreamClient } from "../../net/upstream/upstream_client.ts";
import { arrivingRecord } from "../../mod/access_log/record.ts";
import type { BrokenRequest } from "../../net/http1_framing.ts";

/** A header's value in a raw request head (the first of its name), or null. */
function headerOf(head: string, name: string): string | null {
  const m = new RegExp(`\\n${name}[ \\t]*:[ \\t]*([^\\r\\n]*)`, "i").exec(head);
  return m ? m[1]!.trim() : null;
}

export interface ProxyDeps {
  readonly policy: Policy;
  readonly accessLog: Pick<AccessLog, "push">;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly traceId: () => string;
  /** The protection controls (IP lists, ACL, rules, bot, rate limit, ALAP, edge, block page). */
  readonly protection?: ProtectionControls;
  /** API security's per-process state (route limits); absent in benchmarks and some tests. */
  readonly apisec?: ApiSecRuntime;
  /** How requests reach upstreams (default: the HTTP/1.1 client with its keep-alive pools). */
  readonly upstream?: UpstreamClient;
  /** Pending ACME HTTP-01 answers, served before any protection check. */
  readonly acme?: AcmeChallenges;
}

/**
 * Handles one request from a peer; `proto` is how the client reached the data plane. A request
 * of the own HTTP/1.1 server may get a `DirectAnswer` (direct_answer.ts) instead, which only
 * that server receives and writes; a `Request` always gets a `Response`.
 */
export type ProxyHandler = (
  req: Request,
  peer: string,
  proto: "http" | "https",
) => Promise<Response>;

export interface Proxy {
  readonly handle: ProxyHandler;
  /**
   * Records a request the connection front answered with 400 before the server saw it whole
   * (bad chunked framing): the access log and the site's counters get it like any other.
   */
  refused(peer: string, broken: BrokenRequest, proto?: "http" | "https"): void;
  /** Releases the pooled upstream connections. */
  close(): void;
}

export function createProxy(deps: ProxyDeps): Proxy {
  const { policy, traceId } = deps;
  const ctx: ProxyContext = {
    policy,
    traceId,
    accessLog: deps.accessLog,
    clock: deps.clock,
    logger: deps.logger,
    upstream: deps.upstream ?? createHttp1Upstream(),
    protection: deps.protection,
    apisec: deps.apisec,
    acme: deps.acme,
  };
  return {
    handle: (req, peer, proto) => new Transaction(ctx, req, peer, proto).run() as Promise<Response>,
    refused(peer, broken, proto = "http") {
      const p = policy.current;
      const host = headerOf(broken.head, "host") ?? "";
      const site = p.match(host);
      const q = broken.target.indexOf("?");
      const record = arrivingRecord({
        trace_id: traceId(),
        time: deps.clock.now(),
        peer_ip: peer,
        proto,
        method: broken.method,
        host,
        path: q < 0 ? broken.target : broken.target.slice(0, q),
        query: q < 0 ? "" : broken.target.slice(q + 1),
        user_agent: headerOf(broken.head, "user-agent"),
      });
      record.site_id = site?.id ?? null;
      record.site = site?.name ?? null;
      record.status = 400;
      record.action = "block";
      record.chain.push({ check: "framing", result: broken.reason, us: 0 });
      (site?.counters ?? p.unmatched).count(record, 0, null);
      deps.accessLog.push(record);
    },
    close: () => ctx.upstream.close(),
  };
}
