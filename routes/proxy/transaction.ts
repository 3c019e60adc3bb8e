/**
 * One data-plane request as a transaction, the way Coraza's is: it carries everything the
 * request needs - the policy snapshot taken once when it starts (every phase, the response phase
 * included, uses that snapshot), its one request view, its trace id, access-log record and check
 * chain - and runs the phases in one visible order (see {@link Transaction.run}):
 *
 * 1. request headers: site match; IP lists and applied ALAP blocks, ACL, threat intelligence,
 *    bot policy, global rate limit ({@link headerChecks}); the challenge endpoint;
 * 2. request body: the body within the site's limits, custom rules, the semantic engine and ALAP;
 * 3. upstream: the edge cache, a WebSocket, or the site's upstream (one retry when replayable);
 * 4. response: the edge's header rules, cache capture and compression.
 *
 * A phase ends the transaction early by returning a response (a block, challenge, limit or error
 * page). Every request leaves one access-log record in the in-memory queue ({@link finish} is the
 * one exit); nothing here touches SQLite, and nothing throws: a failure becomes a status page
 * with the trace id.
 */
import {
  ACME_CHALLENGE_PREFIX,
  type AcmeChallenges,
} from "../../mod/data_plane/acme_challenges.ts";
import type {
  EngineRequest,
  Finding,
  Inspection,
  InspectOptions,
  Level,
} from "../../engine/mod.ts";
import { type IpAddress, parseIp } from "../../engine/ip_address.ts";
import type { PathProblem } from "../../engine/path_normalize.ts";
import { RequestView } from "../../engine/request_view.ts";
import { blocksAt, inspect } from "../../engine/inspect.ts";
import type { CompiledDiscovery, CompiledSchema } from "../../mod/apisec/apisec_compile.ts";
import type { ApiSecRuntime } from "../../mod/apisec/apisec_runtime.ts";
import { findSchema, jsonKeys, violations } from "../../mod/apisec/apisec_validate.ts";
import type { Clock } from "../../mod/core/clock.ts";
import type { Logger } from "../../mod/core/logger.ts";
import type { AccessLog } from "../../mod/access_log/access_log.ts";
import { inspectSliced, type SliceOptions } from "../../mod/data_plane/inspect_sliced.ts";
import {
  type AccessRecord,
  ArrivingRecord,
  Chain,
  type FindingRecord,
  micros,
  safeEvidence,
} from "../../mod/access_log/record.ts";
import {
  type CompiledPolicy,
  type CompiledSite,
  hostOf,
  type Policy,
} from "../../mod/data_plane/policy.ts";
import type { Upstream } from "../../mod/data_plane/upstream_pool.ts";
import type { Alap } from "../../mod/protection/alap.ts";
import { claimedCrawler, type GoodBotVerifier } from "../../mod/protection/good_bots.ts";
import type { CompiledProtection } from "../../mod/protection/protection_compile.ts";
import {
  type ChainSink,
  type CheckRequest,
  PASS,
  type PreVerdict,
  type ProtectionRuntime,
  TRUSTED,
} from "../../mod/protection/protection_runtime.ts";
import { blockPage } from "./block_page.ts";
import { challengeAnswer, type ChallengeDeps, verifyAnswer } from "./challenge.ts";
import { CHALLENGE_PATH } from "./challenge_page.ts";
import { edgeIdle, type EdgeResponder } from "./edge_response.ts";
import {
  clientAddress,
  downstreamHeaders,
  type ForwardFacts,
  headerOf,
  type HeaderPairs,
  upstreamHeaders,
} from "./forwarding.ts";
import { DirectAnswer, framedPairs, ownHeaderPairs } from "../../net/direct_answer.ts";
import { UpstreamProtocolError } from "../../net/upstream/http1_parse.ts";
import { type BodyPlan, mayHaveBody, NO_BODY, planBody } from "./request_body.ts";
import { startTail, type TailJudge } from "./body_tail.ts";
import {
  decodeBody,
  type DecodedBody,
  isEncrypted,
  isIdentity,
  sentText,
  unsupportedCharset,
} from "./body_encoding.ts";
import {
  badGatewayPage,
  gatewayTimeoutPage,
  internalErrorPage,
  noSitePage,
  type PageAnswer,
  type PageText,
  rateLimitedPage,
  statusPage,
  tooLargePage,
  unauthorizedPage,
  unreadableBodyPage,
  unsupportedCharsetPage,
} from "./status_page.ts";
import {
  isTimeout,
  upstreamCause,
  type UpstreamClient,
  type UpstreamRequest,
} from "../../net/upstream/upstream_client.ts";
import { passWebSocket, webSocketKeepsPath } from "./websocket.ts";

/** The protection controls' per-process parts the transaction calls. */
export interface ProtectionControls extends ChallengeDeps {
  /** Edge work on responses: header rules, the cache, compression. */
  readonly edge: EdgeResponder;
  /** Reverse-DNS verification of claimed search-engine crawlers. */
  readonly goodBots?: GoodBotVerifier;
  /** Receives the engine's findings for ALAP scoring (never blocks the request). */
  readonly alap?: Pick<Alap, "observe">;
}

/** What every transaction shares: built once per process by `createProxy`. */
export interface ProxyContext {
  /** The policy in force; a transaction reads it once, when it starts. */
  readonly policy: Pick<Policy, "current">;
  /** A fresh trace id per transaction. */
  readonly traceId: () => string;
  readonly accessLog: Pick<AccessLog, "push">;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly upstream: UpstreamClient;
  /** Absent when the data plane runs without protection controls (benchmarks, some tests). */
  readonly protection: ProtectionControls | undefined;
  /** API security's per-process state; absent when the data plane runs without it. */
  readonly apisec?: ApiSecRuntime;
  /** Pending ACME HTTP-01 answers; absent when the data plane runs without them. */
  readonly acme?: AcmeChallenges;
}

/**
 * What a phase returns: at once when it needed to wait for nothing (the common case: no `await`,
 * so no promise and no event-loop hop), else a promise.
 */
type Maybe<T> = T | Promise<T>;

/** The engine's options per level, built once. */
/** Whether ALAP has exceptions or signature blocks that can change the engine's verdict. */
function alapAdjusts(p: CompiledProtection): boolean {
  return p.alapExceptions.length > 0 || p.alapSignatures.length > 0;
}

const INSPECT_OPTIONS: Readonly<Record<Level, InspectOptions>> = {
  strict: { level: "strict" },
  balanced: { level: "balanced" },
  low: { level: "low" },
};

/** The answer to a WebSocket handshake whose path the upstream would receive changed. */
const WEBSOCKET_PATH: PageText = {
  status: 400,
  code: "WEBSOCKET_PATH",
  title: "WebSocket path not accepted",
  message: "A WebSocket path may not contain dot segments or backslashes.",
};
/** The answer to a path no upstream reading makes unambiguous (refused at `balanced`). */
const AMBIGUOUS_PATH: PageText = {
  status: 400,
  code: "PATH_AMBIGUOUS",
  title: "Request path not accepted",
  message: "The request path has a form that servers read differently.",
};
/** Why, as the page says it (the access log names the problem itself: `path.<problem>`). */
const AMBIGUOUS_REASON: Readonly<Record<PathProblem, string>> = {
  nul: "The request path contains a NUL byte.",
  overlong_utf8: "The request path contains an overlong UTF-8 sequence.",
  encoded_slash: "The request path has an encoded slash beside a dot segment.",
};
/** The challenge difficulty of a custom rule whose action is `challenge`. */
const CUSTOM_RULE_DIFFICULTY = 16;
const NO_BODY_STATUS: ReadonlySet<number> = new Set([101, 204, 205, 304]);
const ignore = () => {};
/** Discovery's samples share this for "no names" instead of a new empty list each. */
const NO_NAMES: readonly string[] = Object.freeze([]);
const nameOf = (pair: readonly [string, string]) => pair[0];

/**
 * The request-header checks in their one order. An allow entry (IP list or ACL) trusts the
 * client and skips the checks after the ACL; an ACL block still stops an allow-listed address.
 * They read the request line and headers only (the view caches each part at its first read, and
 * the body prefix is attached later, for phase 2).
 */
export function headerChecks(
  rt: ProtectionRuntime,
  p: CompiledProtection,
  req: CheckRequest,
  chain: ChainSink,
): PreVerdict {
  const listed = rt.ipLists(p, req, chain);
  if (listed !== undefined && listed.kind !== "pass") return listed;
  const acl = rt.acl(p, req, chain);
  if (acl !== undefined && acl.kind !== "pass") return acl;
  if (listed !== undefined || acl !== undefined) return TRUSTED;
  // API security (route limits, tokens) follows in the transaction's `apiSecurity()`, right
  // after the global rate limit; it applies to allow-listed clients too (docs/api-security.md).
  return rt.threatIntel(p, req, chain) ?? rt.bot(p, req, chain) ??
    rt.rateLimit(p, req, chain) ?? PASS;
}

function findingRecord(inspection: Inspection): FindingRecord | null {
  const f = inspection.blocking ?? inspection.findings[0];
  return f ? recordOf(f) : null;
}

function recordOf(f: Finding): FindingRecord {
  return {
    class: f.class,
    confidence: f.confidence,
    score: f.score,
    location: f.location,
    // Masked here, not only when stored: the record also reaches the realtime events.
    evidence: safeEvidence(f.location, f.evidence),
    rule: f.ruleId,
  };
}

/**
 * One request's transaction. It is itself what the checks see ({@link CheckRequest}), what the
 * forwarding headers are built from ({@link ForwardFacts}) and what the upstream client sends
 * ({@link UpstreamRequest}), so no per-request copies of those are made. `createProxy` builds
 * the {@link ProxyContext} once and runs one transaction per request.
 *
 * @example
 * ```ts
 * import { FakeClock } from "../../mod/core/clock.ts";
 * import { createMemoryLogger } from "../../mod/core/logger.ts";
 * import { compilePolicy } from "../../mod/data_plane/policy.ts";
 * import { createHttp1Upstream } from "../../net/upstream/http1_client.ts";
 * import { type ProxyContext, Transaction } from "./transaction.ts";
 *
 * const clock = new FakeClock(1_700_000_000_000);
 * const upstream = createHttp1Upstream();
 * const ctx: ProxyContext = {
 *   policy: { current: compilePolicy([], clock, 1) }, // no site yet
 *   traceId: () => "5d0c8e6f0b1a4c2e9f7a3b6d8e1c4f2a",
 *   accessLog: {
 *     push(record) {
 *       console.log(record.status, record.chain[0]?.result); // 404 "none"
 *       return true;
 *     },
 *   },
 *   clock,
 *   logger: createMemoryLogger(),
 *   upstream,
 *   protection: undefined,
 * };
 * const tx = new Transaction(ctx, new Request("http://shop.example/"), "203.0.113.9", "http");
 * const answer = await tx.run(); // the record is queued at the one exit, `finish()`
 * answer.status; // 404: no site serves shop.example
 * tx.record.trace_id; // "5d0c8e6f0b1a4c2e9f7a3b6d8e1c4f2a", also in the page's X-WAF-Trace-Id
 * upstream.close();
 * ```
 */
export class Transaction implements CheckRequest, ForwardFacts, UpstreamRequest {
  readonly #ctx: ProxyContext;
  readonly req: Request;
  readonly peer: string;
  readonly proto: "http" | "https";
  /** The policy snapshot every phase uses. */
  readonly policy: CompiledPolicy;
  readonly protection: CompiledProtection | undefined;
  readonly record: AccessRecord;
  readonly chain: Chain;
  readonly #start: number;
  /** The Host header (or the URL's authority), as the client sent it. */
  readonly host: string;
  readonly path: string;
  readonly query: string;
  readonly pathAndQuery: string;
  readonly method: string;
  /** The request as the engine and the rule checks see it; the body prefix joins in phase 2. */
  readonly #request: { -readonly [K in keyof EngineRequest]: EngineRequest[K] };
  #view: RequestView | undefined = undefined;
  #site: CompiledSite | undefined = undefined;
  #plan: BodyPlan | undefined = undefined;
  /**
   * A body whose Content-Encoding could not be decoded, or that decoded into padding past the
   * inspected prefix: a protocol finding for the verdict.
   */
  #encodingFinding: Finding | undefined = undefined;
  /** For an encoded body, whether the engine's bytes are the whole decoded body. */
  #decodedWhole: boolean | undefined = undefined;
  /** For a decoded body, the inspected bytes as sent (judged too: see `engineBoth`). */
  #rawBody: Uint8Array | undefined = undefined;
  /** For a decoded body, its coding (the tail of the body is decoded with it). */
  #coding: string | undefined = undefined;
  /** Judges the body past the prefix the engine read whole (`startTail`). */
  #tail: TailJudge | undefined = undefined;
  /** The API schema entry that applies to this request (found in phase 1, checked in phase 2). */
  #schema: CompiledSchema | undefined = undefined;
  /** The methods (request line and overrides) the ACL saw in phase 1, when it ran. */
  #headerMethods: readonly string[] | undefined = undefined;
  /** The methods API security saw in phase 1, when it ran. */
  #apiMethods: readonly string[] | undefined = undefined;
  /** Set once the body was handed to the upstream (otherwise an early answer discards it). */
  #bodySent = false;
  /** The request came from the own HTTP/1.1 server, which takes a {@link DirectAnswer}. */
  readonly #direct: boolean;
  #upstreamUs: number | null = null;

  // CheckRequest
  siteId = "";
  clientIp: string;
  ip: IpAddress | undefined = undefined;
  readonly now: number;
  verifiedBot = false;

  // ForwardFacts and UpstreamRequest
  trustedPeer = false;
  upstreamHeaders: HeaderPairs = [];
  upstreamBody: BodyInit | undefined = undefined;
  connectTimeoutMs = 0;
  responseTimeoutMs = 0;

  /**
   * Starts one request's transaction on the policy in force now, with a fresh trace id.
   *
   * @param ctx what every transaction of the process shares
   * @param req the request (a `Request`, or the own HTTP/1.1 server's `IncomingRequest`)
   * @param peer the TCP peer's address
   * @param proto how the client reached the data plane
   */
  constructor(ctx: ProxyContext, req: Request, peer: string, proto: "http" | "https") {
    this.#start = micros();
    this.#ctx = ctx;
    this.req = req;
    this.peer = peer;
    this.proto = proto;
    const policy = ctx.policy.current;
    this.policy = policy;
    this.protection = policy.protection;
    this.method = req.method;
    // `scheme://authority/path?query`, split without a URL object.
    const url = req.url;
    const authorityStart = url.indexOf("//") + 2;
    let pathStart = url.indexOf("/", authorityStart);
    if (pathStart < 0) pathStart = url.length;
    const q = url.indexOf("?", pathStart);
    const path = (q < 0 ? url.slice(pathStart) : url.slice(pathStart, q)) || "/";
    const query = q < 0 ? "" : url.slice(q + 1);
    // The checks, the engine and the upstream headers read one list of pairs: the own server's
    // parsed pairs as they are, or one copy of a `Request`'s headers (`forEach` with a closure,
    // cheaper than the pair iterator; docs/data-plane.md, "The transaction").
    let headers = ownHeaderPairs(req);
    this.#direct = headers !== undefined;
    if (headers === undefined) {
      const copy: HeaderPairs = [];
      req.headers.forEach((v, k) => copy.push([k, v]));
      headers = copy;
    }
    this.#request = { method: this.method, path, query, headers, body: undefined };
    this.host = headerOf(headers, "host") ?? url.slice(authorityStart, pathStart);
    this.path = path;
    this.query = query;
    // With a query the path is never empty (it starts at a `/`), so the target is the URL's
    // rest as it is: a slice of it, not a new string that the upstream client would flatten.
    this.pathAndQuery = q < 0 ? path : query === "" ? path : url.slice(pathStart);
    this.clientIp = peer;
    this.now = ctx.clock.now();
    this.record = new ArrivingRecord(this, ctx.traceId(), headerOf(headers, "user-agent") ?? null);
    this.chain = new Chain(this.record.chain, this.#start);
  }

  /**
   * How a large body's inspection is paced: the context itself, whose clock the inspection's
   * deadline is read on (no options object a request).
   */
  get #pace(): SliceOptions {
    return this.#ctx;
  }

  /**
   * The request view of the rule checks, built at its first use (once per request, after the
   * site match: its path is read as the site's `upstream_kind` reads it).
   */
  get view(): RequestView {
    return this.#view ??= new RequestView(
      this.#request,
      hostOf(this.host),
      this.#site?.upstreamKind,
    );
  }

  /**
   * Runs the phases in order; never throws. An upstream's answer to a request of the own server
   * is a {@link DirectAnswer} unless the edge works on it; everything else is a `Response`.
   *
   * @returns the answer to write: a page, the edge's `Response`, or the upstream's answer
   */
  async run(): Promise<Response | DirectAnswer> {
    try {
      let early = this.requestHeaders();
      if (early instanceof Promise) early = await early;
      if (early === undefined) {
        early = this.requestBody();
        if (early instanceof Promise) early = await early;
      }
      if (early !== undefined) return this.finish(early);
      const res = await this.upstream();
      return this.finish(res instanceof DirectAnswer ? this.response(res) : res);
    } catch (err) {
      this.#ctx.logger.error("data plane request failed", {
        trace_id: this.record.trace_id,
        error: err as Error,
      });
      this.chain.add("proxy", "error");
      return this.finish(internalErrorPage(this.req, this.record.trace_id));
    }
  }

  /** Phase 1: site match, the challenge endpoint, the request-header checks, API security. */
  private requestHeaders(): Maybe<PageAnswer | undefined> {
    const { req, record, chain } = this;
    const site = this.policy.match(this.host);
    if (!site) {
      chain.add("site", "none");
      return noSitePage(req, record.trace_id);
    }
    this.#site = site;
    record.site_id = site.id;
    record.site = site.name;
    record.client_ip = clientAddress(this.peer, req.headers, site.trustedProxies);
    this.clientIp = record.client_ip;
    chain.add("site", "match");
    if (this.#ctx.acme !== undefined && this.path.startsWith(ACME_CHALLENGE_PREFIX)) {
      const answer = this.#ctx.acme.answer(
        hostOf(this.host),
        this.path.slice(ACME_CHALLENGE_PREFIX.length),
      );
      if (answer !== undefined) {
        // The CA validating an order of this site's host: before any protection check.
        chain.add("acme", "answered");
        return new Response(answer, { headers: { "content-type": "text/plain" } });
      }
    }
    const refused = this.pathCheck(site);
    if (refused !== undefined) return refused;
    const early = this.protectionHeaders(site);
    if (early instanceof Promise) return early.then((r) => r ?? this.apiSecurity(site));
    return early ?? this.apiSecurity(site);
  }

  /**
   * A path that no reading makes unambiguous (a NUL, an overlong UTF-8 form, an encoded slash
   * beside a dot segment): refused in block mode at `balanced` and `strict`, with the block page
   * when the engine finds an attack in the request line or headers and with 400 otherwise;
   * elsewhere recorded (`monitor`: action `log`), and the controls judge it decoded as far as it
   * goes.
   */
  private pathCheck(site: CompiledSite): PageAnswer | undefined {
    const problem = this.view.normalPath.problem;
    if (problem === undefined) return undefined;
    const { record, chain } = this;
    record.findings++;
    record.finding = {
      class: "lfi",
      confidence: "high",
      score: 90,
      location: "path",
      evidence: safeEvidence("path", this.path),
      rule: `path.${problem}`,
    };
    if (site.mode === "block" && site.level !== "low") {
      chain.add("path", "refused", problem);
      record.action = "block";
      // An attack the path carries (`/%2Fimg%2F..%2F..%2Fetc%2Fpasswd`) is answered as the
      // attack, with the engine's finding: the 400 says only that servers read the path
      // differently, and a client counting blocks by their status sees it as let through.
      const attack = inspect(this.#request, INSPECT_OPTIONS[site.level]);
      let blocking = attack.blocking;
      const p = this.protection;
      const controls = this.#ctx.protection;
      // An ALAP exception of the rule leaves the refusal a plain 400, as it would leave the request.
      if (
        blocking !== undefined && p !== undefined && controls !== undefined && alapAdjusts(p)
      ) blocking = controls.runtime.adjust(p, site, this, attack).blocking;
      if (blocking !== undefined) {
        record.findings += attack.findings.length;
        record.finding = recordOf(blocking);
        chain.add("engine", "block", blocking.ruleId);
        return blockPage(this.req, record.trace_id, p);
      }
      return statusPage(this.req, AMBIGUOUS_PATH, record.trace_id, AMBIGUOUS_REASON[problem]);
    }
    chain.add("path", "ambiguous", problem);
    if (site.mode === "monitor") record.action = "log";
    return undefined;
  }

  /** The protection controls' header checks ({@link headerChecks}) and the challenge endpoint. */
  private protectionHeaders(site: CompiledSite): Maybe<PageAnswer | undefined> {
    const { req, record } = this;
    const p = this.protection;
    const controls = this.#ctx.protection;
    if (p === undefined || controls === undefined) return undefined;
    if (this.path === CHALLENGE_PATH && req.method === "POST") {
      return verifyAnswer(controls, this, p);
    }
    const rt = controls.runtime;
    if (!rt.hasHeaderChecks(p)) return undefined;
    this.siteId = site.id;
    if (p.acl.size > 0) this.#headerMethods = this.view.methods;
    this.ip = parseIp(record.client_ip);
    const goodBots = controls.goodBots;
    if (
      goodBots !== undefined && p.bot.length > 0 &&
      rt.wantsBotVerification(p, site.id, this.view.normalPath)
    ) {
      return this.verifyBot(goodBots).then(() => this.headerVerdict(controls, p));
    }
    return this.headerVerdict(controls, p);
  }

  /** Whether a client claiming to be a search-engine crawler is one (reverse DNS). */
  private async verifyBot(goodBots: GoodBotVerifier): Promise<void> {
    const ua = this.view.header("user-agent") ?? null;
    this.verifiedBot = claimedCrawler(ua) !== undefined &&
      await goodBots.verify(this.record.client_ip, ua);
  }

  /** The verdict of the request-header checks ({@link headerChecks}). */
  private headerVerdict(
    controls: ProtectionControls,
    p: CompiledProtection,
  ): Maybe<PageAnswer | undefined> {
    const { req, record, chain } = this;
    const v = headerChecks(controls.runtime, p, this, chain);
    if (v.kind === "pass") return undefined;
    if (v.kind === "challenge") return challengeAnswer(controls, this, v.difficulty);
    record.action = "block";
    return v.kind === "rate_limited"
      ? rateLimitedPage(req, record.trace_id, v.retryAfterSeconds)
      : blockPage(req, record.trace_id, p);
  }

  /**
   * API security's header part, after the global rate limit: the route-level limits (the
   * cheaper check first), the bearer token of a route that needs one, and finding the schema
   * entry whose body part runs in phase 2.
   */
  private apiSecurity(site: CompiledSite): Maybe<PageAnswer | undefined> {
    const a = this.policy.apisec;
    const rt = this.#ctx.apisec;
    if (a === undefined || rt === undefined) return undefined;
    if (a.rateLimits.length === 0 && a.schemas.length === 0 && a.auth.routes.length === 0) {
      return undefined;
    }
    const methods = this.view.methods;
    this.#apiMethods = methods;
    return this.apiRoutes(site, methods, undefined);
  }

  /**
   * Route limits, schema lookup and token of the request's path for `methods` (its own and its
   * overrides'). After the body named more methods, `counted` holds those of phase 1: a limit
   * or token route already in scope of them was applied then and is not applied twice.
   */
  private apiRoutes(
    site: CompiledSite,
    methods: readonly string[],
    counted: readonly string[] | undefined,
  ): Maybe<PageAnswer | undefined> {
    // Only called once `apiSecurity()` found both.
    const a = this.policy.apisec!;
    const rt = this.#ctx.apisec!;
    const { record, chain } = this;
    const path = this.view.normalPath;
    if (a.schemas.length > 0) this.#schema ??= findSchema(a, site.id, methods, path);
    if (a.rateLimits.length > 0) {
      const v = rt.routeLimits(a, {
        siteId: site.id,
        methods,
        path,
        counted,
        clientIp: record.client_ip,
        now: this.now,
      });
      if (v.kind !== "pass") {
        chain.add("api_rate_limit", "limited", v.rule);
        record.action = "block";
        return rateLimitedPage(this.req, record.trace_id, v.retryAfterSeconds);
      }
    }
    if (a.auth.routes.length === 0) return undefined;
    if (counted !== undefined && rt.authRoute(a, site.id, counted, path) !== undefined) {
      return undefined;
    }
    const route = rt.authRoute(a, site.id, methods, path);
    if (route === undefined) return undefined;
    return this.authenticate(a, rt, route);
  }

  /**
   * The method checks again when the body named a method the header phase could not see (a
   * `_method` field): a block or challenge ACL rule, a route limit, a token route or a schema
   * that applies because of it, exactly as if the method had been in the request line.
   */
  private bodyMethods(site: CompiledSite): Maybe<PageAnswer | undefined> {
    const before = this.#apiMethods ?? this.#headerMethods;
    if (before === undefined) return undefined;
    const methods = this.view.methods;
    if (methods.length === before.length) return undefined;
    const added = methods.filter((m) => !before.includes(m));
    const p = this.protection;
    const controls = this.#ctx.protection;
    if (p !== undefined && controls !== undefined && p.acl.size > 0) {
      const v = controls.runtime.aclBodyMethods(p, this, this.chain, added);
      if (v?.kind === "block") {
        this.record.action = "block";
        return blockPage(this.req, this.record.trace_id, p);
      }
      if (v?.kind === "challenge") return challengeAnswer(controls, this, v.difficulty);
    }
    const counted = this.#apiMethods;
    return counted === undefined ? undefined : this.apiRoutes(site, methods, counted);
  }

  /** The bearer token of a route that needs one. */
  private async authenticate(
    a: NonNullable<CompiledPolicy["apisec"]>,
    rt: ApiSecRuntime,
    route: { readonly id: string },
  ): Promise<PageAnswer | undefined> {
    const { record, chain } = this;
    const v = await rt.authenticate(a.auth, this.view.header("authorization"), this.now);
    if (v.ok) {
      chain.add("api_auth", "pass", route.id);
      return undefined;
    }
    chain.add("api_auth", v.reason, route.id);
    record.action = "block";
    return unauthorizedPage(this.req, record.trace_id, v.reason);
  }

  /** Phase 2: the body within the site's limits, custom rules, the semantic engine and ALAP. */
  private requestBody(): Maybe<PageAnswer | undefined> {
    const req = this.req;
    const site = this.#site!;
    const schema = this.#schema;
    // A schema's smaller body limit is enforced while reading, like the site's (block mode only:
    // a monitored site must still receive the body).
    const limit = schema !== undefined && schema.maxBodyBytes > 0 && site.mode === "block"
      ? Math.min(site.maxBodyBytes, schema.maxBodyBytes)
      : site.maxBodyBytes;
    // Most requests have no body: judged at once, without a promise. A declared length goes to
    // `planBody` without asking for `req.body`, which would turn a body the server holds whole
    // into a stream.
    if (!mayHaveBody(req)) return this.bodyChecks(NO_BODY, limit);
    return planBody(req, limit, Math.min(site.inspectBodyBytes, limit))
      .then((plan) => this.bodyChecks(plan, limit));
  }

  /** Phase 2 once the body is planned: limits, schema, custom rules, then the engine. */
  private bodyChecks(plan: BodyPlan, limit: number): Maybe<PageAnswer | undefined> {
    const { req, record, chain } = this;
    const site = this.#site!;
    const schema = this.#schema;
    this.#plan = plan;
    if (plan.kind === "too_large") {
      if (limit < site.maxBodyBytes) {
        this.schemaFinding(schema!, "schema:body_too_large", "body over the limit");
      }
      chain.add(limit < site.maxBodyBytes ? "api_schema" : "body_limit", "exceeded", schema?.id);
      record.action = "block";
      return tooLargePage(req, record.trace_id);
    }
    if (plan.kind === "unreadable") {
      chain.add("body", "unreadable");
      return unreadableBodyPage(req, record.trace_id);
    }
    if (plan.kind === "buffered") record.bytes_in = plan.bytes.length;
    else if (plan.kind === "streaming") {
      const declared = req.headers.get("content-length");
      record.bytes_in = declared === null ? null : Number(declared);
      plan.progress.record = record;
    } else record.bytes_in = 0;

    if (site.mode === "off") {
      chain.add("engine", "off");
      return undefined;
    }
    // The body runs past `inspect_body_bytes`: the rest is judged in windows as it streams
    // (`startTail`), and the access log's `body_tail` entry says how that went.
    const body = plan.kind === "buffered"
      ? plan.bytes
      : plan.kind === "streaming"
      ? plan.prefix.subarray(0, site.inspectBodyBytes)
      : undefined;
    this.#request.body = body;
    if (body !== undefined) {
      const refused = this.charsetCheck(site);
      if (refused !== undefined) return refused;
    }
    // An encoded body is judged decoded (the upstream still gets the bytes as sent).
    const coding = body === undefined ? undefined : this.view.header("content-encoding");
    if (coding !== undefined && !isIdentity(coding) && !isEncrypted(coding)) {
      return decodeBody(coding, body!, site.inspectBodyBytes).then((d) => {
        this.decoded(d, plan.kind === "buffered", site.inspectBodyBytes, coding);
        return this.bodyRules(site, plan);
      });
    }
    return this.bodyRules(site, plan);
  }

  /**
   * A text body in a charset the engine cannot decode: refused with 400 at `balanced` and
   * `strict` (the engine would judge bytes the upstream reads as other text); logged at `low` and
   * on a monitored site, where the body is judged as UTF-8.
   */
  private charsetCheck(site: CompiledSite): PageAnswer | undefined {
    const finding = unsupportedCharset(this.view.header("content-type"));
    if (finding === undefined) return undefined;
    const { record, chain } = this;
    record.findings++;
    record.finding = recordOf(finding);
    if (site.mode === "block" && site.level !== "low") {
      chain.add("body", "charset", finding.ruleId);
      record.action = "block";
      return unsupportedCharsetPage(this.req, record.trace_id);
    }
    chain.add("body", "charset", finding.ruleId);
    record.action = "log";
    return undefined;
  }

  /**
   * What the engine inspects of an encoded body: its decoded prefix, or the raw bytes. The
   * schema parses it only when it is the whole decoded body: the wire length says nothing of it.
   */
  private decoded(d: DecodedBody, buffered: boolean, limit: number, coding: string): void {
    if (d.kind === "decoded") {
      this.#encodingFinding = d.finding;
      this.#rawBody = this.#request.body;
      this.#request.body = d.bytes;
      this.#decodedWhole = buffered && (d.bytes?.length ?? 0) < limit;
      this.#coding = coding.trim().toLowerCase();
    } else {
      this.#encodingFinding = d.finding;
      this.#decodedWhole = false;
    }
  }

  /** Phase 2 once the body is known: methods it names, schema, custom rules, then the engine. */
  private bodyRules(site: CompiledSite, plan: BodyPlan): Maybe<PageAnswer | undefined> {
    if (this.#request.body !== undefined) {
      const early = this.bodyMethods(site);
      if (early instanceof Promise) return early.then((r) => r ?? this.bodyChecked(site, plan));
      if (early !== undefined) return early;
    }
    return this.bodyChecked(site, plan);
  }

  /** Phase 2's schema, custom rules and engine, then the body's tail. */
  private bodyChecked(site: CompiledSite, plan: BodyPlan): Maybe<PageAnswer | undefined> {
    const verdict = this.prefixRules(site, plan);
    const tail = startTail(site, plan, this.#request, this.#coding);
    if (tail === undefined) return verdict;
    const next = (early: PageAnswer | undefined) => early ?? this.judgeTail(tail, plan);
    return verdict instanceof Promise ? verdict.then(next) : next(verdict);
  }

  /**
   * Starts judging the body past the prefix once the prefix passed: a streaming body as it
   * streams (request_body.ts holds its last chunk until it is judged), a buffered one decoded
   * past the prefix to its end, before it goes anywhere.
   */
  private judgeTail(tail: TailJudge, plan: BodyPlan): Maybe<PageAnswer | undefined> {
    this.#tail = tail;
    if (plan.kind === "streaming") {
      tail.write(plan.prefix);
      plan.progress.tail = tail;
      return undefined;
    }
    if (plan.kind !== "buffered") return undefined;
    return tail.write(plan.bytes).then(() => tail.end()).then(() => this.tailVerdict(tail));
  }

  /**
   * The body's tail, judged: its refusal (403, or 413 past what is judged), or undefined with its
   * findings in the access record.
   */
  private tailVerdict(tail: TailJudge): PageAnswer | undefined {
    const { record, chain } = this;
    record.findings += tail.findings;
    // What stopped the body is the finding; otherwise the tail's when it is at least as strong.
    const f = tail.finding;
    if (
      f !== undefined &&
      (tail.stop || record.finding === null || f.score >= record.finding.score)
    ) record.finding = recordOf(f);
    const result = tail.oversized && (tail.blocking === undefined || tail.blocking === f)
      ? "oversize"
      : "judged";
    if (tail.stop) {
      chain.add("body_tail", result === "oversize" ? "oversize" : "block", tail.blocking!.ruleId);
      record.action = "block";
      return result === "oversize"
        ? tooLargePage(this.req, record.trace_id)
        : blockPage(this.req, record.trace_id, this.protection);
    }
    if (tail.blocking !== undefined) {
      chain.add("body_tail", "log", tail.blocking.ruleId);
      if (record.action !== "block") record.action = "log";
    } else chain.add("body_tail", tail.oversized ? "oversize" : "pass", tail.logged?.ruleId);
    return undefined;
  }

  /** Phase 2's checks on what the engine reads whole: schema, custom rules, then the engine. */
  private prefixRules(site: CompiledSite, plan: BodyPlan): Maybe<PageAnswer | undefined> {
    const { req, record, chain } = this;
    const schema = this.#schema;
    const p = this.protection;
    if (schema !== undefined) {
      const found = violations(
        schema,
        this.view,
        plan.kind === "none" ? 0 : record.bytes_in,
        this.#decodedWhole,
      );
      if (found.length > 0) {
        const first = found[0]!;
        // The evidence is the violations' wording, never a value; the location names the kind
        // of violation, so a required header named like a secret does not mask the wording.
        this.schemaFinding(
          schema,
          `schema:${first.code}`,
          found.map((f) => f.detail).join("; "),
        );
        if (site.mode === "block") {
          chain.add("api_schema", "block", schema.id);
          record.action = "block";
          return blockPage(req, record.trace_id, p);
        }
        chain.add("api_schema", "log", schema.id);
        record.action = "log";
      } else chain.add("api_schema", "pass", schema.id);
    }
    const controls = this.#ctx.protection;
    if (p !== undefined && controls !== undefined && p.custom.size > 0) {
      this.siteId = site.id;
      const v = controls.runtime.custom(p, this, chain);
      if (v.kind === "pass" && v.exhausted) record.inspection = "budget";
      if (v.kind === "block") {
        record.action = "block";
        return blockPage(req, record.trace_id, p);
      }
      if (v.kind === "challenge") {
        return challengeAnswer(controls, this, CUSTOM_RULE_DIFFICULTY);
      }
    }
    return this.engine(site, p, controls);
  }

  /** Records a schema violation as the access log's finding (class `api_schema`). */
  private schemaFinding(schema: CompiledSchema, location: string, evidence: string): void {
    this.record.findings++;
    this.record.finding = {
      class: "api_schema",
      confidence: "high",
      score: 100,
      location,
      evidence,
      rule: schema.id,
    };
  }

  /** The semantic engine, with ALAP's exceptions and signature blocks around its verdict. */
  private engine(
    site: CompiledSite,
    p: CompiledProtection | undefined,
    controls: ProtectionControls | undefined,
  ): Maybe<PageAnswer | undefined> {
    // A large body is judged in slices so the event loop keeps serving (inspect_sliced.ts); a
    // small request is judged at once.
    const raw = this.#rawBody;
    if (raw !== undefined) return this.engineBoth(site, p, controls, raw);
    const inspection = inspectSliced(this.#request, INSPECT_OPTIONS[site.level], this.#pace);
    if (inspection instanceof Promise) {
      return inspection.then((i) => this.engineVerdict(site, p, controls, i));
    }
    return this.engineVerdict(site, p, controls, inspection);
  }

  /**
   * A decoded body is judged decoded and as sent: an upstream that ignores Content-Encoding (PHP
   * parses a form body as it comes) reads the raw bytes, where a gzip header's name, comment or
   * extra field and a Brotli metadata block carry text that decoding drops. The raw bytes'
   * verdict counts when the decoded one does not block.
   */
  private async engineBoth(
    site: CompiledSite,
    p: CompiledProtection | undefined,
    controls: ProtectionControls | undefined,
    raw: Uint8Array,
  ): Promise<PageAnswer | undefined> {
    const options = INSPECT_OPTIONS[site.level];
    const decoded = await inspectSliced(this.#request, options, this.#pace);
    // With ALAP exceptions the decoded verdict can be dropped, and the next blocking finding
    // may be in the raw bytes alone: they are judged too, their blocking findings after.
    const excepting = p !== undefined && p.alapExceptions.length > 0;
    if (decoded.blocking && !excepting) return this.engineVerdict(site, p, controls, decoded);
    // Only the text in them: the compressed data between is close to random bytes, in which the
    // engine found attacks by chance (routes/proxy/body_encoding.ts, `sentText`).
    const text = sentText(raw);
    if (text === undefined) return this.engineVerdict(site, p, controls, decoded);
    const sent = await inspectSliced({ ...this.#request, body: text }, options, this.#pace);
    if (sent.truncated) this.record.inspection = "budget";
    if (!decoded.blocking) {
      return this.engineVerdict(site, p, controls, sent.blocking ? sent : decoded);
    }
    const findings = [
      ...decoded.findings,
      ...sent.findings.filter((f) => blocksAt(f.confidence, site.level)),
    ].sort((a, b) => b.score - a.score);
    return this.engineVerdict(site, p, controls, { ...decoded, findings });
  }

  /** The engine's verdict, with ALAP's exceptions and signature blocks around it. */
  private engineVerdict(
    site: CompiledSite,
    p: CompiledProtection | undefined,
    controls: ProtectionControls | undefined,
    inspection: Inspection,
  ): PageAnswer | undefined {
    const { record, chain } = this;
    // Only what was read was judged: the budget (or the deadline) ended the inspection.
    if (inspection.truncated) record.inspection = "budget";
    const undecodable = this.#encodingFinding;
    if (undecodable !== undefined) {
      // Below `balanced` the raw bytes were judged and the finding is only logged.
      inspection = {
        ...inspection,
        findings: [undecodable, ...inspection.findings],
        blocking: inspection.blocking ??
          (site.level === "low" || !blocksAt(undecodable.confidence, site.level)
            ? undefined
            : undecodable),
      };
    }
    if (p !== undefined && controls !== undefined) {
      // What ALAP observes: the findings without the excepted rules'.
      let observed = inspection;
      // ALAP's applied exceptions and signature blocks; without any (the usual case) nothing
      // to adjust, and no closure, clock read or result object for the request.
      if (alapAdjusts(p)) {
        const adjusted = controls.runtime.adjust(p, site, this, inspection);
        // Below `balanced` the coding finding is only logged: an exception of the rule that
        // blocked does not make it block (a signature block of its rule still does).
        const blocking = adjusted.blocking === undecodable && site.level === "low" &&
            adjusted.decision === undefined
          ? undefined
          : adjusted.blocking;
        if (blocking !== inspection.blocking) inspection = { ...inspection, blocking };
        if (adjusted.findings !== observed.findings) {
          observed = { ...observed, findings: adjusted.findings };
        }
      }
      if (observed.findings.length > 0) {
        controls.alap?.observe(site.id, record, observed, p.alapPolicy);
      }
    }
    // A logged schema violation stays the finding unless the engine found something itself.
    record.findings += inspection.findings.length;
    record.finding = findingRecord(inspection) ?? record.finding;
    const blocking = inspection.blocking;
    if (blocking && site.mode === "block") {
      chain.add("engine", "block", blocking.ruleId);
      site.counters.inspection.observe(chain.entries[chain.entries.length - 1]!.us);
      record.action = "block";
      return blockPage(this.req, record.trace_id, p);
    }
    if (blocking) {
      chain.add("engine", "log", blocking.ruleId);
      record.action = "log";
    } else chain.add("engine", "pass");
    site.counters.inspection.observe(chain.entries[chain.entries.length - 1]!.us);
    return undefined;
  }

  /** Phase 3: the edge cache, a WebSocket, or the site's upstream (its answer, not yet a Response). */
  private upstream(): Maybe<Response | DirectAnswer> {
    const site = this.#site!;
    this.trustedPeer = site.trustedProxies.size > 0 && site.trustedProxies.has(this.peer);
    const headers = this.#request.headers as HeaderPairs;
    this.upstreamHeaders = upstreamHeaders(headers, this);
    // Only a GET is a handshake (RFC 6455): a POST asking for one was inspected as a POST, and
    // goes on as one (its Upgrade is hop-by-hop), never as a GET the engine did not see.
    if (this.method === "GET" && headerOf(headers, "upgrade")?.toLowerCase() === "websocket") {
      return this.webSocket(site);
    }
    const p = this.protection;
    const controls = this.#ctx.protection;
    if (p !== undefined && controls !== undefined) {
      const cached = controls.edge.lookup(this, p, site);
      if (cached) return cached;
    }
    return this.forward(site);
  }

  /** Sends the request to one of the site's upstreams; a replayable one gets a second try. */
  private async forward(site: CompiledSite): Promise<Response | DirectAnswer> {
    const { req, record, chain } = this;
    const plan = this.#plan!;
    const replayable = plan.kind !== "streaming";
    this.upstreamBody =
      (plan.kind === "buffered" ? plan.bytes : plan.kind === "streaming" ? plan.body : undefined) as
        | BodyInit
        | undefined;
    this.connectTimeoutMs = site.connectTimeoutMs;
    this.responseTimeoutMs = site.responseTimeoutMs;
    this.#bodySent = true;
    let upstream: Upstream | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      upstream = site.pool.pick(upstream);
      record.upstream = upstream.origin;
      const t0 = micros();
      try {
        const res = await this.#ctx.upstream.send(upstream, this);
        // One clock read for the upstream's latency and its chain entry.
        const answered = micros();
        this.#upstreamUs = Math.round(answered - t0);
        // Passive health: a 5xx counts against the upstream like a failed connection.
        if (res.status >= 500) site.pool.fail(upstream);
        else site.pool.ok(upstream);
        chain.addAt(answered, "upstream", String(res.status));
        if (plan.kind === "streaming" && this.#tail !== undefined) this.tailVerdict(this.#tail);
        const length = res instanceof Response
          ? Number(res.headers.get("content-length") ?? -1)
          : res.contentLength;
        record.bytes_out = length < 0 ? null : length;
        let body = res.body;
        if (body !== null && NO_BODY_STATUS.has(res.status)) {
          // Never sent: a stream left unread would hold its upstream connection.
          if (body instanceof ReadableStream) body.cancel().catch(ignore);
          body = null;
        }
        return new DirectAnswer(
          res.status,
          res.statusText,
          framedPairs(downstreamHeaders(res.headers, record.trace_id), res.status, length),
          body as Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null,
        );
      } catch (err) {
        this.#upstreamUs = Math.round(micros() - t0);
        if (plan.kind === "streaming" && plan.progress.refused && this.#tail !== undefined) {
          return this.tailVerdict(this.#tail)!;
        }
        if (plan.kind === "streaming" && plan.progress.exceeded) {
          chain.add("body_limit", "exceeded");
          record.action = "block";
          return tooLargePage(req, record.trace_id);
        }
        // The client's body broke off mid-stream: its fault, not the upstream's.
        if (plan.kind === "streaming" && plan.progress.failed) {
          chain.add("body", "unreadable");
          return unreadableBodyPage(req, record.trace_id);
        }
        // A request the transport refuses to send (a TypeError or RangeError: a method or
        // header it will not write) is the client's doing; only the upstream's failures count.
        if (!(err instanceof TypeError || err instanceof RangeError)) site.pool.fail(upstream);
        if (isTimeout(err)) {
          chain.add("upstream", "timeout");
          return gatewayTimeoutPage(req, record.trace_id);
        }
        if (err instanceof UpstreamProtocolError) chain.add("upstream", "invalid");
        else chain.add("upstream", "unreachable", upstreamCause(err));
        this.#ctx.logger.debug("upstream failed", {
          trace_id: record.trace_id,
          upstream: upstream.origin,
          error: err instanceof Error ? err.message : String(err),
        });
        // Another upstream gets one try when the request can be sent again.
        if (replayable && site.pool.upstreams.length > 1 && attempt === 0) continue;
        return badGatewayPage(req, record.trace_id);
      }
    }
    return badGatewayPage(req, record.trace_id);
  }

  /** Passes a WebSocket upgrade through to one upstream. */
  private async webSocket(site: CompiledSite): Promise<PageAnswer> {
    if (!webSocketKeepsPath(this.pathAndQuery)) {
      // The upstream would get another path than the one checked: refused, not resolved.
      this.record.action = "block";
      this.chain.add("upstream", "websocket path changed");
      return statusPage(this.req, WEBSOCKET_PATH, this.record.trace_id);
    }
    const upstream = site.pool.pick();
    this.record.upstream = upstream.origin;
    const t0 = micros();
    try {
      const res = await passWebSocket(
        this,
        upstream.wsOrigin + this.pathAndQuery,
        site.connectTimeoutMs,
      );
      this.#upstreamUs = Math.round(micros() - t0);
      site.pool.ok(upstream);
      this.chain.add("upstream", "websocket");
      return res;
    } catch (err) {
      this.#upstreamUs = Math.round(micros() - t0);
      site.pool.fail(upstream);
      if (isTimeout(err)) this.chain.add("upstream", "timeout");
      else this.chain.add("upstream", "unreachable", upstreamCause(err));
      return badGatewayPage(this.req, this.record.trace_id);
    }
  }

  /**
   * Phase 4: the edge's header rules, cache capture and compression, by the request's policy.
   * Without edge work the own server writes the answer as it is; anyone else gets a `Response`.
   */
  private response(answer: DirectAnswer): Response | DirectAnswer {
    const p = this.protection;
    const controls = this.#ctx.protection;
    if (p === undefined || controls === undefined || edgeIdle(p)) {
      return this.#direct ? answer : answer.toResponse();
    }
    return controls.edge.respond(this, p, this.#site!, answer);
  }

  /** The one exit: discards an unsent body, completes the record, counts it and queues it. */
  private finish<R extends Response | DirectAnswer>(response: R): R {
    const plan = this.#plan;
    if (plan?.kind === "streaming" && !this.#bodySent) plan.body.cancel().catch(ignore);
    const record = this.record;
    const total = Math.round(micros() - this.#start);
    const upstreamUs = this.#upstreamUs;
    record.status = response.status;
    record.latency_us.total = total;
    record.latency_us.waf = upstreamUs === null ? total : Math.max(0, total - upstreamUs);
    record.latency_us.upstream = upstreamUs;
    (this.#site?.counters ?? this.policy.unmatched).count(record, total, upstreamUs);
    this.#ctx.accessLog.push(record);
    const discovery = this.policy.apisec?.discovery;
    if (discovery?.enabled && this.#site !== undefined) this.discover(discovery);
    return response;
  }

  /** Hands the request to API discovery when it is sampled (a bounded push, no clustering). */
  private discover(d: CompiledDiscovery): void {
    const rt = this.#ctx.apisec;
    const view = this.view;
    // The path as the upstream reads it: `//api/users` and, where case folds, `/API/Users` are
    // the endpoint `/api/users`.
    const path = view.normalPath.key;
    if (rt === undefined || !rt.shouldSample(d, path, this.now)) return;
    const query = view.query;
    const queryNames = query.length === 0 ? NO_NAMES : query.map(nameOf);
    let bodyNames = NO_NAMES;
    let contentType = "";
    if (this.#request.body !== undefined) {
      // Form fields follow the query's pairs in `params`; a JSON object body adds its keys.
      const params = view.params;
      const names: string[] = [];
      for (let i = query.length; i < params.length; i++) names.push(params[i]![0]);
      for (const k of jsonKeys(view)) names.push(k);
      bodyNames = names;
      const type = view.header("content-type") ?? "";
      const semi = type.indexOf(";");
      contentType = (semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase();
    }
    rt.inventory.sample({
      siteId: this.#site!.id,
      method: this.method,
      path,
      status: this.record.status,
      time: this.now,
      queryNames,
      bodyNames,
      contentType,
    });
  }
}
