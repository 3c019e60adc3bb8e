import { assertEquals } from "../../../_helpers/assert.ts";
import { type CrpStep, verifyPackage } from "../../../../mod/ops/crp/crp.ts";
import {
  buildPackage,
  generateSigningKey,
  importSigningKey,
} from "../../../../mod/ops/crp/crp_build.ts";
import { DEFAULT_LIMITS, pathProblem } from "../../../../mod/ops/crp/crp_format.ts";
import { tempDir } from "../../../_helpers/temp.ts";

const enc = new TextEncoder();

async function signed(files: number): Promise<{ tar: Uint8Array; key: string }> {
  const { privatePem, publicKey } = await generateSigningKey();
  const tar = await buildPackage({
    name: "b",
    version: "1",
    createdAt: 0,
    files: Array.from({ length: files }, (_, i) => ({ path: `f${i}`, data: enc.encode("x") })),
  }, await importSigningKey(privatePem));
  return { tar, key: publicKey };
}

Deno.test("verifyPackage() enforces the size cap before reading the archive", async () => {
  await using dir = await tempDir();
  const { tar, key } = await signed(1);
  await Deno.writeFile(`${dir}/p.tar`, tar);
  const steps: CrpStep[] = [];
  const small = { ...DEFAULT_LIMITS, maxPackageBytes: tar.length - 1 };
  const verdict = await verifyPackage(`${dir}/p.tar`, [key], (s) => steps.push(s), small);
  assertEquals(verdict.ok ? "ok" : verdict.failure, {
    code: "too_large",
    bytes: tar.length,
    max: tar.length - 1,
  });
  assertEquals(steps, []);
  const exact = { ...DEFAULT_LIMITS, maxPackageBytes: tar.length };
  assertEquals((await verifyPackage(`${dir}/p.tar`, [key], () => {}, exact)).ok, true);
});

Deno.test("verifyPackage() enforces the file-count cap", async () => {
  await using dir = await tempDir();
  const { tar, key } = await signed(10);
  await Deno.writeFile(`${dir}/p.tar`, tar);
  const capped = { ...DEFAULT_LIMITS, maxFiles: 11 };
  const verdict = await verifyPackage(`${dir}/p.tar`, [key], () => {}, capped);
  assertEquals(verdict.ok ? "ok" : verdict.failure, { code: "too_many_files", max: 11 });
  const enough = { ...DEFAULT_LIMITS, maxFiles: 12 };
  assertEquals((await verifyPackage(`${dir}/p.tar`, [key], () => {}, enough)).ok, true);
});

Deno.test("pathProblem() accepts plain relative paths only", () => {
  assertEquals(pathProblem("rules/a-b_c.1.json"), undefined);
  assertEquals(pathProblem("/abs"), "absolute");
  assertEquals(pathProblem("C:/x"), "absolute");
  assertEquals(pathProblem("a/../b"), "dot_dot");
  assertEquals(pathProblem(".."), "dot_dot");
  assertEquals(pathProblem("a\\b"), "backslash");
  assertEquals(pathProblem("a/./b"), "empty");
  assertEquals(pathProblem(""), "empty");
  assertEquals(pathProblem("a/-x"), "characters");
  assertEquals(pathProblem("ü.txt"), "characters");
  assertEquals(pathProblem("a\0b"), "characters");
  assertEquals(pathProblem("a".repeat(256)), "long");
});
