import { assertEquals } from "../../_helpers/assert.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { openLogFile } from "../../../mod/ops/log_file.ts";

Deno.test("openLogFile() appends lines and rotates by size, keeping the newest files", async () => {
  await using dir = await tempDir();
  const log = openLogFile({ dir: `${dir}/logs`, maxBytes: 20, keep: 2 });
  for (let i = 0; i < 7; i++) log.write(`line ${i} ........`); // 19 bytes each with newline
  log.close();
  const read = (name: string) => Deno.readTextFileSync(`${dir}/logs/${name}`);
  assertEquals(read("waf.log"), "line 6 ........\n");
  assertEquals(read("waf.log.1"), "line 5 ........\n");
  assertEquals(read("waf.log.2"), "line 4 ........\n");
  assertEquals([...Deno.readDirSync(`${dir}/logs`)].map((e) => e.name).sort(), [
    "waf.log",
    "waf.log.1",
    "waf.log.2",
  ]);
  assertEquals(Deno.statSync(`${dir}/logs/waf.log`).mode! & 0o777, 0o600);
});

Deno.test("openLogFile() continues an existing file after a restart", async () => {
  await using dir = await tempDir();
  const first = openLogFile({ dir, maxBytes: 1000 });
  first.write("a");
  first.close();
  const second = openLogFile({ dir, maxBytes: 1000 });
  second.write("b");
  second.close();
  assertEquals(Deno.readTextFileSync(`${dir}/waf.log`), "a\nb\n");
});
