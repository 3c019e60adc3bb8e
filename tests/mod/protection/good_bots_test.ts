import { assertEquals } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import {
  claimedCrawler,
  createGoodBotVerifier,
  type Resolver,
} from "../../../mod/protection/good_bots.ts";

const GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

function resolver(
  ptr: Record<string, string[]>,
  forward: Record<string, string[]>,
  calls: string[] = [],
): Resolver {
  return {
    reverse: (ip) => {
      calls.push(`ptr ${ip}`);
      return ptr[ip] ? Promise.resolve(ptr[ip]!) : Promise.reject(new Error("NXDOMAIN"));
    },
    forward: (name) => Promise.resolve(forward[name] ?? []),
  };
}

Deno.test("a crawler is verified when its PTR name is under the crawler's domain and resolves back", async () => {
  const v = createGoodBotVerifier({
    resolver: resolver({ "66.249.66.1": ["crawl-66-249-66-1.googlebot.com."] }, {
      "crawl-66-249-66-1.googlebot.com": ["66.249.66.1"],
    }),
    clock: new FakeClock(),
  });
  assertEquals(await v.verify("66.249.66.1", GOOGLEBOT), true);
});

Deno.test("a spoofed PTR domain, a forward mismatch, no DNS or no crawler claim never verify", async () => {
  const r = resolver(
    { "1.1.1.1": ["googlebot.com.evil.test."], "2.2.2.2": ["x.googlebot.com."] },
    { "googlebot.com.evil.test": ["1.1.1.1"], "x.googlebot.com": ["9.9.9.9"] },
  );
  const v = createGoodBotVerifier({ resolver: r, clock: new FakeClock() });
  assertEquals(await v.verify("1.1.1.1", GOOGLEBOT), false);
  assertEquals(await v.verify("2.2.2.2", GOOGLEBOT), false);
  assertEquals(await v.verify("3.3.3.3", GOOGLEBOT), false, "DNS failure (for example no network)");
  assertEquals(await v.verify("3.3.3.3", "Mozilla/5.0 Firefox/140.0"), false);
  assertEquals(claimedCrawler("Mozilla/5.0 (compatible; bingbot/2.0)")?.domains, [
    "search.msn.com",
  ]);
});

Deno.test("verification results are cached and a failure is retried after five minutes", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const v = createGoodBotVerifier({ resolver: resolver({}, {}, calls), clock });
  await v.verify("4.4.4.4", GOOGLEBOT);
  await v.verify("4.4.4.4", GOOGLEBOT);
  assertEquals(calls.length, 1);
  clock.advance(5 * 60_000);
  await v.verify("4.4.4.4", GOOGLEBOT);
  assertEquals(calls.length, 2);
});
