import assert from "node:assert/strict";
import { gated, gateOn, literalsOf, reachOf } from "../../engine/literal_gate.ts";
import { prose } from "../bench/engine_body_kinds.ts";

const CODES = "abcdefghijklmnopqrstuvwxyz0123456789";
const decode = (need: Uint8Array[] | undefined) =>
  need?.map((codes) => [...codes].map((c) => CODES[c] ?? "?").join("")).sort();

/** Prose around a probe, so the text is long enough to be gated. */
const FILLER = "The order was shipped to London on Monday, and the customer said thanks. ".repeat(
  16,
);

/** Every regular expression literal in the engine's sources, compiled. */
async function enginePatterns(): Promise<RegExp[]> {
  const out: RegExp[] = [];
  const literal = /(?<=[=(,:?]\s*)\/((?:[^/\\\n[]|\\.|\[(?:[^\]\\\n]|\\.)*\])+)\/([dgimsuy]*)/g;
  for await (const entry of Deno.readDir(new URL("../../engine/", import.meta.url))) {
    if (!entry.name.endsWith(".ts")) continue;
    const source = await Deno.readTextFile(new URL(`../../engine/${entry.name}`, import.meta.url));
    for (const m of source.matchAll(literal)) {
      try {
        out.push(new RegExp(m[1]!, m[2]!.replace("g", "")));
      } catch {
        // A division or a comment that looks like a pattern.
      }
    }
  }
  return out;
}

/** The test data's attacks and benign values: strings many of the patterns match. */
async function probes(): Promise<string[]> {
  const out: string[] = [];
  const walk = (x: unknown) => {
    if (typeof x === "string") out.push(x);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (x !== null && typeof x === "object") Object.values(x).forEach(walk);
  };
  const dir = new URL("../testdata/engine/", import.meta.url);
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.endsWith(".json")) {
      walk(JSON.parse(await Deno.readTextFile(new URL(entry.name, dir))));
    }
  }
  return out;
}

Deno.test("literalsOf() reads the literals every match needs", () => {
  const of = (re: RegExp) => decode(literalsOf(re.source, re.flags));
  assert.deepEqual(
    of(/(?:^|[^.\w$>])(?:phpinfo|getcwd)\s*\(\s*\)/i),
    ["getcwd", "phpinfo"],
  );
  assert.deepEqual(of(/[Tt]ransformer|[Cc]losure/), ["closure", "transformer"]);
  assert.deepEqual(of(/(?<![.\w$>])(?:include(?:_once)?|read)\s*\(/), [
    "include",
    "include?once",
    "read",
  ]);
  assert.deepEqual(of(/\bjava\.lang\.\w+/), ["java?lang?"]);
  assert.deepEqual(of(/\x41\u0042C/), ["abc"]);
  assert.equal(of(/a?b*/), undefined);
  assert.equal(of(/x|\d+/), undefined);
  // Unicode case folding matches `ſ` for `s`: such patterns are left alone.
  assert.equal(of(/system/iu), undefined);
  assert.equal(of(/(?i:x)/), undefined);
});

Deno.test("gated() returns a pattern without literals unchanged", () => {
  const re = /[a-z]+\d/;
  assert.equal(gated(re), re);
});

Deno.test("gated() skips a window without the literals and matches one with them", () => {
  const re = gated(/(?:^|[^.\w$>])(?:phpinfo|getcwd)\s*\(\s*\)/i);
  const without = FILLER + " getcw d() " + FILLER;
  gateOn(without);
  assert.equal(re.test(without), false);
  const withIt = FILLER + " GetCwd ( ) " + FILLER;
  gateOn(withIt);
  assert.equal(re.exec(withIt)?.index, FILLER.length);
  // A global pattern that skips answers as a failed match does: lastIndex back to 0.
  const global = gated(/phpinfo\(\)/g);
  global.lastIndex = 5;
  gateOn(without);
  assert.equal(global.exec(without), null);
  assert.equal(global.lastIndex, 0);
  assert.equal(without.replace(global, "x"), without);
});

Deno.test("gated() finds what every engine pattern finds, in and around the test data", async () => {
  const patterns = (await enginePatterns()).map((re) => [re, gated(re)] as const)
    .filter(([re, g]) => re !== g);
  assert.ok(patterns.length > 200, `only ${patterns.length} patterns gated`);
  let matched = 0;
  for (const probe of await probes()) {
    for (
      const text of [probe + " " + FILLER, "x " + FILLER + probe.toUpperCase()]
    ) {
      gateOn(text);
      for (const [re, g] of patterns) {
        const want = re.exec(text)?.index;
        if (want !== undefined) matched++;
        assert.equal(g.exec(text)?.index, want, `${re} on ${JSON.stringify(probe)}`);
      }
      // A slice of the window is answered from its table.
      const cut = text.slice(2);
      for (const [re, g] of patterns) {
        assert.equal(g.exec(cut)?.index, re.exec(cut)?.index, `${re} on a cut`);
      }
    }
  }
  // A short text is answered by the pattern itself.
  for (const probe of await probes()) {
    for (const [re, g] of patterns) {
      assert.deepEqual(g.exec(probe), re.exec(probe), `${re} on ${JSON.stringify(probe)}`);
      assert.equal(g.test(probe), re.test(probe), `${re} on ${JSON.stringify(probe)}`);
    }
  }
  console.log(`${patterns.length} patterns gated, ${matched} matches compared`);
  assert.ok(matched > 10_000, `only ${matched} matches exercised`);
});

Deno.test("reachOf() bounds how far before its literal a match starts", () => {
  const reach = (re: RegExp) => reachOf(re.source, re.flags);
  assert.equal(reach(/(?:^|[^.\w$>])(?:phpinfo|getcwd)\s*\(\s*\)/i), 1);
  assert.equal(reach(/\bjava\.lang\.\w+/), 0);
  assert.equal(reach(/[a-z]{2,4}-?system/), 4);
  assert.equal(reach(/(?:ab|c)\s*system/), Infinity);
  assert.equal(reach(/x(?=abc)yyy|zz\dqqq/), 3);
});

/** Where a literal of `need` (as codes) starts in `text` from `at` on, within `reach`. */
function literalWithin(need: Uint8Array[], text: string, at: number, reach: number): boolean {
  const codes = Uint8Array.from(text.split(""), (ch) => CODE_OF(ch));
  for (let s = at; s <= at + reach && s < codes.length; s++) {
    for (const lit of need) {
      let k = 0;
      while (k < lit.length && codes[s + k] === lit[k]) k++;
      if (k === lit.length) return true;
    }
  }
  return false;
}

/** The gate's code of one character (as `literal_gate.ts` folds it). */
function CODE_OF(ch: string): number {
  return literalsOf(ch.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"), "")?.[0]?.[0] ?? -1;
}

Deno.test("every match of an engine pattern holds a literal within its reach", async () => {
  const patterns = (await enginePatterns()).filter((re) => {
    const r = reachOf(re.source, re.flags);
    return r !== undefined && r !== Infinity;
  });
  let checked = 0;
  for (const probe of await probes()) {
    const text = "x " + probe;
    for (const re of patterns) {
      const need = literalsOf(re.source, re.flags)!;
      const reach = reachOf(re.source, re.flags)!;
      const global = new RegExp(re.source, re.flags + "g");
      for (const m of text.matchAll(global)) {
        checked++;
        assert.ok(literalWithin(need, text, m.index, reach), `${re} at ${m.index} of ${text}`);
        if (m[0].length === 0) break;
      }
    }
  }
  console.log(`${patterns.length} patterns with a bounded reach, ${checked} matches checked`);
  assert.ok(checked > 5_000, `only ${checked} matches checked`);
});

Deno.test("gated() tried at its literals gives the scan's match inside prose", async () => {
  const patterns = (await enginePatterns()).map((re) => [re, gated(re)] as const)
    .filter(([re, g]) => re !== g);
  const text = prose(6_000, 7);
  let matched = 0;
  let k = 0;
  for (const probe of await probes()) {
    // The probe at a moving place, the prose cut around it, as a window holds it.
    const at = (k++ * 977) % 5_000;
    const window = "x " + text.slice(0, at) + probe + text.slice(at, at + 1_200);
    gateOn(window);
    for (const [re, g] of patterns) {
      const want = re.exec(window);
      if (want !== null) matched++;
      assert.deepEqual(g.exec(window), want, `${re} on ${JSON.stringify(probe)} at ${at}`);
      const cut = window.slice(2);
      assert.deepEqual(g.exec(cut), re.exec(cut), `${re} on a cut`);
    }
  }
  console.log(`${matched} matches compared in prose`);
  assert.ok(matched > 10_000, `only ${matched} matches exercised`);
});
