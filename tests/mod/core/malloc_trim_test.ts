import { assertEquals, ok as assert } from "../../_helpers/assert.ts";
import { startMallocTrimmer } from "../../../mod/core/malloc_trim.ts";
import { runUnderTerminal } from "../../_helpers/terminal.ts";

const BLOCK = 32 * 1024; // below glibc's mmap threshold: served from an arena
const BLOCKS = 2400; // 75 MB, half of it freed
const PAGE = 4096;

/**
 * The trim is judged by the freed holes' own pages (`mincore`), not by the process's resident
 * size: `deno test --parallel` runs other test files in this process, whose allocations and frees
 * moved RSS by tens of MB while this test ran (CI once saw 451.7 -> 432.3 MB, 19 MB "returned"
 * where the holes held 33).
 */
Deno.test("the trimmer gives freed C-heap pages inside an arena back to the system", async () => {
  const libc = Deno.dlopen("libc.so.6", {
    malloc: { parameters: ["usize"], result: "pointer" },
    free: { parameters: ["pointer"], result: "void" },
    memset: { parameters: ["pointer", "i32", "usize"], result: "pointer" },
    mincore: { parameters: ["pointer", "usize", "buffer"], result: "i32" },
  });
  // The whole pages inside a block, past glibc's chunk header and free-list pointers.
  const interior = (p: Deno.PointerValue) => {
    const address = BigInt(Deno.UnsafePointer.value(p));
    const first = (address + 64n + BigInt(PAGE - 1)) / BigInt(PAGE) * BigInt(PAGE);
    const end = (address + BigInt(BLOCK)) / BigInt(PAGE) * BigInt(PAGE);
    return { first, pages: Number((end - first) / BigInt(PAGE)) };
  };
  const residentPages = (blocks: Deno.PointerValue[]) => {
    let resident = 0, total = 0;
    const vec = new Uint8Array(BLOCK / PAGE);
    for (const p of blocks) {
      const { first, pages } = interior(p);
      const code = libc.symbols.mincore(
        Deno.UnsafePointer.create(first),
        BigInt(pages * PAGE),
        vec,
      );
      assertEquals(code, 0, "mincore answered");
      for (let i = 0; i < pages; i++) resident += vec[i]! & 1;
      total += pages;
    }
    return { resident, total };
  };
  const trimmer = startMallocTrimmer(3_600_000);
  try {
    assert(trimmer.active, "glibc is on this machine");
    const blocks: Deno.PointerValue[] = [];
    for (let i = 0; i < BLOCKS; i++) {
      const p = libc.symbols.malloc(BigInt(BLOCK));
      libc.symbols.memset(p, 1, BigInt(BLOCK));
      blocks.push(p);
    }
    // Every other block is freed: the live ones keep the free ones apart and below the arena's
    // top, where free() never gives pages back.
    const holes = blocks.filter((_, i) => i % 2 === 0);
    holes.forEach((p) => libc.symbols.free(p));
    const freed = residentPages(holes);
    assert(freed.total >= holes.length * 6, `the holes span whole pages (${freed.total})`);
    // Another thread of this process may reuse a few holes before the trim: nearly all, not all.
    assert(
      freed.resident > freed.total * 0.9,
      `free() alone kept the pages (${freed.resident} of ${freed.total} resident)`,
    );
    assertEquals(await trimmer.trim(), true);
    const trimmed = residentPages(holes);
    assert(
      trimmed.resident < trimmed.total * 0.1,
      `the trim returned them (${freed.resident} -> ${trimmed.resident} of ${trimmed.total} pages resident)`,
    );
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
