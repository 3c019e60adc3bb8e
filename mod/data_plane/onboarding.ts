/**
 * The server side of the console's guided first site: a reachability check of an upstream from
 * this host (the outbound probe of `mod/ops/probe.ts`, each step bounded by a timeout), and a
 * test request with a harmless attack-shaped query sent to a site through this process's own
 * data listener, answered with the status, what the access log recorded and the trace id. The
 * blocked answer's page is kept briefly so the console can show it in a sandboxed frame.
 */
import { Buffer } from "node:buffer";
import * as http from "node:http";
import { probe, type ProbeReport } from "../ops/probe.ts";
import { AppError } from "../core/errors.ts";
import type { AccessLog } from "../access_log/access_log.ts";
import type { BlockPagePreviews } from "../protection/block_page_previews.ts";
import type { Sites } from "./sites.ts";

/** Where a listener of this process listens (a wildcard bind is reached on loopback). */
export interface ListenAddress {
  readonly hostname: string;
  readonly port: number;
}

export interface OnboardingDeps {
  readonly sites: Pick<Sites, "get">;
  readonly accessLog: Pick<AccessLog, "get">;
  /** The plain-HTTP data listener once it listens (undefined before). */
  readonly dataAddress: () => ListenAddress | undefined;
  /** The management listener's address, which no upstream may be. */
  readonly managementPort?: () => number | undefined;
  /** Keeps a blocked answer's page for the console's frame (per principal, a few minutes). */
  readonly pages: BlockPagePreviews;
  /** A monotonic millisecond timer (durations only). */
  readonly monotonic: () => number;
  readonly userAgent: string;
}

/** Why an upstream is not reachable: the probe step that failed, or a refusal before any. */
export type CheckStep = "dns" | "tcp" | "tls" | "http" | "policy";

export type UpstreamCheck =
  | {
    readonly reachable: true;
    readonly upstream: string;
    /** The upstream's answer to `GET /` (any status means it is there). */
    readonly status: number;
    readonly ms: number;
  }
  | {
    readonly reachable: false;
    readonly upstream: string;
    readonly step: CheckStep;
    /** `own_listener` (the step is `policy`), else the resolver's, socket's or TLS text. */
    readonly reason: string;
    readonly ms: number;
  };

export interface TestRequestResult {
  readonly site_id: string;
  /** The Host header sent: the site's first host (a wildcard gets the label `waf-test`). */
  readonly host: string;
  readonly method: "GET";
  readonly path: string;
  /** The data listener the request went to, as a URL. */
  readonly url: string;
  /** The same request as a command the operator can run on this host. */
  readonly curl: string;
  readonly status: number;
  readonly trace_id: string | null;
  /** What the access log recorded: `block`, `log`, `pass`, `challenge` (null: not found). */
  readonly action: string | null;
  readonly attack_class: string | null;
  readonly blocked: boolean;
  /** The blocked answer's page, served at `GET /api/onboarding/pages/{id}` (null: none). */
  readonly page_id: string | null;
}

/** A SQL injection every protection level blocks: it reads, changes nothing, and says so. */
export const TEST_PATH = "/?waf_test=1%20union%20select%20password%20from%20users";

export const PROBE_TIMEOUT = { defaultMs: 3_000, maxMs: 10_000 } as const;
const TEST_TIMEOUT_MS = 10_000;
const MAX_PAGE_BYTES = 512 * 1024;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

function stepTimes(report: ProbeReport): number {
  let ms = 0;
  for (const s of [report.dns, report.tcp, report.tls, report.http]) {
    if (s.status === "ok" || s.status === "failed") ms += s.ms;
  }
  return Math.round(ms);
}

function failedStep(report: ProbeReport): { step: CheckStep; reason: string } | undefined {
  for (const step of ["dns", "tcp", "tls", "http"] as const) {
    const s = report[step];
    if (s.status === "failed") return { step, reason: s.error };
  }
  return undefined;
}

/** `*.example.com` becomes `waf-test.example.com`; other hosts stay. */
export function testHost(host: string): string {
  return host.startsWith("*.") ? `waf-test.${host.slice(2)}` : host;
}

/** The address a client of this host reaches a listener at (a wildcard bind on loopback). */
export function reachAt(address: ListenAddress): string {
  const h = address.hostname;
  const host = h === "0.0.0.0"
    ? "127.0.0.1"
    : h === "::"
    ? "[::1]"
    : h.includes(":")
    ? `[${h}]`
    : h;
  return `${host}:${address.port}`;
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

interface Answer {
  readonly status: number;
  readonly traceId: string | null;
  readonly html: string | null;
}

/** One GET to the data listener with `host` as its Host header; the body read up to a limit. */
function send(at: ListenAddress, host: string, userAgent: string): Promise<Answer> {
  const hostname = at.hostname === "0.0.0.0"
    ? "127.0.0.1"
    : at.hostname === "::"
    ? "::1"
    : at.hostname;
  return new Promise((resolve, reject) => {
    const req = http.request({
      hostname,
      port: at.port,
      path: TEST_PATH,
      method: "GET",
      headers: { host, accept: "text/html", "user-agent": userAgent },
      timeout: TEST_TIMEOUT_MS,
    }, (res) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      res.on("data", (chunk: Uint8Array) => {
        if (size < MAX_PAGE_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      res.on("end", () => {
        const trace = res.headers["x-waf-trace-id"];
        const type = String(res.headers["content-type"] ?? "");
        const body = Buffer.concat(chunks).subarray(0, MAX_PAGE_BYTES).toString("utf8");
        resolve({
          status: res.statusCode ?? 0,
          traceId: typeof trace === "string" ? trace : null,
          html: type.startsWith("text/html") ? body : null,
        });
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${TEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end();
  });
}

export function createOnboarding(deps: OnboardingDeps) {
  /** True when `upstream` is one of this process's own listeners (a site in front of itself). */
  const ownListener = (url: URL): boolean => {
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    const data = deps.dataAddress();
    const ports = [data?.port, deps.managementPort?.()];
    if (!ports.includes(port)) return false;
    const host = url.hostname;
    return LOOPBACK.has(host) || host === data?.hostname;
  };

  return {
    /**
     * Probes `upstream` (an http(s) origin, validated at the edge) from this host: reachable
     * once any HTTP answer arrives, else the step that failed and why. Each step is bounded by
     * `timeoutMs`; one of this process's own listeners is refused without a connection.
     */
    async checkUpstream(upstream: string, timeoutMs: number): Promise<UpstreamCheck> {
      const url = new URL(upstream);
      if (ownListener(url)) {
        return { reachable: false, upstream, step: "policy", reason: "own_listener", ms: 0 };
      }
      const report = await probe({ url, timeoutMs, userAgent: deps.userAgent }, {
        monotonic: deps.monotonic,
      });
      const ms = stepTimes(report);
      const failed = failedStep(report);
      if (failed || report.http.status !== "ok") {
        return {
          reachable: false,
          upstream,
          step: failed?.step ?? "http",
          reason: failed?.reason ?? "no answer",
          ms,
        };
      }
      return { reachable: true, upstream, status: report.http.detail.status, ms };
    },

    /**
     * Sends the test request to site `siteId` through the data listener and reads what the
     * access log recorded for its trace id. `owner` keeps the blocked page for that principal.
     */
    async testRequest(siteId: string, owner: string): Promise<TestRequestResult> {
      const site = deps.sites.get(siteId);
      const at = deps.dataAddress();
      if (!at) {
        throw new AppError(503, "NOT_READY", "The data listener is not listening yet: try again");
      }
      const host = testHost(site.hosts[0]!);
      const base = `http://${reachAt(at)}`;
      let answer: Answer;
      try {
        answer = await send(at, host, deps.userAgent);
      } catch (err) {
        throw new AppError(
          502,
          "TEST_REQUEST_FAILED",
          `The test request to the data listener at ${base} failed: ${(err as Error).message}`,
          { cause: err, details: { url: base } },
        );
      }
      const row = answer.traceId ? await deps.accessLog.get(answer.traceId) : undefined;
      const action = row?.action ?? null;
      const blocked = action === "block";
      const page = blocked && answer.html !== null ? deps.pages.put(owner, answer.html) : null;
      return {
        site_id: site.id,
        host,
        method: "GET",
        path: TEST_PATH,
        url: base + TEST_PATH,
        curl: `curl -s -i -H ${quote("Host: " + host)} ${quote(base + TEST_PATH)}`,
        status: answer.status,
        trace_id: answer.traceId,
        action,
        attack_class: row?.attack_class ?? null,
        blocked,
        page_id: page?.id ?? null,
      };
    },

    /** A kept page of `owner`, while it has not expired. */
    page(owner: string, id: string): string | undefined {
      return deps.pages.get(owner, id);
    },
  };
}

export type Onboarding = ReturnType<typeof createOnboarding>;
