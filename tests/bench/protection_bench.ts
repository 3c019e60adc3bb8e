/**
 * Per-request cost of each protection control, measured through the runtime exactly as the data
 * plane calls it, against the same call with no control configured (the baseline), and the
 * semantic engine's `inspect()` on the same request for scale.
 */
import { inspect } from "../../engine/inspect.ts";
import { RequestView } from "../../engine/request_view.ts";
import type { EngineRequest } from "../../engine/types.ts";
import { compileDocs } from "../_helpers/compiled_protection.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import { createProtectionRuntime } from "../../mod/protection/protection_runtime.ts";
import { headerChecks } from "../../routes/proxy/transaction.ts";
import { parseIp } from "../../engine/ip_address.ts";
import { systemRandom } from "../../mod/core/random.ts";

const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const hundredK = Array.from({ length: 100_000 }, (_, i) => ip(i + 1));

const req: EngineRequest = {
  method: "GET",
  path: "/products/42",
  query: "ref=home&page=2",
  headers: [
    ["host", "shop.test"],
    ["user-agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"],
    ["accept", "text/html"],
    ["cookie", "session=4f2a9c1e7b"],
  ],
};
const view = () => new RequestView(req, "shop.test");
const clientIp = "192.0.2.10";
const preReq = () => ({
  siteId: "s1",
  clientIp,
  ip: parseIp(clientIp),
  view: view(),
  now: clock.now(),
});
const chain = { add() {} };
const clock = new FakeClock();
const runtime = createProtectionRuntime({ clock, random: systemRandom });

const none = compileDocs({});
const ipList = compileDocs({
  [KIND.ip]: hundredK.map((cidr, i) => ({
    action: i % 2 ? "block" : "allow",
    cidr,
    site_id: null,
    path_prefix: null,
    expires_at: null,
  })),
});
const acl = compileDocs({
  [KIND.acl]: Array.from({ length: 20 }, (_, i) => ({
    name: `r${i}`,
    site_id: null,
    enabled: true,
    action: "block",
    conditions: { path: { regex: `^/admin${i}/` }, methods: ["POST"] },
  })),
});
const threat = compileDocs({
  [KIND.feed]: [{
    name: "f",
    url: null,
    content: "x",
    format: { kind: "plain" },
    action: "block",
    refresh_minutes: 60,
    enabled: true,
  }],
  [KIND.indicators]: [{ networks: hundredK }],
});
const bot = compileDocs({
  [KIND.bot]: [{
    site_id: null,
    path_prefix: "/",
    mode: "suspicious",
    rate_threshold: { requests: 1e9, window_seconds: 60 },
    verified_bots: false,
    difficulty: 16,
    clearance_minutes: 60,
  }],
});
const rate = compileDocs({}, {
  [KIND.rateLimit]: {
    enabled: true,
    requests: 1e9,
    window_seconds: 60,
    burst: 0,
    key: "ip",
    max_keys: 100_000,
  },
});
const custom = compileDocs({
  [KIND.custom]: Array.from({ length: 20 }, (_, i) => ({
    name: `c${i}`,
    site_id: null,
    target: i % 2 ? { kind: "any_param" } : { kind: "header", name: "user-agent" },
    pattern: `evil${i}[0-9]+`,
    ignore_case: false,
    action: "block",
    priority: i,
    enabled: true,
  })),
});

Deno.bench(
  "baseline: pre checks with no control configured",
  { group: "controls", baseline: true },
  () => {
    headerChecks(runtime, none, preReq(), chain);
  },
);
Deno.bench("IP allow/block list, 100k entries", { group: "controls" }, () => {
  headerChecks(runtime, ipList, preReq(), chain);
});
Deno.bench("ACL, 20 rules (regex path + method)", { group: "controls" }, () => {
  headerChecks(runtime, acl, preReq(), chain);
});
Deno.bench("threat intel, 100k indicators", { group: "controls" }, () => {
  headerChecks(runtime, threat, preReq(), chain);
});
Deno.bench("bot policy (suspicious, with rate threshold)", { group: "controls" }, () => {
  headerChecks(runtime, bot, preReq(), chain);
});
Deno.bench("global rate limit", { group: "controls" }, () => {
  headerChecks(runtime, rate, preReq(), chain);
});
Deno.bench("custom rules, 20 RE2 rules on params and a header", { group: "controls" }, () => {
  runtime.custom(custom, preReq(), chain);
});
Deno.bench(
  "for scale: semantic engine inspect() on the same request",
  { group: "controls" },
  () => {
    inspect(req, { level: "balanced" });
  },
);
