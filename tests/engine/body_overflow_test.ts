/**
 * A body holding more values than a request may have inputs: its values up to the cap are
 * judged one by one, and its text from the first value left out (with a window's overlap
 * before it) is judged as text, so a payload past the cap is still seen and the values before
 * it are not read a second time.
 */
import assert from "node:assert/strict";
import { extract, MAX_INPUTS } from "../../engine/extract.ts";
import { inspect } from "../../engine/inspect.ts";
import { WINDOW_OVERLAP } from "../../engine/limits.ts";
import type { EngineRequest } from "../../engine/types.ts";

const enc = new TextEncoder();

function post(type: string, text: string): EngineRequest {
  return {
    method: "POST",
    path: "/api",
    query: "",
    headers: [["content-type", type]],
    body: enc.encode(text),
  };
}

/** `count` JSON objects with one short string value each, then `last`. */
function jsonBody(count: number, last: string): string {
  const items = Array.from({ length: count }, (_, i) => JSON.stringify({ note: `note ${i}` }));
  return `[${items.join(",")},${JSON.stringify({ note: last })}]`;
}

const ATTACK = "1' union select password from users--";

Deno.test("a JSON body past the input cap has its text judged from the first value left out", () => {
  const text = jsonBody(MAX_INPUTS + 500, ATTACK);
  const inputs = extract(post("application/json", text));
  assert.equal(inputs.length, MAX_INPUTS);
  const body = inputs[inputs.length - 1]!;
  assert.equal(body.source, "body");
  // The text starts a window's overlap before the first value that is not an input of its own
  // (the path is the first input, so the values kept are `note 0` to `note 4093`).
  assert.equal(inputs[inputs.length - 2]!.value, `note ${MAX_INPUTS - 3}`);
  const firstLeftOut = text.indexOf(`"note ${MAX_INPUTS - 2}"`);
  assert.equal(body.value, text.slice(firstLeftOut - WINDOW_OVERLAP));
  const verdict = inspect(post("application/json", text), { level: "balanced" });
  assert.equal(verdict.blocking?.class, "sqli");
  assert.equal(verdict.blocking?.location, "body");
});

Deno.test("a form body past the input cap has its text judged from the first field left out", () => {
  const fields = Array.from({ length: MAX_INPUTS + 500 }, (_, i) => `f${i}=v+${i}`);
  const text = `${fields.join("&")}&q=${encodeURIComponent(ATTACK)}`;
  const inputs = extract(post("application/x-www-form-urlencoded", text));
  const body = inputs[inputs.length - 1]!;
  assert.equal(body.source, "body");
  assert.equal(inputs[inputs.length - 2]!.name, `f${MAX_INPUTS - 3}`);
  const firstLeftOut = text.indexOf(`&f${MAX_INPUTS - 2}=`) + 1;
  assert.equal(body.value, text.slice(firstLeftOut - WINDOW_OVERLAP));
  const verdict = inspect(post("application/x-www-form-urlencoded", text), { level: "balanced" });
  assert.equal(verdict.blocking?.class, "sqli");
});

Deno.test("a body past the input cap that is not clean JSON is still judged whole", () => {
  // Text between the values that no JSON has: the values do not cover it, so nothing is skipped.
  const text = `[1 union select password from users, ${jsonBody(MAX_INPUTS + 10, "x").slice(1)}`;
  const inputs = extract(post("application/json", text));
  const body = inputs[inputs.length - 1]!;
  assert.equal(body.source, "body");
  assert.equal(body.value, text);
});
