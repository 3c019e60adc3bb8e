import { assertEquals, ok } from "../_helpers/assert.ts";
import { checkRe2, compileRe2, OVERLAP, re2Stats, SLICE } from "../../engine/re2.ts";

Deno.test("compileRe2() shares an expression by source and flags, and the last release frees it", () => {
  const before = re2Stats().patterns;
  const a = compileRe2("shared-[0-9]+");
  const b = compileRe2("shared-[0-9]+");
  const c = compileRe2("shared-[0-9]+", { ignoreCase: true });
  ok(a.ok && b.ok && c.ok);
  ok(a.matcher === b.matcher);
  assertEquals(re2Stats().patterns, before + 2);
  a.matcher.release();
  assertEquals(re2Stats().patterns, before + 2, "b still holds it");
  b.matcher.release();
  c.matcher.release();
  assertEquals(re2Stats().patterns, before);
});

Deno.test("a released matcher still answers (a request that began on a replaced policy)", () => {
  const r = compileRe2("late-(one|two)");
  ok(r.ok);
  r.matcher.release();
  assertEquals(r.matcher.test("x late-two y"), true);
  assertEquals(r.matcher.test("x late-three y"), false);
});

Deno.test("3,000 compile-and-release cycles of distinct large patterns leave the heap usable", () => {
  for (let i = 0; i < 3_000; i++) {
    const r = compileRe2(`^/cycle-${i}/(a|b|c)[a-z]{1,60}${"y".repeat(300)}`);
    ok(r.ok, `cycle ${i}: ${r.ok ? "" : r.message}`);
    r.matcher.release();
  }
  const fresh = compileRe2("fresh-[0-9]+");
  ok(fresh.ok);
  assertEquals(fresh.matcher.test("a fresh-1 b"), true);
  fresh.matcher.release();
});

Deno.test("checking patterns keeps nothing, refused ones included", () => {
  const before = re2Stats().patterns;
  for (let i = 0; i < 2_000; i++) {
    assertEquals(checkRe2(`check-${i}-[a-z]{1,60}${"z".repeat(300)}`), undefined);
    assertEquals(checkRe2(`(unclosed-${i}${"z".repeat(3000)}`)?.reason, "syntax");
  }
  assertEquals(re2Stats().patterns, before);
  ok(compileRe2("still-fits").ok);
});

Deno.test("a pattern that does not fit RE2's heap is refused for memory, and the heap stays usable", () => {
  // \p{L} expands to a large UTF-8 automaton; a thousand of them need more than the whole heap,
  // and the program-size limit (re2_cost.ts) refuses such a pattern before RE2 builds it at all.
  const huge = checkRe2("(\\p{L}|[0-9]){1000}");
  assertEquals(huge?.reason, "size");
  ok(huge?.message.startsWith("Pattern too large"));
  const held = [];
  let refused: string | undefined;
  for (let i = 0; i < 40 && refused === undefined; i++) {
    // Under the program-size limit (re2_cost.ts), yet a few hundred kilobytes of heap each.
    const r = compileRe2(`(\\p{L}|[0-9]){3}#${i}`);
    if (r.ok) held.push(r.matcher);
    else refused = r.reason;
  }
  assertEquals(refused, "memory", "filling the heap ends in a memory refusal");
  ok(held.length > 0);
  const small = compileRe2("small-[0-9]+");
  ok(small.ok, "a small pattern still fits in the headroom kept for matching");
  assertEquals(small.matcher.test("x small-7"), true);
  small.matcher.release();
  for (const m of held) assertEquals(m.test(`${"7".repeat(100)}#0`), m === held[0]);
  for (const m of held) m.release();
  const after = compileRe2("(\\p{L}|[0-9]){3}#again");
  ok(after.ok, "released patterns make room again");
  after.matcher.release();
});

Deno.test("inputs longer than a slice are matched slice by slice with ^, $ and matches across a boundary intact", () => {
  const long = (at: number, text: string, length = 3 * SLICE) =>
    "a".repeat(at) + text + "a".repeat(Math.max(0, length - at - text.length));
  const m = (pattern: string) => {
    const r = compileRe2(pattern);
    if (!r.ok) throw new Error(r.message);
    return r.matcher;
  };
  const across = m("needle-[0-9]+-end");
  assertEquals(across.test(long(SLICE - 6, "needle-123-end")), true, "across the first boundary");
  assertEquals(across.test(long(3 * SLICE - 20, "needle-9-end")), true, "in the last slice");
  assertEquals(across.test(long(SLICE - 6, "needle-123-xnd")), false);
  const start = m("^bbb");
  assertEquals(start.test(long(SLICE - OVERLAP, "bbb")), false, "^ is the input's start only");
  assertEquals(start.test("bbb" + "a".repeat(2 * SLICE)), true);
  const end = m("ccc$");
  assertEquals(end.test(long(SLICE - 3, "ccc")), false, "$ is the input's end only");
  assertEquals(end.test(long(2 * SLICE - OVERLAP - 3, "ccc")), false);
  assertEquals(end.test("a".repeat(3 * SLICE) + "ccc"), true);
  const word = m("\\bword\\b");
  assertEquals(word.test(long(SLICE - OVERLAP - 1, "xword")), false, "\\b sees the context");
  // A 20 MB body: ten times the slice, far beyond the heap as one copy.
  assertEquals(across.test(long(20_000_000, "needle-5-end", 20_000_100)), true);
  for (const x of [across, start, end, word]) x.release();
});
