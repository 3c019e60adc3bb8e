/**
 * The regex tester on its worker (mod/protection/pattern_tester.ts): answers from the worker in
 * order, a bounded queue, the time limit ending a stuck worker, and the idle end. Deadlines are
 * fired by hand; the workers are real (the tester's own, or one that never answers).
 */
import { assertEquals, assertRejects, ok } from "../../_helpers/assert.ts";
import { AppError } from "../../../mod/core/errors.ts";
import type { Deadline } from "../../../mod/core/deadline.ts";
import { MAX_WAITING, PatternTester } from "../../../mod/protection/pattern_tester.ts";

const STUCK_WORKER = new URL("../../_helpers/stuck_pattern_worker.ts", import.meta.url);

/** Deadlines that fire only when the test says so. */
function manualDeadlines() {
  const started: { ms: number; fire: () => void; cancelled: boolean }[] = [];
  const deadline: Deadline = (fire, ms) => {
    const d = { ms, fire, cancelled: false };
    started.push(d);
    return () => void (d.cancelled = true);
  };
  const live = (ms: number) => started.filter((d) => d.ms === ms && !d.cancelled);
  return { deadline, live };
}

Deno.test("PatternTester answers each test from its worker, in the order asked", async () => {
  const tester = new PatternTester();
  try {
    const [a, b] = await Promise.all([
      tester.test("^/admin", false, ["/admin/x", "/shop"]),
      tester.test("SQLMAP", true, ["sqlmap/1.7", "curl"]),
    ]);
    assertEquals(a, { valid: true, matches: [true, false] });
    assertEquals(b, { valid: true, matches: [true, false] });
    const bad = await tester.test("(a", false, []);
    assertEquals(bad.valid, false);
    ok(tester.running);
  } finally {
    tester.close();
  }
  assertEquals(tester.running, false);
});

Deno.test("a test past its time limit ends the stuck worker; tests beyond the queue are refused", async () => {
  const { deadline, live } = manualDeadlines();
  let spawned = 0;
  const tester = new PatternTester({
    timeoutMs: 1000,
    timer: deadline,
    spawn: () => {
      spawned++;
      return new Worker(STUCK_WORKER, { type: "module" });
    },
  });
  try {
    const first = tester.test(".{1,100}#", false, ["a".repeat(4096)]);
    const waiting = Array.from({ length: MAX_WAITING }, () => tester.test("a", false, ["a"]));
    const busy = await tester.test("a", false, ["a"]).catch((e: unknown) => e);
    ok(busy instanceof AppError);
    assertEquals([busy.status, busy.code], [503, "TESTER_BUSY"]);
    // The time limit starts once the worker says it is ready.
    while (live(1000).length === 0) await new Promise((r) => setTimeout(r, 10));
    live(1000)[0]!.fire();
    assertEquals(await first, { valid: "timeout", timeoutMs: 1000 });
    // The next test went to a fresh worker (this one is stuck too).
    while (spawned < 2) await new Promise((r) => setTimeout(r, 10));
    tester.close();
    for (const w of waiting) await assertRejects(w, /closed/);
  } finally {
    tester.close();
  }
});

Deno.test("the tester's worker ends after its idle time and starts again for the next test", async () => {
  const { deadline, live } = manualDeadlines();
  const tester = new PatternTester({ timer: deadline, idleMs: 60_000 });
  try {
    assertEquals((await tester.test("a+", false, ["aaa"])).valid, true);
    ok(tester.running);
    live(60_000)[0]!.fire();
    assertEquals(tester.running, false);
    assertEquals(await tester.test("b+", false, ["b"]), { valid: true, matches: [true] });
  } finally {
    tester.close();
  }
});
