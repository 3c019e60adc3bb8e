import { assertEquals, assertMatch, notEqual, ok } from "../../_helpers/assert.ts";
import {
  constantTimeEqual,
  dummyHash,
  hashPassword,
  needsRehash,
  PBKDF2_ITERATIONS,
  setHashIterationsForTests,
  verifyPassword,
} from "../../../mod/identity/password_hash.ts";

// The product's cost: this file measures what users get, whatever a helper set.
setHashIterationsForTests(undefined);

Deno.test("hashPassword() encodes PBKDF2-SHA256 with 600,000 iterations and a 16-byte salt", async () => {
  const h = await hashPassword("Correct-Horse-9");
  assertMatch(h, /^pbkdf2-sha256\$600000\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assertEquals(PBKDF2_ITERATIONS, 600_000);
  ok(!h.includes("Correct-Horse-9"));
});

Deno.test("hashPassword() salts: the same password hashes differently each time", async () => {
  notEqual(await hashPassword("Correct-Horse-9"), await hashPassword("Correct-Horse-9"));
});

Deno.test("verifyPassword() accepts the right password and refuses any other", async () => {
  const h = await hashPassword("Correct-Horse-9");
  ok(await verifyPassword("Correct-Horse-9", h));
  ok(!(await verifyPassword("correct-Horse-9", h)));
  ok(!(await verifyPassword("Correct-Horse-9 ", h)));
  ok(!(await verifyPassword("", h)));
});

Deno.test("verifyPassword() never matches a malformed hash or the dummy hash", async () => {
  for (const bad of ["", "plain", "pbkdf2-sha256$x$y$z", "md5$1$aa$bb", "pbkdf2-sha256$0$AA$AA"]) {
    ok(!(await verifyPassword("anything", bad)), bad);
  }
  ok(!(await verifyPassword("", dummyHash())));
  assertMatch(
    dummyHash(),
    /^pbkdf2-sha256\$600000\$/,
    "an unknown user costs what a known one does",
  );
});

Deno.test("needsRehash() asks for a rehash of weaker hashes", async () => {
  ok(!needsRehash(await hashPassword("Correct-Horse-9")));
  ok(needsRehash("pbkdf2-sha256$1000$AAAAAAAAAAAAAAAAAAAAAA$AAAA"));
});

Deno.test("constantTimeEqual() compares content and length", () => {
  ok(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3])));
  ok(!constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4])));
  ok(!constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3, 1])));
});

Deno.test("password derivations run one at a time, so a burst of logins cannot take every core", async () => {
  const original = crypto.subtle.deriveBits;
  let running = 0;
  let most = 0;
  crypto.subtle.deriveBits = async function (this: SubtleCrypto, ...args) {
    running++;
    most = Math.max(most, running);
    try {
      return await original.apply(this, args);
    } finally {
      running--;
    }
  } as typeof original;
  try {
    const hashes = await Promise.all(
      ["Correct-Horse-1", "Correct-Horse-2", "Correct-Horse-3"].map((p) => hashPassword(p)),
    );
    assertEquals(most, 1);
    assertEquals(await verifyPassword("Correct-Horse-2", hashes[1]!), true);
  } finally {
    crypto.subtle.deriveBits = original;
  }
});

Deno.test("in-process tests may lower the cost; no product code can", async () => {
  setHashIterationsForTests(1_000);
  try {
    const h = await hashPassword("Correct-Horse-9");
    assertMatch(h, /^pbkdf2-sha256\$1000\$/);
    ok(await verifyPassword("Correct-Horse-9", h));
    ok(!needsRehash(h));
  } finally {
    setHashIterationsForTests(undefined);
  }
  const h = await hashPassword("Correct-Horse-9");
  assertMatch(h, /^pbkdf2-sha256\$600000\$/);
  const root = new URL("../../../", import.meta.url).pathname;
  const callers: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(`${root}${dir}`)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) walk(path);
      else if (/\.(ts|js)$/.test(e.name) && path !== "mod/identity/password_hash.ts") {
        if (Deno.readTextFileSync(`${root}${path}`).includes("setHashIterationsForTests")) {
          callers.push(path);
        }
      }
    }
  };
  for (const dir of ["app", "cli", "console", "db", "engine", "mod", "net", "routes", "scripts"]) {
    walk(dir);
  }
  assertEquals(callers, []);
  ok(!Deno.readTextFileSync(`${root}main.ts`).includes("setHashIterationsForTests"));
});
