/** AlapEnforcer.apply(): what an exception drops at each level, and what still decides. */
import { normalizePath } from "../../../engine/path_normalize.ts";
import { assertEquals } from "../../_helpers/assert.ts";
import { AlapEnforcer } from "../../../mod/protection/alap_enforce.ts";
import type {
  AppliedDecision,
  CompiledProtection,
} from "../../../mod/protection/protection_compile.ts";
import { inspect } from "../../../engine/inspect.ts";
import type { Confidence, Finding, Inspection, Level } from "../../../engine/types.ts";

const finding = (ruleId: string, score: number, confidence: Confidence): Finding => ({
  class: ruleId.split(".")[0] as Finding["class"],
  confidence,
  score,
  location: "query:q",
  evidence: ruleId,
  ruleId,
});
const BANDS: Record<Level, Confidence> = { strict: "medium", balanced: "high", low: "critical" };
const RANK: Record<Confidence, number> = { low: 0, medium: 1, high: 2, critical: 3 };
const inspection = (level: Level, findings: Finding[]): Inspection => ({
  findings,
  blocking: findings.find((f) => RANK[f.confidence] >= RANK[BANDS[level]]),
  truncated: false,
});
const decision = (over: Partial<AppliedDecision>): AppliedDecision => ({
  id: `d-${over.ruleId}`,
  kind: "exception",
  siteId: "s1",
  expiresAt: null,
  ...over,
});
const protection = (exceptions: AppliedDecision[], signatures: AppliedDecision[] = []) =>
  ({ alapExceptions: exceptions, alapSignatures: signatures }) as unknown as CompiledProtection;
function run(
  p: CompiledProtection,
  level: Level,
  findings: Finding[],
  path = "/tickets/1",
  site = "s1",
) {
  const chain: string[] = [];
  const out = new AlapEnforcer({ now: () => 1000 }).apply(
    p,
    { id: site, level },
    {
      path,
      view: { normalPath: normalizePath(path, "generic") },
      chain: { add: (c, r, rule) => void chain.push([c, r, rule].join(":")) },
    },
    inspection(level, findings),
  );
  return { rule: out.blocking?.ruleId, chain };
}

const UNION = finding("sqli.union", 95, "critical");
const OPEN_TAG = finding("php.open_tag", 90, "critical");
const TAUT = finding("sqli.tautology", 85, "high");
const XSS_MED = finding("xss.attribute", 55, "medium");

Deno.test("the engine's blocking band is the one blocksAt answers for every level", async () => {
  const { blocksAt } = await import("../../../engine/inspect.ts");
  for (const level of ["low", "balanced", "strict"] as const) {
    const r = inspect({
      method: "GET",
      path: "/",
      query: "q=1%20union%20select%20a%20from%20b",
      headers: [],
    }, { level });
    for (const f of r.findings) {
      assertEquals(blocksAt(f.confidence, level), RANK[f.confidence] >= RANK[BANDS[level]], level);
    }
    assertEquals(r.blocking?.ruleId, r.findings.find((f) => blocksAt(f.confidence, level))?.ruleId);
  }
});

Deno.test("an excepted rule's findings drop; the next finding that blocks at the site's level decides", () => {
  const p = protection([decision({ ruleId: "php.open_tag" })]);
  const all = [OPEN_TAG, TAUT, XSS_MED];
  assertEquals(run(p, "strict", all).rule, "sqli.tautology");
  assertEquals(run(p, "balanced", all).rule, "sqli.tautology");
  assertEquals(run(p, "low", all).rule, undefined, "a high finding does not block at low");
  assertEquals(run(p, "strict", [OPEN_TAG, XSS_MED]).rule, "xss.attribute");
  assertEquals(run(p, "balanced", [OPEN_TAG, XSS_MED]).rule, undefined);
  assertEquals(run(p, "strict", all).chain, ["alap:exception:d-php.open_tag"]);
  // The same rule twice (two places) drops whole.
  assertEquals(run(p, "strict", [OPEN_TAG, OPEN_TAG]).rule, undefined);
});

Deno.test("each excepted rule drops, the others keep blocking; a top finding not excepted decides as before", () => {
  const p = protection([
    decision({ ruleId: "php.open_tag" }),
    decision({ ruleId: "sqli.tautology" }),
  ]);
  assertEquals(run(p, "strict", [OPEN_TAG, TAUT, XSS_MED]).rule, "xss.attribute");
  assertEquals(run(p, "balanced", [OPEN_TAG, TAUT, XSS_MED]).rule, undefined);
  assertEquals(run(p, "balanced", [UNION, OPEN_TAG, TAUT]).rule, "sqli.union");
  assertEquals(run(p, "balanced", [UNION, OPEN_TAG]).chain, []);
});

Deno.test("an exception outside its site, path prefix or lifetime drops nothing", () => {
  const findings = [OPEN_TAG, TAUT];
  const at = (d: Partial<AppliedDecision>, path?: string, site?: string) =>
    run(protection([decision({ ruleId: "php.open_tag", ...d })]), "balanced", findings, path, site)
      .rule;
  assertEquals(at({ siteId: "s2" }), "php.open_tag");
  assertEquals(at({ siteId: null }, "/x", "s9"), "sqli.tautology", "a global exception");
  assertEquals(at({ pathPrefix: "/tickets/" }, "/avatar"), "php.open_tag");
  assertEquals(at({ pathPrefix: "/tickets/" }, "/tickets/9"), "sqli.tautology");
  assertEquals(at({ pathPrefix: "/tickets/" }, "/tickets/../avatar"), "php.open_tag");
  assertEquals(at({ expiresAt: 1000 }), "php.open_tag", "expired at the moment");
  assertEquals(at({ expiresAt: 1001 }), "sqli.tautology");
});

Deno.test("a signature block still makes its rule block after an exception dropped another", () => {
  const p = protection([decision({ ruleId: "php.open_tag" })], [
    decision({ id: "sig", kind: "signature_block", ruleId: "xss.attribute" }),
  ]);
  const out = run(p, "balanced", [OPEN_TAG, XSS_MED]);
  assertEquals([out.rule, out.chain], ["xss.attribute", [
    "alap:exception:d-php.open_tag",
    "alap:block:sig",
  ]]);
});
