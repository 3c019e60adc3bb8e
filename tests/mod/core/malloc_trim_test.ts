import { assertEquals, ok as assert } from "../../_helpers/assert.ts";
import { startMallocTrimmer } from "../../../mod/core/malloc_trim.ts";
import { runUnderTerminal } from "../../_helpers/terminal.ts";

function rssMb(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const BLOCK = 32 * 1024; // below glibc's mmap threshold: served from an arena
const BLOCKS = 2400; // 75 MB, half of it freed

Deno.test("the trimmer gives freed C-heap pages inside an arena back to the system", async () => {
  const libc = Deno.dlopen("libc.so.6", {
    malloc: { parameters: ["usize"], result: "pointer" },
    free: { parameters: ["pointer"], result: "void" },
    memset: { parameters: ["pointer", "i32", "usize"], result: "pointer" },
  });
  const trimmer = startMallocTrimmer(3_600_000);
  try {
    assert(trimmer.active, "glibc is on this machine");
    const blocks = [];
    for (let i = 0; i < BLOCKS; i++) {
      const p = libc.symbols.malloc(BigInt(BLOCK));
      libc.symbols.memset(p, 1, BigInt(BLOCK));
      blocks.push(p);
    }
    // Every other block is freed: the live ones keep the free ones apart and below the arena's
    // top, where free() never gives pages back.
    const touched = rssMb();
    blocks.forEach((p, i) => i % 2 === 0 && libc.symbols.free(p));
    const freed = rssMb();
    assert(touched - freed < 10, `free() alone kept the pages (${touched} -> ${freed} MB)`);
    assertEquals(await trimmer.trim(), true);
    const trimmed = rssMb();
    assert(freed - trimmed > 25, `the trim returned them (${freed} -> ${trimmed} MB)`);
    blocks.forEach((p, i) => i % 2 === 1 && libc.symbols.free(p));
  } finally {
    await trimmer.stop();
    libc.close();
  }
});

Deno.test("a stopped trimmer trims no more", async () => {
  const trimmer = startMallocTrimmer(3_600_000);
  await trimmer.stop();
  assertEquals(await trimmer.trim(), false);
  await trimmer.stop();
});

Deno.test("without --allow-ffi on a terminal the trimmer stays off instead of prompting (which blocks the event loop)", async () => {
  const module = new URL("../../../mod/core/malloc_trim.ts", import.meta.url).href;
  const text = await runUnderTerminal(
    `import { startMallocTrimmer } from ${JSON.stringify(module)};
const t = startMallocTrimmer(50);
console.log("active=" + t.active);
await t.stop();
console.log("stopped");
`,
    ["--allow-read"],
  );
  assert(!text.includes("Allow?"), `it prompted for FFI:\n${text}`);
  assert(text.includes("active=false") && text.includes("stopped"), text);
});
