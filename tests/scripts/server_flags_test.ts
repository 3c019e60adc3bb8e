import { ok } from "../_helpers/assert.ts";
import { SERVER_DENO_FLAGS, SERVER_V8_FLAGS } from "../../scripts/server_flags.ts";

// `deno task start` cannot import the flags, so deno.json spells them out: they must stay the
// string the compiled binary (scripts/compile.ts imports it) and the benchmarks run with.
const tasks: Record<string, string> = JSON.parse(
  Deno.readTextFileSync(new URL("../../deno.json", import.meta.url)),
).tasks;

Deno.test("deno task start runs the server with the shipped V8 flags", () => {
  ok(tasks.start!.split(" ").includes(SERVER_V8_FLAGS), tasks.start);
});

Deno.test("bench:memory measures with the shipped V8 flags (plus --expose-gc)", () => {
  ok(tasks["bench:memory"]!.split(" ").includes(`${SERVER_V8_FLAGS},--expose-gc`));
});

Deno.test("deno task start runs the server without the V8 code cache, as the binary and benchmarks do", () => {
  ok(SERVER_DENO_FLAGS.includes("--no-code-cache"));
  for (const flag of SERVER_DENO_FLAGS) ok(tasks.start!.split(" ").includes(flag), tasks.start);
});
