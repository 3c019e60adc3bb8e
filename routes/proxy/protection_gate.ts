/**
 * The protection controls' part of the data-plane connector: runs the pre-body checks, the
 * custom rules and the ALAP adjustments through the runtime, renders their answers (block page,
 * challenge page, 429) and serves the challenge endpoint. `routes/proxy/proxy.ts` calls it at the
 * points the design's request flow names; every answer leaves its entry in the chain.
 */
import { RequestView } from "../../engine/request_view.ts";
import type { EngineRequest, Inspection } from "../../engine/types.ts";
import type { AccessRecord } from "../../mod/data_plane/access_record.ts";
import type { Clock } from "../../mod/core/clock.ts";
import { type CompiledPolicy, type CompiledSite, hostOf } from "../../mod/data_plane/policy.ts";
import type { CompiledProtection } from "../../mod/protection/protection_compile.ts";
import {
  type ChainSink,
  CLEARANCE_COOKIE,
  type ProtectionRuntime,
} from "../../mod/protection/protection_runtime.ts";
import { type Random, randomHex } from "../../mod/core/random.ts";
import { renderBlockPage } from "./block_page.ts";
import { CHALLENGE_PATH, challengePage, safeReturn } from "./challenge_page.ts";
import { statusPage } from "./status_page.ts";
import type { EdgeResponder } from "./edge_response.ts";
import { claimedCrawler, type GoodBotVerifier } from "../../mod/protection/good_bots.ts";

export interface GateDeps {
  readonly runtime: ProtectionRuntime;
  readonly clock: Clock;
  readonly random: Random;
  /** Renders the configured block page (custom or built-in template). */
  readonly blockPage?: (req: Request, traceId: string, p: CompiledProtection) => Response;
  /** Reverse-DNS verification of claimed search-engine crawlers. */
  readonly goodBots?: GoodBotVerifier;
  /** Edge work on responses (header rules, cache, compression). */
  readonly edge?: EdgeResponder;
  /** The protection in force now, for response-side work that runs after the request's checks. */
  readonly current?: () => CompiledProtection | undefined;
  /** Receives the engine's findings for ALAP (never blocks the request). */
  readonly observe?: (
    site: CompiledSite,
    record: AccessRecord,
    inspection: Inspection,
    p: CompiledProtection,
  ) => void;
}

const FORM = /^application\/x-www-form-urlencoded\b/i;
const MAX_REPLAY = 64 * 1024;
const MAX_VERIFY_BODY = 8 * 1024;

export function createProtectionGate(deps: GateDeps) {
  const { runtime } = deps;

  function block(req: Request, traceId: string, p: CompiledProtection): Response {
    return deps.blockPage ? deps.blockPage(req, traceId, p) : renderBlockPage(req, traceId);
  }

  async function challenge(
    req: Request,
    record: AccessRecord,
    difficulty: number,
    path: string,
    query: string,
  ): Promise<Response> {
    const ua = req.headers.get("user-agent") ?? "";
    const puzzle = runtime.issuer(difficulty, 60).issue(
      runtime.newNonce(),
      record.client_ip,
      ua,
      deps.clock.now(),
    );
    let replay: string | undefined;
    if (req.method === "POST" && FORM.test(req.headers.get("content-type") ?? "")) {
      const declared = Number(req.headers.get("content-length") ?? "0");
      if (declared <= MAX_REPLAY) {
        const text = await req.text().catch(() => "");
        if (text.length <= MAX_REPLAY) replay = text;
      }
    }
    record.action = "challenge";
    return challengePage({
      token: puzzle.token,
      nonce: puzzle.nonce,
      difficulty: puzzle.difficulty,
      returnTo: query === "" ? path : `${path}?${query}`,
      replay,
      traceId: record.trace_id,
      cspNonce: randomHex(deps.random, 12),
    });
  }

  /** `POST /.well-known/waf/challenge`: checks the answer, sets the clearance, sends back. */
  async function verify(
    req: Request,
    record: AccessRecord,
    chain: ChainSink,
    p: CompiledProtection,
  ): Promise<Response> {
    const text = (await req.text().catch(() => "")).slice(0, MAX_VERIFY_BODY);
    const form = new URLSearchParams(text);
    const ua = req.headers.get("user-agent") ?? "";
    const now = deps.clock.now();
    const ret = safeReturn(form.get("ret"));
    const result = runtime.verify(
      form.get("token") ?? "",
      form.get("answer") ?? "",
      record.client_ip,
      ua,
      now,
    );
    if (!result.ok) {
      chain.add("bot", `verify:${result.reason}`);
      record.action = "block";
      return statusPage(
        req,
        403,
        "CHALLENGE_FAILED",
        "Verification failed",
        "The browser check did not succeed. Reload the page to try again.",
        record.trace_id,
      );
    }
    const clearance = runtime.clearance(p, record.site_id ?? "", ret, record.client_ip, ua, now);
    chain.add("bot", "verified");
    const maxAge = Math.max(1, Math.floor((clearance.expiresAt - now) / 1000));
    return new Response(null, {
      status: 303,
      headers: {
        location: ret,
        "cache-control": "no-store",
        "x-waf-trace-id": record.trace_id,
        "set-cookie":
          `${CLEARANCE_COOKIE}=${clearance.value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax`,
      },
    });
  }

  return {
    /** Pre-body checks; a Response ends the request, undefined lets it continue. */
    async pre(
      req: Request,
      site: CompiledSite,
      record: AccessRecord,
      chain: ChainSink,
      policy: CompiledPolicy,
      request: EngineRequest,
    ): Promise<Response | undefined> {
      const p = policy.protection;
      if (!p) return undefined;
      const { path, query } = request;
      if (path === CHALLENGE_PATH && req.method === "POST") {
        return await verify(req, record, chain, p);
      }
      if (!runtime.hasPre(p)) return undefined;
      const view = new RequestView(request, hostOf(record.host));
      let verifiedBot = false;
      if (
        deps.goodBots !== undefined && p.bot.length > 0 &&
        runtime.wantsBotVerification(p, site.id, path)
      ) {
        const ua = view.header("user-agent") ?? null;
        verifiedBot = claimedCrawler(ua) !== undefined &&
          await deps.goodBots.verify(record.client_ip, ua);
      }
      const v = runtime.pre(
        p,
        { siteId: site.id, clientIp: record.client_ip, view, verifiedBot },
        chain,
      );
      switch (v.kind) {
        case "pass":
          return undefined;
        case "block":
          record.action = "block";
          return block(req, record.trace_id, p);
        case "challenge":
          return await challenge(req, record, v.difficulty, path, query);
        case "rate_limited": {
          record.action = "block";
          const res = statusPage(
            req,
            429,
            "RATE_LIMITED",
            "Too many requests",
            "This client sent too many requests. Wait a moment and try again.",
            record.trace_id,
          );
          res.headers.set("retry-after", String(v.retryAfterSeconds));
          return res;
        }
      }
    },

    /** Custom regex rules over the inspected request (body prefix included). */
    async custom(
      req: Request,
      site: CompiledSite,
      record: AccessRecord,
      chain: ChainSink,
      policy: CompiledPolicy,
      engineReq: EngineRequest,
    ): Promise<Response | undefined> {
      const p = policy.protection;
      if (!p || p.custom.size === 0) return undefined;
      const view = new RequestView(engineReq, hostOf(record.host));
      const v = runtime.custom(p, { siteId: site.id, clientIp: record.client_ip, view }, chain);
      if (v.kind === "pass") return undefined;
      if (v.kind === "block") {
        record.action = "block";
        return block(req, record.trace_id, p);
      }
      return await challenge(req, record, 16, engineReq.path, engineReq.query);
    },

    /** ALAP exceptions and signature blocks around the engine's verdict; feeds ALAP. */
    engine(
      site: CompiledSite,
      record: AccessRecord,
      chain: ChainSink,
      policy: CompiledPolicy,
      path: string,
      inspection: Inspection,
    ): Inspection {
      const p = policy.protection;
      if (!p) return inspection;
      if (inspection.findings.length > 0) deps.observe?.(site, record, inspection, p);
      const adjusted = runtime.adjust(p, site.id, path, inspection, chain);
      return adjusted.blocking === inspection.blocking
        ? inspection
        : { ...inspection, blocking: adjusted.blocking };
    },

    /** A cached response for the request (checked after every protection control passed). */
    cached(
      req: Request,
      site: CompiledSite,
      record: AccessRecord,
      chain: ChainSink,
      policy: CompiledPolicy,
      pathAndQuery: string,
    ): Response | undefined {
      const p = policy.protection;
      if (!p || !deps.edge) return undefined;
      return deps.edge.lookup(req, p, site, record, chain, record.path, pathAndQuery);
    },

    /** Header rules, cache capture and compression of an upstream response. */
    respond(
      req: Request,
      site: CompiledSite,
      record: AccessRecord,
      chain: ChainSink,
      pathAndQuery: string,
      res: Response,
    ): Response {
      const p = deps.current?.();
      if (!p || !deps.edge) return res;
      return deps.edge.respond(req, p, site, record, chain, record.path, pathAndQuery, res);
    },

    /** The configured block page for an engine block. */
    blockPage(req: Request, traceId: string, policy: CompiledPolicy): Response {
      return policy.protection
        ? block(req, traceId, policy.protection)
        : renderBlockPage(req, traceId);
    },
  };
}

export type ProtectionGate = ReturnType<typeof createProtectionGate>;
