import { assertEquals } from "../_helpers/assert.ts";
import { classifyAgent, classifyClient, solves } from "../../engine/bot.ts";

const UA = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0";

Deno.test("classifyClient() flags missing, tool and headless user agents and rate excess", () => {
  assertEquals(classifyClient(undefined, false), "no_user_agent");
  assertEquals(classifyClient("  ", false), "no_user_agent");
  assertEquals(classifyClient("curl/8.5.0", false), "bad_user_agent");
  assertEquals(classifyClient("python-requests/2.32", false), "bad_user_agent");
  assertEquals(classifyClient("Mozilla/5.0 HeadlessChrome/140.0", false), "headless");
  assertEquals(classifyClient(UA, true), "rate");
  assertEquals(classifyClient(UA, false), undefined);
});

Deno.test("classifyAgent() keeps its verdicts through a full memo and for uncached long agents", () => {
  // More distinct agents than the memo holds: it is cleared and refilled, never wrong.
  for (let i = 0; i < 5000; i++) {
    assertEquals(classifyAgent(`${UA} build/${i}`), undefined);
    if (i % 1000 === 0) assertEquals(classifyAgent(`curl/8.${i}`), "bad_user_agent");
  }
  assertEquals(classifyAgent("curl/8.5.0"), "bad_user_agent");
  assertEquals(classifyAgent("curl/8.5.0"), "bad_user_agent");
  assertEquals(classifyAgent(UA), undefined);
  const long = `${"x".repeat(600)} HeadlessChrome/140.0`;
  assertEquals(classifyAgent(long), "headless");
  assertEquals(classifyAgent(long), "headless");
  assertEquals(classifyAgent(""), "no_user_agent");
});

Deno.test("solves() accepts an answer only when the digest has the required zero bits", () => {
  let n = 0;
  while (!solves("nonce", String(n), 8)) n++;
  assertEquals(solves("nonce", String(n), 8), true);
  assertEquals(solves("nonce", String(n), 0), true);
  assertEquals(solves("nonce", String(n), 256), false);
});
