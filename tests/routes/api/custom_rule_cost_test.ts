/**
 * What a custom rule may cost (issue #37, item 5), through the management API in-process: a
 * pattern whose RE2 program is too large is refused where it is saved (`PATTERN_TOO_LARGE`,
 * naming the limit), and the regex tester runs off the main thread, within its time limit and
 * sample limits, while `/health` keeps answering.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { errorCode } from "../../_helpers/api_access.ts";
import { ADMIN, callJson, completeSetup, createUser, login } from "../../_helpers/identity.ts";
import { createTestApp } from "../../_helpers/server.ts";
import { MAX_PROGRAM_SIZE } from "../../../engine/re2_cost.ts";
import {
  MAX_SAMPLE_CHARS,
  MAX_SAMPLES,
  PatternTester,
} from "../../../mod/protection/pattern_tester.ts";

/** The issue's pattern: one saved rule made a 10 KB body take 31.7 s. */
const ISSUE_PATTERN = "[\\s\\S]{1,1000}[\\s\\S]{1,1000}[\\s\\S]{1,1000}z";
const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };
const STUCK_WORKER = new URL("../../_helpers/stuck_pattern_worker.ts", import.meta.url);

async function setup(tester?: PatternTester) {
  const s = await createTestApp({ deps: tester === undefined ? {} : { patternTester: tester } });
  await completeSetup(s);
  await createUser(s, VIEWER.username, VIEWER.password, "readonly");
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const viewer = await login(s, VIEWER.username, VIEWER.password);
  return Object.assign(s, { admin, viewer });
}

Deno.test("a custom rule whose pattern compiles to too large a program is refused with PATTERN_TOO_LARGE", async () => {
  await using s = await setup();
  const r = await callJson(s, "POST", "/api/rules/custom", {
    session: s.admin,
    body: { name: "slow", target: { kind: "body" }, pattern: ISSUE_PATTERN, action: "log" },
  });
  assertEquals([r.status, errorCode(r)], [400, "PATTERN_TOO_LARGE"]);
  const error = r.body.error as { message: string; field: string };
  assertEquals(error.field, "pattern");
  assertMatch(
    error.message,
    new RegExp(`^Invalid field "pattern": Pattern too large: .*limit of ${MAX_PROGRAM_SIZE}`),
  );
  const listed = await callJson(s, "GET", "/api/rules/custom", { session: s.admin });
  assertEquals(listed.body.items, []);
  // An invalid pattern stays a plain BAD_REQUEST with RE2's message.
  const bad = await callJson(s, "POST", "/api/rules/custom", {
    session: s.admin,
    body: { name: "bad", target: { kind: "path" }, pattern: "(a", action: "block" },
  });
  assertEquals([bad.status, errorCode(bad)], [400, "BAD_REQUEST"]);
  const ok201 = await callJson(s, "POST", "/api/rules/custom", {
    session: s.admin,
    body: { name: "fine", target: { kind: "body" }, pattern: "[\\s\\S]{1,10}z", action: "log" },
  });
  assertEquals(ok201.status, 201);
});

Deno.test("ACL and API-security patterns are held to the same program-size limit", async () => {
  await using s = await setup();
  const acl = await callJson(s, "POST", "/api/protection/acl-rules", {
    session: s.admin,
    body: {
      name: "slow path",
      action: "block",
      conditions: { path: { regex: "^/(?:[a-z]{1,200}/){1,10}x" } },
    },
  });
  assertEquals([acl.status, errorCode(acl)], [400, "PATTERN_TOO_LARGE"]);
  assertEquals(
    (acl.body.error as { field: string }).field,
    "conditions.path.regex",
  );
});

Deno.test("the regex tester refuses more samples, or longer ones, than its limits", async () => {
  await using s = await setup();
  const test = (samples: string[]) =>
    callJson(s, "POST", "/api/rules/custom/test", {
      session: s.viewer,
      body: { pattern: "^/admin", samples },
    });
  const many = await test(Array.from({ length: MAX_SAMPLES + 1 }, () => "/admin"));
  assertEquals([many.status, errorCode(many)], [400, "BAD_REQUEST"]);
  assertMatch(
    (many.body.error as { message: string }).message,
    new RegExp(`at most ${MAX_SAMPLES} samples`),
  );
  const long = await test(["a".repeat(MAX_SAMPLE_CHARS + 1)]);
  assertEquals([long.status, errorCode(long)], [400, "BAD_REQUEST"]);
  assertMatch((long.body.error as { message: string }).message, /samples\[0\]/);
  const within = await test([...Array.from({ length: MAX_SAMPLES - 1 }, () => "/shop"), "/admin"]);
  assertEquals(within.status, 200);
  assertEquals((within.body.results as { matched: boolean }[]).at(-1)?.matched, true);
  const large = await callJson(s, "POST", "/api/rules/custom/test", {
    session: s.viewer,
    body: { pattern: ISSUE_PATTERN, samples: ["z"] },
  });
  assertEquals([large.status, large.body.valid], [200, false]);
  assertMatch(large.body.error as string, /^Pattern too large/);
});

Deno.test("a tester run past its time limit answers 422 while /health and timers keep running", async () => {
  let spawned = 0;
  const tester = new PatternTester({
    timeoutMs: 300,
    spawn: () => {
      spawned++;
      return new Worker(STUCK_WORKER, { type: "module" });
    },
  });
  await using s = await setup(tester);
  const order: string[] = [];
  const ticks = setInterval(() => order.push("tick"), 20);
  try {
    const testing = callJson(s, "POST", "/api/rules/custom/test", {
      session: s.viewer,
      body: { pattern: ".{1,100}#", samples: ["a".repeat(MAX_SAMPLE_CHARS)] },
    }).then((r) => {
      order.push("tested");
      return r;
    });
    // The main thread answers while the worker spins.
    await new Promise((resolve) => setTimeout(resolve, 100));
    // In-process the data listener is not started: `/health` answers "starting", at once.
    const health = await callJson(s, "GET", "/health");
    order.push(`health ${health.body.status}`);
    const r = await testing;
    assertEquals([r.status, errorCode(r)], [422, "PATTERN_TEST_TIMEOUT"]);
    assertMatch((r.body.error as { message: string }).message, /limit of 300 ms/);
    const tested = order.indexOf("tested");
    const answered = order.indexOf("health starting");
    ok(answered >= 0 && answered < tested, order.join(","));
    ok(order.slice(0, tested).filter((e) => e === "tick").length >= 3, order.join(","));
    // The stuck worker was ended; the next test gets a fresh one.
    const again = await callJson(s, "POST", "/api/rules/custom/test", {
      session: s.viewer,
      body: { pattern: "^/admin", samples: ["/admin"] },
    });
    assertEquals([again.status, spawned], [422, 2]);
  } finally {
    clearInterval(ticks);
  }
});
