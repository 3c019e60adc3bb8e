import { assertEquals, assertThrows } from "../../_helpers/assert.ts";
import { readTar, TarError, writeTar } from "../../../mod/ops/tar.ts";

const enc = new TextEncoder();

Deno.test("writeTar() output reads back with names, types and contents", () => {
  const long = `${"d".repeat(80)}/${"e".repeat(60)}/file.txt`;
  const tar = writeTar([
    { name: "a.txt", data: enc.encode("hello"), mtime: 0 },
    { name: "dir", mtime: 0 },
    { name: long, data: enc.encode("x".repeat(1000)), mtime: 0 },
  ]);
  const entries = readTar(tar, 10);
  assertEquals(entries.map((e) => [e.name, e.type, e.size]), [
    ["a.txt", "file", 5],
    ["dir/", "dir", 0],
    [long, "file", 1000],
  ]);
  assertEquals(new TextDecoder().decode(entries[0]!.data), "hello");
});

Deno.test("readTar() refuses a bad checksum, truncation and a missing end marker", () => {
  const tar = writeTar([{ name: "a.txt", data: enc.encode("hello"), mtime: 0 }]);
  const bad = tar.slice();
  bad[0] = "b".charCodeAt(0);
  assertThrows(() => readTar(bad, 10), /bad header checksum/);
  assertThrows(() => readTar(tar.slice(0, 514), 10), /truncated/);
  assertThrows(() => readTar(tar.slice(0, 1024), 10), /no end-of-archive marker/);
  assertThrows(() => readTar(enc.encode("not a tar"), 10), TarError);
});

Deno.test("readTar() stops counting at the entry cap", () => {
  const tar = writeTar(
    Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, data: enc.encode("x"), mtime: 0 })),
  );
  assertEquals(readTar(tar, 5).length, 5);
  assertThrows(() => readTar(tar, 4), /more than 4 entries/);
});
