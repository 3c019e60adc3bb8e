import { normalizePath } from "../../../engine/path_normalize.ts";
import { assertEquals } from "../../_helpers/assert.ts";
import { RequestView } from "../../../engine/request_view.ts";
import { parseIp } from "../../../engine/ip_address.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { KIND } from "../../../mod/protection/protection_compile.ts";
import { createProtectionRuntime } from "../../../mod/protection/protection_runtime.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { compileDocs, recordingChain } from "../../_helpers/compiled_protection.ts";

const view = (ua: string) =>
  new RequestView({ method: "GET", path: "/", query: "", headers: [["user-agent", ua]] }, "a.test");
const request = (clientIp: string, ua: string, extra: { verifiedBot?: boolean } = {}) => ({
  siteId: "s",
  clientIp,
  ip: parseIp(clientIp),
  view: view(ua),
  now: 0,
  ...extra,
});

Deno.test("a verified crawler passes a bot policy that exempts verified bots; an unverified one is challenged", () => {
  const p = compileDocs({
    [KIND.bot]: [{
      site_id: null,
      path_prefix: "/",
      mode: "all",
      rate_threshold: null,
      verified_bots: true,
      difficulty: 8,
      clearance_minutes: 60,
    }],
  });
  const rt = createProtectionRuntime({ clock: new FakeClock(), random: systemRandom });
  const ua = "Mozilla/5.0 (compatible; Googlebot/2.1)";
  const c1 = recordingChain();
  assertEquals(
    rt.bot(p, request("66.249.66.1", ua, { verifiedBot: true }), c1),
    undefined,
  );
  assertEquals(c1.entries, [`bot:verified_bot:${KIND.bot}_0`]);
  const c2 = recordingChain();
  assertEquals(
    rt.bot(p, request("66.249.66.1", ua, { verifiedBot: false }), c2)?.kind,
    "challenge",
  );
  assertEquals(rt.wantsBotVerification(p, "s", normalizePath("/", "generic")), true);
});

Deno.test("a bot policy's rate threshold makes an ordinary browser suspicious once exceeded", () => {
  const p = compileDocs({
    [KIND.bot]: [{
      site_id: null,
      path_prefix: "/",
      mode: "suspicious",
      rate_threshold: { requests: 3, window_seconds: 60 },
      verified_bots: false,
      difficulty: 8,
      clearance_minutes: 60,
    }],
  });
  const rt = createProtectionRuntime({ clock: new FakeClock(), random: systemRandom });
  const req = request("10.0.0.1", "Mozilla/5.0 Firefox/140.0");
  const kinds = Array.from({ length: 5 }, () => rt.bot(p, req, recordingChain())?.kind);
  assertEquals(kinds, [undefined, undefined, undefined, "challenge", "challenge"]);
});
