import { assertEquals, ok } from "../_helpers/assert.ts";
import {
  type AlapPolicy,
  createAlapTracker,
  DEFAULT_ALAP_POLICY,
  falsePositiveProposal,
  isExpired,
  type Observation,
  review,
} from "../../engine/alap.ts";

const T0 = 1_700_000_000_000;
const policy: AlapPolicy = {
  ...DEFAULT_ALAP_POLICY,
  clientScoreThreshold: 200,
  signatureThreshold: 3,
};

const obs = (over: Partial<Observation>): Observation => ({
  siteId: "s1",
  clientIp: "10.0.0.1",
  traceId: "t",
  ruleId: "sqli.tautology",
  confidence: "high",
  score: 80,
  time: T0,
  ...over,
});

Deno.test("a client whose score over the window reaches the threshold gets a temporary block proposal", () => {
  const alap = createAlapTracker(policy, () => false);
  assertEquals(alap.observe(obs({ traceId: "a", confidence: "medium", ruleId: "r1" })), []);
  assertEquals(alap.observe(obs({ traceId: "b", confidence: "medium", ruleId: "r2" })), []);
  const [p] = alap.observe(obs({ traceId: "c", confidence: "medium", ruleId: "r3" }));
  ok(p);
  assertEquals(p.kind, "temp_block");
  assertEquals(p.scope, { siteId: "s1" });
  assertEquals(p.target, { clientIp: "10.0.0.1" });
  assertEquals(p.evidence, ["a", "b", "c"]);
  assertEquals(p.status, "proposed");
  assertEquals(p.expiresAt, T0 + policy.tempBlockMs);
});

Deno.test("scores older than the window no longer count", () => {
  const alap = createAlapTracker(policy, () => false);
  alap.observe(obs({ confidence: "medium", ruleId: "r1" }));
  alap.observe(obs({ confidence: "medium", ruleId: "r2" }));
  assertEquals(
    alap.observe(obs({ confidence: "medium", ruleId: "r3", time: T0 + policy.clientWindowMs + 1 })),
    [],
  );
});

Deno.test("site-scoped proposals from high findings auto-apply by policy; the global ban never does", () => {
  const alap = createAlapTracker({ ...policy, autoApply: true }, () => false);
  alap.observe(obs({ ruleId: "a" }));
  alap.observe(obs({ ruleId: "b" }));
  const first = alap.observe(obs({ ruleId: "c" }));
  assertEquals(first.map((p) => [p.kind, p.status]), [["temp_block", "applied"]]);
  alap.observe(obs({ siteId: "s2", ruleId: "a" }));
  alap.observe(obs({ siteId: "s2", ruleId: "b" }));
  const second = alap.observe(obs({ siteId: "s2", ruleId: "c" }));
  assertEquals(second.map((p) => [p.kind, p.status, p.scope.siteId]), [
    ["temp_block", "applied", "s2"],
    ["ip_ban", "proposed", null],
  ]);
});

Deno.test("an exempt client gets no client decision, while its findings still count for the signature", () => {
  const alap = createAlapTracker({ ...policy, autoApply: true }, () => false);
  const out: unknown[] = [];
  for (const site of ["s1", "s2"]) {
    for (const ruleId of ["a", "b", "c"]) {
      out.push(...alap.observe(obs({ siteId: site, ruleId, client: "exempt" })));
    }
  }
  assertEquals(out, []);
  const same = createAlapTracker(policy, () => false);
  for (let i = 0; i < 2; i++) same.observe(obs({ client: "exempt" }));
  const [sig] = same.observe(obs({ client: "exempt", traceId: "z" }));
  assertEquals([sig?.kind, sig?.basis], [
    "signature_block",
    { kind: "findings", count: 3, ruleId: "sqli.tautology" },
  ]);
});

Deno.test("a client for review only is proposed for blocking but never auto-applied", () => {
  const alap = createAlapTracker({ ...policy, autoApply: true }, () => false);
  alap.observe(obs({ ruleId: "a", client: "review" }));
  alap.observe(obs({ ruleId: "b", client: "review" }));
  const [p] = alap.observe(obs({ ruleId: "c", client: "review" }));
  assertEquals([p?.kind, p?.status, p?.basis], [
    "temp_block",
    "proposed",
    { kind: "score", score: 240, windowS: 300 },
  ]);
});

Deno.test("repeated high findings with one signature propose a site-level signature block", () => {
  const alap = createAlapTracker({ ...policy, clientScoreThreshold: 1e9 }, () => false);
  assertEquals(alap.observe(obs({ clientIp: "1.1.1.1" })), []);
  assertEquals(alap.observe(obs({ clientIp: "2.2.2.2", confidence: "low" })), []);
  assertEquals(alap.observe(obs({ clientIp: "3.3.3.3" })), []);
  const [p] = alap.observe(obs({ clientIp: "4.4.4.4", traceId: "z" }));
  ok(p);
  assertEquals([p.kind, p.target, p.key], [
    "signature_block",
    { ruleId: "sqli.tautology" },
    "signature_block:s1:sqli.tautology",
  ]);
});

Deno.test("an open decision is not proposed twice", () => {
  const open = new Set<string>();
  const alap = createAlapTracker(policy, (k) => open.has(k));
  let proposals = 0;
  for (let i = 0; i < 10; i++) {
    for (const p of alap.observe(obs({ ruleId: `r${i}`, confidence: "medium" }))) {
      open.add(p.key);
      proposals++;
    }
  }
  assertEquals(proposals, 1);
});

Deno.test("tracking stays bounded", () => {
  const alap = createAlapTracker({ ...policy, maxTracked: 100 }, () => false);
  for (let i = 0; i < 5000; i++) {
    alap.observe(obs({ clientIp: `10.0.${i >> 8}.${i & 255}`, ruleId: `r${i}` }));
  }
  ok(alap.tracked() <= 200);
});

Deno.test("a false-positive mark proposes an exception that waits for review", () => {
  const p = falsePositiveProposal(
    { siteId: "s1", ruleId: "xss.tag", pathPrefix: "/cms/", traceId: "trace1" },
    T0,
    null,
  );
  assertEquals([p.kind, p.status, p.target, p.expiresAt], ["exception", "proposed", {
    ruleId: "xss.tag",
    pathPrefix: "/cms/",
  }, null]);
});

Deno.test("review() allows approve/reject of proposals and revoke of applied decisions only", () => {
  assertEquals(review("proposed", "approve"), { ok: true, status: "applied" });
  assertEquals(review("proposed", "reject"), { ok: true, status: "rejected" });
  assertEquals(review("applied", "revoke"), { ok: true, status: "revoked" });
  assertEquals(review("revoked", "revoke").ok, false);
  assertEquals(review("revoked", "approve").ok, false);
  assertEquals(review("applied", "approve"), {
    ok: false,
    message: 'Cannot approve a decision that is "applied"',
  });
  assertEquals(review("expired", "revoke").ok, false);
});

Deno.test("isExpired() applies to open decisions past their expiry", () => {
  ok(isExpired({ status: "applied", expiresAt: T0 }, T0));
  ok(!isExpired({ status: "applied", expiresAt: T0 }, T0 - 1));
  ok(!isExpired({ status: "rejected", expiresAt: T0 }, T0 + 1));
  ok(!isExpired({ status: "revoked", expiresAt: T0 }, T0 + 1));
  ok(!isExpired({ status: "proposed", expiresAt: null }, T0 + 1));
});
