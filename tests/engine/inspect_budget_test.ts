/**
 * The engine's per-request inspection budget (issue #37, item 4): work is counted in units (a
 * character read by one detector), so what happens when it runs out is deterministic; at every
 * level the run judges what it read, stops, and says so (`truncated`), never stalls. The
 * default budget judges whole every adversarial body shape of `scripts/bench_shapes.ts`.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { inspect, InspectionRun } from "../../engine/inspect.ts";
import { DETECTORS } from "../../engine/detectors.ts";
import type { EngineRequest } from "../../engine/types.ts";

const FORM = "application/x-www-form-urlencoded";
/** Detectors every plain value is read by: SQL injection, XSS and the registry's. */
const ALL = DETECTORS.length + 2;

function post(body: string, type = FORM): EngineRequest {
  return {
    method: "POST",
    path: "/comment",
    query: "",
    headers: [["content-type", type]],
    body: new TextEncoder().encode(body),
  };
}

Deno.test("inspect() charges every detector's read of a value, not only its characters", () => {
  const value = "a b ".repeat(50);
  const req = post(`q=${value.replaceAll(" ", "+")}`);
  // The characters alone fit many times over; the detectors' reads of them (and decoding) not.
  const cut = inspect(req, { level: "balanced", budget: value.length * ALL });
  assertEquals(cut.truncated, true);
  const whole = inspect(req, { level: "balanced", budget: value.length * (ALL + 4) });
  assertEquals(whole.truncated, false);
});

Deno.test("when the budget runs out, what was read is judged and the rest is not", () => {
  const pad = "x+y+".repeat(100);
  const attackFirst = post(`a=1'+or+1=1--&b=${pad}&c=${pad}`);
  const attackLast = post(`a=${pad}&b=${pad}&c=1'+or+1=1--`);
  // Room for the first two fields' reads, not the third's.
  const budget = (pad.length + 40) * ALL * 2;
  const first = inspect(attackFirst, { level: "balanced", budget });
  assertEquals([first.blocking?.ruleId, first.truncated], ["sqli.tautology", true]);
  const last = inspect(attackLast, { level: "balanced", budget });
  assertEquals([last.blocking, last.truncated], [undefined, true]);
  // The outcome is the same every time: work is counted, not timed.
  assertEquals(inspect(attackLast, { level: "balanced", budget }), last);
  assertEquals(inspect(attackFirst, { level: "balanced" }).truncated, false);
  assertEquals(inspect(attackLast, { level: "balanced" }).blocking?.ruleId, "sqli.tautology");
});

Deno.test("InspectionRun.stop() ends a run where it is: judged so far, flagged as cut", () => {
  const body = `text=${"word+".repeat(50_000)}%3Bcat+/etc/passwd`;
  const run = new InspectionRun(post(body), { level: "balanced" });
  ok(run.step());
  run.stop();
  assertEquals(run.step(), false);
  const r = run.result();
  assertEquals([r.blocking, r.truncated], [undefined, true]);
  const whole = inspect(post(body), { level: "balanced" });
  assertEquals([whole.blocking?.class, whole.truncated], ["rce", false]);
});

/** Bodies of `unit` repeated to 1 MiB (the shapes of scripts/bench_shapes.ts that cost most). */
const SHAPES: ReadonlyArray<readonly [string, string, string]> = [
  ["tag-open", FORM, "q=<a "],
  ["tag-attr", FORM, "q=<a href=x "],
  ["entity-amp", FORM, "q=%26"],
  ["eval-subst", FORM, "q=eval($("],
  ["sql-or-star", FORM, "q=or*"],
  ["many-names", FORM, "a<b=1&"],
  ["object-nest", "application/json", '{"a":'],
  ["base64-nested", FORM, `q=${btoa(btoa(btoa("<a href='x'>")))}`],
];

Deno.test("the default budget judges a whole 1 MiB body of every adversarial shape", () => {
  const MIB = 1 << 20;
  const tail = "%0A%3Bcat+/etc/passwd";
  for (const [name, type, unit] of SHAPES) {
    const [head, repeat] = unit.startsWith("q=") ? ["q=", unit.slice(2)] : ["", unit];
    const body = head + repeat.repeat(Math.floor((MIB - head.length) / repeat.length));
    const r = inspect(post(body + (type === FORM ? tail : ""), type), { level: "balanced" });
    assertEquals(r.truncated, false, name);
    if (type === FORM && head !== "") assertEquals(r.blocking?.class !== undefined, true, name);
  }
});
