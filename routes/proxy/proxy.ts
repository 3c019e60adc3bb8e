/**
 * The data-plane connector, the way Coraza's HTTP middleware is: it turns a request into an
 * `EngineRequest` (reading only the body prefix the engine inspects), asks the engine, and
 * either renders the block page or streams the request to one of the site's upstreams. Every
 * request leaves one access-log record in the in-memory queue; nothing here touches SQLite.
 * It never throws: failures become a status page with the request's trace id.
 */
import { inspect } from "../../engine/mod.ts";
import type { EngineRequest, Inspection } from "../../engine/mod.ts";
import type { AccessLog } from "../../mod/data_plane/access_log.ts";
import {
  type AccessRecord,
  Chain,
  type FindingRecord,
  micros,
} from "../../mod/data_plane/access_record.ts";
import type { Clock } from "../../mod/core/clock.ts";
import type { Logger } from "../../mod/core/logger.ts";
import type { CompiledSite, Policy } from "../../mod/data_plane/policy.ts";
import type { Upstream } from "../../mod/data_plane/upstream_pool.ts";
import { renderBlockPage } from "./block_page.ts";
import { noSitePage, statusPage } from "./status_page.ts";
import {
  clientAddress,
  downstreamHeaders,
  type HeaderPairs,
  upstreamHeaders,
} from "./forwarding.ts";
import { createDeadlines } from "./deadlines.ts";
import { type BodyPlan, planBody } from "./request_body.ts";
import type { ProtectionGate } from "./protection_gate.ts";
import { passWebSocket } from "./websocket.ts";

export interface ProxyDeps {
  readonly policy: Policy;
  readonly accessLog: AccessLog;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly traceId: () => string;
  /** The protection controls (IP lists, ACL, rules, bot, rate limit, ALAP, block page). */
  readonly protection?: ProtectionGate;
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

/** Pooled upstream connections idle longer than this are closed. */
const POOL_IDLE_MS = 60_000;

/**
 * Fetch has no connect timeout, so an upstream without a recent answer (no pooled connection
 * can be assumed) is first dialled with the connect deadline: an unreachable host fails in
 * `connect_ms` instead of holding the request until the response deadline.
 */
async function probe(upstream: Upstream, timeoutMs: number): Promise<void> {
  const conn = await Deno.connect({
    hostname: upstream.hostname,
    port: upstream.port,
    signal: AbortSignal.timeout(timeoutMs),
  });
  conn.close();
}

const NO_BODY_STATUS: ReadonlySet<number> = new Set([101, 204, 205, 304]);

/** Splits `scheme://authority/path?query` without building a URL object. */
function splitUrl(url: string): { authority: string; path: string; query: string } {
  const authorityStart = url.indexOf("//") + 2;
  let pathStart = url.indexOf("/", authorityStart);
  if (pathStart < 0) pathStart = url.length;
  const q = url.indexOf("?", pathStart);
  return {
    authority: url.slice(authorityStart, pathStart),
    path: q < 0 ? url.slice(pathStart) || "/" : url.slice(pathStart, q) || "/",
    query: q < 0 ? "" : url.slice(q + 1),
  };
}

function findingRecord(inspection: Inspection): FindingRecord | null {
  const f = inspection.blocking ?? inspection.findings[0];
  if (!f) return null;
  return {
    class: f.class,
    confidence: f.confidence,
    score: f.score,
    location: f.location,
    evidence: f.evidence,
    rule: f.ruleId,
  };
}

function isTimeout(err: unknown): boolean {
  return err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError");
}

export function createProxy(deps: ProxyDeps): Proxy {
  const { policy, accessLog, clock, logger } = deps;
  // One pooled client for every upstream: connections are reused per origin. The client may
  // set Host, so the upstream sees the name the client asked for.
  const client = Deno.createHttpClient({ allowHost: true, poolIdleTimeout: POOL_IDLE_MS });
  const deadlines = createDeadlines();

  function finish(
    record: AccessRecord,
    start: number,
    response: Response,
    upstreamUs: number | null = null,
  ): Response {
    const total = Math.round(micros() - start);
    record.status = response.status;
    record.latency_us = {
      total,
      waf: upstreamUs === null ? total : Math.max(0, total - upstreamUs),
      upstream: upstreamUs,
    };
    accessLog.push(record);
    return response;
  }

  async function forward(
    req: Request,
    site: CompiledSite,
    record: AccessRecord,
    chain: Chain,
    plan: BodyPlan,
    pathAndQuery: string,
    headers: HeaderPairs,
    start: number,
  ): Promise<Response> {
    const replayable = plan.kind !== "streaming";
    const body =
      (plan.kind === "buffered" ? plan.bytes : plan.kind === "streaming" ? plan.body : undefined) as
        | BodyInit
        | undefined;
    let upstream: Upstream | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      upstream = site.pool.pick(upstream);
      record.upstream = upstream.origin;
      const t0 = micros();
      let deadline: ReturnType<typeof deadlines.start> | undefined;
      try {
        // Checked here rather than in probe() so the usual request pays no extra await.
        if (clock.now() - upstream.lastOkAt >= POOL_IDLE_MS) {
          await probe(upstream, site.connectTimeoutMs);
        }
        deadline = deadlines.start(site.responseTimeoutMs);
        const res = await fetch(upstream.origin + pathAndQuery, {
          method: req.method,
          headers,
          body,
          client,
          redirect: "manual",
          signal: deadline.signal,
        });
        deadlines.clear(deadline);
        const upstreamUs = Math.round(micros() - t0);
        site.pool.ok(upstream);
        chain.add("upstream", String(res.status));
        const length = res.headers.get("content-length");
        record.bytes_out = length === null ? null : Number(length);
        const out = new Response(NO_BODY_STATUS.has(res.status) ? null : res.body, {
          status: res.status,
          statusText: res.statusText,
          headers: downstreamHeaders(res.headers, record.trace_id),
        });
        const final = deps.protection
          ? deps.protection.respond(req, site, record, chain, pathAndQuery, out)
          : out;
        return finish(record, start, final, upstreamUs);
      } catch (err) {
        if (deadline) deadlines.clear(deadline);
        const upstreamUs = Math.round(micros() - t0);
        if (plan.kind === "streaming" && plan.progress.exceeded) {
          chain.add("body_limit", "exceeded");
          record.action = "block";
          return finish(record, start, tooLarge(req, record.trace_id), upstreamUs);
        }
        // The client's body broke off mid-stream: its fault, not the upstream's.
        if (plan.kind === "streaming" && plan.progress.failed) {
          chain.add("body", "unreadable");
          return finish(record, start, unreadableBody(req, record.trace_id), upstreamUs);
        }
        site.pool.fail(upstream);
        if (isTimeout(err)) {
          chain.add("upstream", "timeout");
          return finish(
            record,
            start,
            statusPage(
              req,
              504,
              "UPSTREAM_TIMEOUT",
              "The site did not answer in time",
              "The server behind this address did not answer in time. Try again later.",
              record.trace_id,
            ),
            upstreamUs,
          );
        }
        chain.add("upstream", "unreachable");
        logger.debug("upstream failed", {
          trace_id: record.trace_id,
          upstream: upstream.origin,
          error: err instanceof Error ? err.message : String(err),
        });
        // Another upstream gets one try when the request can be sent again.
        if (replayable && site.pool.upstreams.length > 1 && attempt === 0) continue;
        return finish(record, start, badGateway(req, record.trace_id), upstreamUs);
      }
    }
    return finish(record, start, badGateway(req, record.trace_id));
  }

  const handle: ProxyHandler = async (req, peer, proto) => {
    const start = micros();
    const traceId = deps.traceId();
    const current = policy.current;
    const { authority, path, query } = splitUrl(req.url);
    const hostHeader = req.headers.get("host") ?? authority;
    const record: AccessRecord = {
      trace_id: traceId,
      time: clock.now(),
      site_id: null,
      site: null,
      client_ip: peer,
      peer_ip: peer,
      proto,
      method: req.method,
      host: hostHeader,
      path,
      query,
      user_agent: req.headers.get("user-agent"),
      status: 0,
      action: "pass",
      chain: [],
      finding: null,
      findings: 0,
      upstream: null,
      bytes_in: null,
      bytes_out: null,
      latency_us: { total: 0, waf: 0, upstream: null },
    };
    const chain = new Chain(record.chain, start);
    try {
      const site = current.match(hostHeader);
      if (!site) {
        chain.add("site", "none");
        return finish(record, start, noSitePage(req, traceId));
      }
      record.site_id = site.id;
      record.site = site.name;
      record.client_ip = clientAddress(peer, req.headers, site.trustedProxies);
      chain.add("site", "match");
      // One copy of the headers serves the protection controls and the engine.
      const headerList: Array<[string, string]> = [];
      req.headers.forEach((v, k) => headerList.push([k, v]));
      const engineReq: { -readonly [K in keyof EngineRequest]: EngineRequest[K] } = {
        method: req.method,
        path,
        query,
        headers: headerList,
        body: undefined,
      };
      if (deps.protection) {
        const answer = await deps.protection.pre(req, site, record, chain, current, engineReq);
        if (answer) return finish(record, start, answer);
      }

      const plan = await planBody(req, site.maxBodyBytes, site.inspectBodyBytes);
      if (plan.kind === "too_large") {
        chain.add("body_limit", "exceeded");
        record.action = "block";
        return finish(record, start, tooLarge(req, traceId));
      }
      if (plan.kind === "unreadable") {
        chain.add("body", "unreadable");
        return finish(record, start, unreadableBody(req, traceId));
      }
      if (plan.kind === "buffered") record.bytes_in = plan.bytes.length;
      else if (plan.kind === "streaming") {
        const declared = req.headers.get("content-length");
        record.bytes_in = declared === null ? null : Number(declared);
        plan.progress.onEnd = (n) => record.bytes_in = n;
      } else record.bytes_in = 0;

      if (site.mode === "off") {
        chain.add("engine", "off");
      } else {
        engineReq.body = plan.kind === "buffered"
          ? plan.bytes
          : plan.kind === "streaming"
          ? plan.prefix.subarray(0, site.inspectBodyBytes)
          : undefined;
        if (deps.protection) {
          const answer = await deps.protection.custom(req, site, record, chain, current, engineReq);
          if (answer) {
            if (plan.kind === "streaming") plan.body.cancel().catch(() => {});
            return finish(record, start, answer);
          }
        }
        const raw = inspect(engineReq, { level: site.level });
        const inspection = deps.protection
          ? deps.protection.engine(site, record, chain, current, path, raw)
          : raw;
        record.findings = inspection.findings.length;
        record.finding = findingRecord(inspection);
        const blocking = inspection.blocking;
        if (blocking && site.mode === "block") {
          chain.add("engine", "block", blocking.ruleId);
          record.action = "block";
          if (plan.kind === "streaming") plan.body.cancel().catch(() => {});
          const page = deps.protection
            ? deps.protection.blockPage(req, traceId, current)
            : renderBlockPage(req, traceId);
          return finish(record, start, page);
        }
        if (blocking) {
          chain.add("engine", "log", blocking.ruleId);
          record.action = "log";
        } else chain.add("engine", "pass");
      }

      const trustedPeer = site.trustedProxies.size > 0 && site.trustedProxies.has(peer);
      const headers = upstreamHeaders(req.headers, { peer, trustedPeer, proto, host: hostHeader });
      const pathAndQuery = query === "" ? path : `${path}?${query}`;
      if (req.headers.get("upgrade")?.toLowerCase() === "websocket") {
        return await webSocket(req, site, record, chain, pathAndQuery, headers, start);
      }
      if (deps.protection) {
        const cached = deps.protection.cached(req, site, record, chain, current, pathAndQuery);
        if (cached) {
          if (plan.kind === "streaming") plan.body.cancel().catch(() => {});
          return finish(record, start, cached);
        }
      }
      return await forward(req, site, record, chain, plan, pathAndQuery, headers, start);
    } catch (err) {
      logger.error("data plane request failed", { trace_id: traceId, error: err as Error });
      chain.add("proxy", "error");
      return finish(
        record,
        start,
        statusPage(
          req,
          500,
          "INTERNAL",
          "Something went wrong",
          "The firewall could not handle this request. Quote the trace id when you report it.",
          traceId,
        ),
      );
    }
  };

  async function webSocket(
    req: Request,
    site: CompiledSite,
    record: AccessRecord,
    chain: Chain,
    pathAndQuery: string,
    headers: HeaderPairs,
    start: number,
  ): Promise<Response> {
    const upstream = site.pool.pick();
    record.upstream = upstream.origin;
    const t0 = micros();
    try {
      const traceHeader = new Headers({ "x-waf-trace-id": record.trace_id });
      const res = await passWebSocket(
        req,
        upstream.wsOrigin + pathAndQuery,
        headers,
        site.connectTimeoutMs,
        traceHeader,
      );
      site.pool.ok(upstream);
      chain.add("upstream", "websocket");
      return finish(record, start, res, Math.round(micros() - t0));
    } catch (err) {
      site.pool.fail(upstream);
      chain.add("upstream", isTimeout(err) ? "timeout" : "unreachable");
      return finish(record, start, badGateway(req, record.trace_id), Math.round(micros() - t0));
    }
  }

  return {
    handle,
    close: () => {
      deadlines.close();
      client.close();
    },
  };
}

function tooLarge(req: Request, traceId: string): Response {
  return statusPage(
    req,
    413,
    "PAYLOAD_TOO_LARGE",
    "Request body too large",
    "The request body is larger than this site accepts.",
    traceId,
  );
}

function unreadableBody(req: Request, traceId: string): Response {
  return statusPage(
    req,
    400,
    "BODY_UNREADABLE",
    "The request body could not be read",
    "The request body ended early or was not framed correctly. Send the request again.",
    traceId,
  );
}

function badGateway(req: Request, traceId: string): Response {
  return statusPage(
    req,
    502,
    "UPSTREAM_UNREACHABLE",
    "The site is unreachable",
    "The server behind this address could not be reached. Try again later.",
    traceId,
  );
}
