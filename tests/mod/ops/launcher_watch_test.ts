import { assertEquals } from "../../_helpers/assert.ts";
import { isDenoTask, watchLauncher } from "../../../mod/ops/launcher_watch.ts";

Deno.test("isDenoTask() recognises `deno task ...` and nothing else", () => {
  assertEquals(isDenoTask("/root/.npm/_npx/x/node_modules/deno/deno\0task\0start\0"), true);
  assertEquals(isDenoTask("deno\0task\0start"), true);
  assertEquals(isDenoTask("deno\0run\0-A\0main.ts"), false);
  assertEquals(isDenoTask("/usr/bin/bash\0"), false);
  assertEquals(isDenoTask(undefined), false);
});

Deno.test("watchLauncher() fires once the deno task parent is re-parented, never otherwise", async () => {
  const proc: Record<string, string> = {
    "/proc/50/cmdline": "deno\0task\0start\0",
    "/proc/50/stat": "50 (deno (task)) S 40 50 50 0",
  };
  let gone = 0;
  const stop = watchLauncher({ ppid: 50, readProc: (p) => proc[p], intervalMs: 5 }, () => gone++);
  await new Promise((r) => setTimeout(r, 30));
  assertEquals(gone, 0, "the launcher (40) is still there");
  proc["/proc/50/stat"] = "50 (deno (task)) S 1 50 50 0";
  await new Promise((r) => setTimeout(r, 30));
  assertEquals(gone, 1);
  stop();
  let never = 0;
  watchLauncher({ ppid: 60, readProc: () => "bash\0" }, () => never++)();
  assertEquals(never, 0);
});
