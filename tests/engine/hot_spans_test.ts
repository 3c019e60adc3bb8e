/**
 * Long values are judged only around their triggers (engine/hot_spans.ts): an attack that
 * blocks alone must still block inside a long body, wherever it lies, and a long body of prose
 * must be mostly skipped.
 */
import assert from "node:assert/strict";
import { inspect, judgeHotSpans } from "../../engine/inspect.ts";
import { hotSpans, kindOf } from "../../engine/hot_spans.ts";
import type { EngineRequest } from "../../engine/types.ts";
import { BODY_KINDS, prose } from "../bench/engine_body_kinds.ts";
import { MAX_TEXT, WINDOW_OVERLAP } from "../../engine/limits.ts";

const DIR = new URL("../testdata/engine/", import.meta.url);
const STEP = MAX_TEXT - WINDOW_OVERLAP;

type Case = string | { readonly value?: string; readonly level?: string };

/** Every attack string of the test data that is judged at `balanced`. */
async function attackStrings(): Promise<string[]> {
  const out = new Set<string>();
  for await (const entry of Deno.readDir(DIR)) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    const file = JSON.parse(await Deno.readTextFile(new URL(entry.name, DIR))) as {
      attack: Case[];
    };
    for (const c of file.attack) {
      if (typeof c === "string") out.add(c);
      else if (c.value !== undefined && (c.level ?? "balanced") === "balanced") out.add(c.value);
    }
  }
  return [...out].sort();
}

function post(type: string, body: string): EngineRequest {
  return {
    method: "POST",
    path: "/notes",
    query: "",
    headers: [["host", "shop.example.com"], ["content-type", type]],
    body: new TextEncoder().encode(body),
  };
}

/** The shapes a long body takes, each with the value alone. */
const SHAPES: ReadonlyArray<readonly [string, (text: string) => EngineRequest]> = [
  ["text/plain", (t) => post("text/plain", t)],
  ["a JSON string", (t) => post("application/json", JSON.stringify({ note: t }))],
  [
    "a form field",
    (t) => post("application/x-www-form-urlencoded", new URLSearchParams({ note: t }).toString()),
  ],
];

const PROSE = prose(40_000, 11);

/** Offsets: the start, a window's edge (the attack across it), the middle, the end. */
function offsets(n: number): number[] {
  return [0, STEP - Math.floor(n / 2), MAX_TEXT - 3, 20_011, PROSE.length];
}

/** Whether a request blocks at `balanced`, its long values judged in whole windows. */
function blocksWhole(req: EngineRequest): boolean {
  judgeHotSpans(false);
  try {
    return inspect(req, { level: "balanced" }).blocking !== undefined;
  } finally {
    judgeHotSpans(true);
  }
}

/** The prose a kilobyte each side of `at`, around `attack`: a short value, judged whole. */
function near(attack: string, at: number): string {
  return `${PROSE.slice(Math.max(0, at - 1000), at)} ${attack} ${PROSE.slice(at, at + 1000)}`;
}

Deno.test("an attack that blocks alone and in prose still blocks inside 40 KB of it", async () => {
  const attacks = await attackStrings();
  let judged = 0;
  const lost: string[] = [];
  for (const attack of attacks) {
    for (const [shape, make] of SHAPES) {
      if (inspect(make(attack), { level: "balanced" }).blocking === undefined) continue;
      for (const at of offsets(attack.length)) {
        // A space each side, as an attack lies in running text.
        const req = make(`${PROSE.slice(0, at)} ${attack} ${PROSE.slice(at)}`);
        if (inspect(req, { level: "balanced" }).blocking !== undefined) {
          judged++;
          continue;
        }
        // What the detectors do not find in the prose around it (a short value, judged
        // whole), or what whole windows do not find either, is not the hot spans' loss. (Whole
        // windows also find what a window's edge cuts into a new shape, `/var/log/x` cut to
        // `2/access.log`: the short value is the reference for those.)
        const short = inspect(make(near(attack, at)), { level: "balanced" }).blocking;
        if (short !== undefined && blocksWhole(req)) {
          lost.push(`${JSON.stringify(attack)} as ${shape} at ${at}`);
        }
      }
    }
  }
  assert.ok(judged > 1000, `only ${judged} long bodies blocked`);
  assert.deepEqual(lost, []);
});

Deno.test("a long body of prose, JSON or form is judged in a small part", () => {
  const out: number[] = [];
  const sql: number[] = [];
  for (const [name, req] of BODY_KINDS) {
    const text = new TextDecoder().decode(req.body);
    const value = name === "prose as a JSON string" ? JSON.parse(text).message as string : text;
    const source = name === "prose as a JSON string" ? "json" : "body";
    const kind = kindOf(source, value);
    let hot = 0;
    for (let at = 0; at < value.length; at += STEP) {
      const window = value.slice(at, at + MAX_TEXT);
      const last = at + MAX_TEXT >= value.length;
      hotSpans(
        window,
        kind,
        "literal",
        at > 0 ? 1024 : 0,
        last ? window.length : STEP + 1024,
        out,
        sql,
      );
      for (let k = 0; k < out.length; k += 2) hot += out[k + 1]! - out[k]!;
      if (last) break;
    }
    assert.ok(hot / value.length < 0.2, `${name}: ${(hot / value.length * 100).toFixed(1)} %`);
  }
});

Deno.test("the kind of a long value follows its source and shape", () => {
  assert.equal(kindOf("json", "x".repeat(20_000)), "text");
  assert.equal(kindOf("form", "a+b".repeat(9_000)), "encoded");
  assert.equal(kindOf("body", '{"a":"b","c":1,"d":[1],"e":"f",'.repeat(900)), "json");
  assert.equal(kindOf("body", "a=1&b%5B0%5D=x+y&".repeat(1_500)), "form");
  assert.equal(kindOf("body", PROSE), "text");
});

Deno.test("a trigger is found past the margin, not in prose around it", () => {
  const out: number[] = [];
  const sql: number[] = [];
  const text = PROSE.slice(0, 16_000);
  hotSpans(text, "text", "literal", 0, text.length, out, sql);
  const quiet = out.length;
  const attacked = `${text.slice(0, 8_000)} 1' or '1'='1 ${text.slice(8_000)}`.slice(0, 16_384);
  hotSpans(attacked, "text", "literal", 0, attacked.length, out, sql);
  assert.ok(out.length > quiet || out.length > 0);
  let covered = false;
  for (let k = 0; k < out.length; k += 2) {
    if (out[k]! <= 8_000 - 1_000 && out[k + 1]! >= 8_020 + 1_000) covered = true;
  }
  assert.ok(covered, JSON.stringify(out));
});
