import { assertEquals } from "../../_helpers/assert.ts";
import { waitFor } from "../../_helpers/wait.ts";
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
  let polls = 0;
  const readProc = (p: string) => {
    if (p.endsWith("/stat")) polls++;
    return proc[p];
  };
  const stop = watchLauncher({ ppid: 50, readProc, intervalMs: 5 }, () => gone++);
  // The first read of the stat file is the start's; three more are the watch's polls.
  await waitFor(() => polls >= 4, "three polls of the launcher");
  assertEquals(gone, 0, "the launcher (40) is still there");
  proc["/proc/50/stat"] = "50 (deno (task)) S 1 50 50 0";
  await waitFor(() => gone > 0, "the watch to see the launcher gone");
  assertEquals(gone, 1);
  stop();
  let never = 0;
  watchLauncher({ ppid: 60, readProc: () => "bash\0" }, () => never++)();
  assertEquals(never, 0);
});
