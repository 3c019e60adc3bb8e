import {
  assertEquals,
  assertMatch,
  assertRejects,
  assertThrows,
  ok,
} from "../../_helpers/assert.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import {
  createSecretBox,
  createSyncSecretBox,
  TOTP_KEY_FILE,
} from "../../../mod/core/secret_box.ts";

const SECRET = new TextEncoder().encode("12345678901234567890");

Deno.test("the key file is created on first use with mode 0600, and values open again", async () => {
  await using dir = await tempDir();
  const path = `${dir}/${TOTP_KEY_FILE}`;
  const box = createSecretBox(path, systemRandom);
  assertEquals(await Deno.stat(path).then(() => true, () => false), false, "not before use");
  const sealed = await box.seal(SECRET, "u1");
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  assertMatch(sealed, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
  assertEquals(await box.open(sealed, "u1"), SECRET);
  ok(sealed !== await box.seal(SECRET, "u1"), "a fresh IV each time");
  // Another process (or a restart) reads the same key.
  assertEquals(await createSecretBox(path, systemRandom).open(sealed, "u1"), SECRET);
});

Deno.test("a sealed value does not open for another owner, altered, or under another key", async () => {
  await using dir = await tempDir();
  const box = createSecretBox(`${dir}/${TOTP_KEY_FILE}`, systemRandom);
  const sealed = await box.seal(SECRET, "u1");
  await assertRejects(() => box.open(sealed, "u2"));
  const [v, iv, data] = sealed.split(".") as [string, string, string];
  const flipped = data.slice(0, 5) + (data[5] === "A" ? "B" : "A") + data.slice(6);
  await assertRejects(() => box.open([v, iv, flipped].join("."), "u1"));
  await assertRejects(() => box.open("enc:secret", "u1"), /Not a sealed value/);
  await using other = await tempDir();
  await assertRejects(() =>
    createSecretBox(`${other}/${TOTP_KEY_FILE}`, systemRandom).open(sealed, "u1")
  );
});

Deno.test("a too-open key file is tightened to 0600", async () => {
  await using dir = await tempDir();
  const path = `${dir}/${TOTP_KEY_FILE}`;
  await createSecretBox(path, systemRandom).seal(SECRET, "u1");
  await Deno.chmod(path, 0o644);
  await createSecretBox(path, systemRandom).seal(SECRET, "u1");
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("the synchronous box shares the key file and envelope: each opens what the other sealed", async () => {
  await using dir = await tempDir();
  const path = `${dir}/${TOTP_KEY_FILE}`;
  const sync = createSyncSecretBox(path, systemRandom);
  const box = createSecretBox(path, systemRandom);
  const sealed = sync.seal(SECRET, "site.tls.key:a");
  assertMatch(sealed, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  assertEquals(await box.open(sealed, "site.tls.key:a"), SECRET);
  assertEquals(sync.open(await box.seal(SECRET, "u1"), "u1"), SECRET);
  assertThrows(() => sync.open(sealed, "site.tls.key:b"), Error);
  assertThrows(() => sync.open(sealed.slice(0, -2) + "AA", "site.tls.key:a"), Error);
  assertThrows(() => sync.open("v1.AAAA.AA", "site.tls.key:a"), Error);
  assertThrows(() => sync.open(SECRET.toString(), "site.tls.key:a"), Error);
});
