/** The command line's stream writers: every byte written, a closed reader dropped quietly. */
import { assertEquals, assertThrows } from "../_helpers/assert.ts";
import { streamWriter } from "../../cli/stdio.ts";

Deno.test("streamWriter() writes every byte when the sink takes a write in parts", () => {
  const got: number[] = [];
  const write = streamWriter({
    writeSync(bytes) {
      const n = Math.min(3, bytes.length);
      got.push(...bytes.subarray(0, n));
      return n;
    },
  });
  write("hello, world\n");
  assertEquals(new TextDecoder().decode(new Uint8Array(got)), "hello, world\n");
});

Deno.test("streamWriter() drops this and every later text once the reader is gone (BrokenPipe)", () => {
  let calls = 0;
  const write = streamWriter({
    writeSync() {
      calls++;
      throw new Deno.errors.BrokenPipe("Broken pipe (os error 32)");
    },
  });
  write("first\n");
  write("second\n");
  assertEquals(calls, 1);
});

Deno.test("streamWriter() lets any other write error through", () => {
  const write = streamWriter({
    writeSync() {
      throw new Deno.errors.PermissionDenied("no");
    },
  });
  assertThrows(() => write("x"), Deno.errors.PermissionDenied);
});
