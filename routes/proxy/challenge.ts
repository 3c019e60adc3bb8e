/**
 * The bot challenge in the data plane: the challenge answer (a signed puzzle page; a small
 * urlencoded form POST is carried along to be re-submitted) and the verify endpoint
 * (`POST /.well-known/waf/challenge`: checks the answer, sets the clearance cookie, sends the
 * browser back). The transaction calls these when a check asks for a challenge.
 */
import type { AccessRecord } from "../../mod/access_log/record.ts";
import type { Clock } from "../../mod/core/clock.ts";
import type { CompiledProtection } from "../../mod/protection/protection_compile.ts";
import {
  type ChainSink,
  CLEARANCE_COOKIE,
  type ProtectionRuntime,
} from "../../mod/protection/protection_runtime.ts";
import { type Random, randomHex } from "../../mod/core/random.ts";
import { challengePage, safeReturn } from "./challenge_page.ts";
import { type PageAnswer, type PageText, statusPage } from "./status_page.ts";

export interface ChallengeDeps {
  readonly runtime: ProtectionRuntime;
  readonly clock: Clock;
  readonly random: Random;
}

/** The request being challenged: its record receives the action. */
export interface Challenged {
  readonly req: Request;
  readonly record: AccessRecord;
  readonly chain: ChainSink;
  readonly pathAndQuery: string;
}

const FORM = /^application\/x-www-form-urlencoded\b/i;
const MAX_REPLAY = 64 * 1024;
const MAX_VERIFY_BODY = 8 * 1024;
const CHALLENGE_FAILED: PageText = {
  status: 403,
  code: "CHALLENGE_FAILED",
  title: "Verification failed",
  message: "The browser check did not succeed. Reload the page to try again.",
};

/** The challenge page for `tx` at `difficulty` zero bits. */
export async function challengeAnswer(
  deps: ChallengeDeps,
  tx: Challenged,
  difficulty: number,
): Promise<PageAnswer> {
  const { req, record } = tx;
  const ua = req.headers.get("user-agent") ?? "";
  const puzzle = deps.runtime.issuer(difficulty, 60).issue(
    deps.runtime.newNonce(),
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
    returnTo: tx.pathAndQuery,
    replay,
    traceId: record.trace_id,
    cspNonce: randomHex(deps.random, 12),
  });
}

/** `POST /.well-known/waf/challenge`: checks the answer, sets the clearance, sends back. */
export async function verifyAnswer(
  deps: ChallengeDeps,
  tx: Challenged,
  p: CompiledProtection,
): Promise<PageAnswer> {
  const { req, record, chain } = tx;
  const text = (await req.text().catch(() => "")).slice(0, MAX_VERIFY_BODY);
  const form = new URLSearchParams(text);
  const ua = req.headers.get("user-agent") ?? "";
  const now = deps.clock.now();
  const ret = safeReturn(form.get("ret"));
  const client = { ip: record.client_ip, userAgent: ua };
  const result = deps.runtime.verify(
    form.get("token") ?? "",
    form.get("answer") ?? "",
    client,
    now,
  );
  if (!result.ok) {
    chain.add("bot", `verify:${result.reason}`);
    record.action = "block";
    return statusPage(req, CHALLENGE_FAILED, record.trace_id);
  }
  const clearance = deps.runtime.clearance(
    p,
    client,
    { siteId: record.site_id ?? "", path: ret },
    now,
  );
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
