import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { tempDir } from "../_helpers/temp.ts";
import {
  buildPackage,
  generateSigningKey,
  importSigningKey,
  manifestFor,
  signManifest,
} from "../../mod/ops/crp/crp_build.ts";
import { writeTar } from "../../mod/ops/tar.ts";

const enc = new TextEncoder();
const NOW = Date.UTC(2026, 0, 1);
const FILES = [
  { path: "rules/sqli.json", data: enc.encode('{"rules":[]}\n') },
  { path: "README.txt", data: enc.encode("rules bundle\n") },
];

interface Fixture {
  dir: string;
  key: CryptoKey;
  publicKey: string;
}

/** A data directory whose waf.yaml trusts a fresh signing key. */
async function fixture(dir: string, trust = true): Promise<Fixture> {
  const { privatePem, publicKey } = await generateSigningKey();
  const keys = trust ? `["${publicKey}"]` : "[]";
  await Deno.writeTextFile(`${dir}/waf.yaml`, `crp:\n  public_keys: ${keys}\n`);
  return { dir, key: await importSigningKey(privatePem), publicKey };
}

async function writePackage(path: string, tar: Uint8Array): Promise<string> {
  await Deno.writeFile(path, tar);
  return path;
}

/** Rewrites the type flag of entry `index` and fixes its header checksum. */
function retype(tar: Uint8Array, name: string, flag: string): Uint8Array {
  const out = tar.slice();
  for (let offset = 0; offset + 512 <= out.length; offset += 512) {
    const header = out.subarray(offset, offset + 512);
    const entry = new TextDecoder().decode(header.subarray(0, 100)).replace(/\0.*$/s, "");
    if (entry !== name) continue;
    header[156] = flag.charCodeAt(0);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!;
    header.set(enc.encode(sum.toString(8).padStart(7, "0") + "\0"), 148);
    return out;
  }
  throw new Error(`no entry ${name}`);
}

/** A signed manifest for `listed` packed together with `present` (which may differ). */
async function craft(
  key: CryptoKey,
  listed: { path: string; data: Uint8Array }[],
  present: { name: string; data?: Uint8Array }[],
): Promise<Uint8Array> {
  const manifest = await manifestFor({
    name: "bundle",
    version: "1.0.0",
    createdAt: NOW,
    files: listed,
  });
  return writeTar([
    { name: "manifest.json", data: manifest, mtime: 0 },
    { name: "manifest.sig", data: await signManifest(manifest, key), mtime: 0 },
    ...present.map((p) => ({ ...p, mtime: 0 })),
  ]);
}

async function verify(dir: string, pkg: string) {
  return await cli(["crp", "verify", pkg, "--data-dir", dir]);
}

Deno.test("waf crp verify accepts a signed package and prints every check", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const pkg = await writePackage(
    `${dir}/bundle.tar`,
    await buildPackage({ name: "bundle", version: "1.0.0", createdAt: NOW, files: FILES }, f.key),
  );
  const r = await verify(dir, pkg);
  assertEquals(r.code, 0, r.stderr);
  for (
    const re of [
      /ok {2}the package is a regular file of \d+ bytes \(cap 67108864\)/,
      /ok {2}4 archive entries, all regular files or directories/,
      /ok {2}manifest.sig is a valid Ed25519 signature over manifest.json \(key [0-9a-f]{16}\)/,
      /ok {2}manifest.json is well-formed: bundle 1.0.0, 2 files/,
      /ok {2}every file is listed with a matching SHA-256 and size/,
      /Package bundle 1.0.0 verified \(sha256 [0-9a-f]{64}\)/,
    ]
  ) assertMatch(r.stdout, re);
});

Deno.test("waf crp verify accepts keys written as ed25519:<base64> and as PEM", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const raw = Uint8Array.from(atob(f.publicKey), (c) => c.charCodeAt(0));
  const spki = new Uint8Array([
    0x30,
    0x2a,
    0x30,
    0x05,
    0x06,
    0x03,
    0x2b,
    0x65,
    0x70,
    0x03,
    0x21,
    0x00,
    ...raw,
  ]);
  const pem = `-----BEGIN PUBLIC KEY-----\n${
    btoa(String.fromCharCode(...spki))
  }\n-----END PUBLIC KEY-----\n`;
  const pkg = await writePackage(
    `${dir}/p.tar`,
    await buildPackage({ name: "b", version: "1", createdAt: NOW, files: FILES }, f.key),
  );
  await Deno.writeTextFile(`${dir}/waf.yaml`, `crp:\n  public_keys: ["ed25519:${f.publicKey}"]\n`);
  assertEquals((await verify(dir, pkg)).code, 0);
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `crp:\n  public_keys:\n    - |\n${pem.split("\n").map((l) => `      ${l}`).join("\n")}\n`,
  );
  const r = await verify(dir, pkg);
  assertEquals(r.code, 0, r.stderr);
});

Deno.test("waf crp verify fails closed on signature problems", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const other = await importSigningKey((await generateSigningKey()).privatePem);
  const foreign = await writePackage(
    `${dir}/foreign.tar`,
    await buildPackage({ name: "b", version: "1", createdAt: NOW, files: FILES }, other),
  );
  let r = await verify(dir, foreign);
  assertEquals(r.code, 1);
  assertMatch(r.stderr, /does not verify with any of the 1 configured public keys/);
  assertMatch(r.stdout, /ok {2}4 archive entries/);
  ok(!/manifest.json is well-formed/.test(r.stdout), "stops at the first failure");

  const noSig = await writePackage(
    `${dir}/nosig.tar`,
    writeTar([{
      name: "manifest.json",
      data: await manifestFor({ name: "b", version: "1", createdAt: NOW, files: [] }),
      mtime: 0,
    }]),
  );
  assertMatch((await verify(dir, noSig)).stderr, /manifest.sig is missing/);

  // The manifest changed after signing.
  const good = await buildPackage({ name: "b", version: "1", createdAt: NOW, files: FILES }, f.key);
  const text = new TextDecoder("latin1").decode(good).replace('"version": "1"', '"version": "2"');
  const edited = await writePackage(
    `${dir}/edited.tar`,
    Uint8Array.from(text, (c) => c.charCodeAt(0)),
  );
  r = await verify(dir, edited);
  assertEquals(r.code, 1);

  await using untrusting = await tempDir();
  await fixture(untrusting, false);
  r = await verify(untrusting, foreign);
  assertEquals(r.code, 1);
  assertMatch(r.stderr, /no public keys are configured: add the signer's key to crp.public_keys/);
});

Deno.test("waf crp verify names the line and column where a signed manifest is malformed JSON", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const manifest = enc.encode('{\n  "name": "bundle",\n  "version": 1.0.0\n}\n');
  const pkg = await writePackage(
    `${dir}/malformed.tar`,
    writeTar([
      { name: "manifest.json", data: manifest, mtime: 0 },
      { name: "manifest.sig", data: await signManifest(manifest, f.key), mtime: 0 },
    ]),
  );
  const r = await verify(dir, pkg);
  assertEquals(r.code, 1);
  assertMatch(r.stdout, /ok {2}manifest.sig is a valid Ed25519 signature/);
  assertMatch(
    r.stderr,
    /manifest.json is invalid: line 3, column 17: unexpected "\.", expected "," or "}"/,
  );
});

Deno.test("waf crp verify refuses files that do not match the manifest", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const cases: [string, Uint8Array, RegExp][] = [
    [
      "tampered",
      await craft(f.key, FILES, [
        { name: "README.txt", data: enc.encode("rules bundle\n") },
        { name: "rules/sqli.json", data: enc.encode('{"rules":[1]}\n') },
      ]),
      /the file "rules\/sqli.json" has 14 bytes but the manifest says 13/,
    ],
    [
      "same-size",
      await craft(f.key, FILES, [
        { name: "README.txt", data: enc.encode("rules bundle\n") },
        { name: "rules/sqli.json", data: enc.encode('{"rules":[9]}\n').subarray(0, 13) },
      ]),
      /the SHA-256 of "rules\/sqli.json" does not match the manifest/,
    ],
    [
      "missing",
      await craft(f.key, FILES, [{ name: "README.txt", data: enc.encode("rules bundle\n") }]),
      /the listed file "rules\/sqli.json" is missing/,
    ],
    [
      "unlisted",
      await craft(f.key, FILES, [
        ...FILES.map((x) => ({ name: x.path, data: x.data })),
        { name: "extra.sh", data: enc.encode("rm -rf /\n") },
      ]),
      /the file "extra.sh" is not listed in the manifest/,
    ],
  ];
  for (const [name, tar, re] of cases) {
    const r = await verify(dir, await writePackage(`${dir}/${name}.tar`, tar));
    assertEquals(r.code, 1, name);
    assertMatch(r.stderr, re, name);
  }
});

Deno.test("waf crp verify refuses links, devices, FIFOs, absolute paths and ..", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const base = await craft(f.key, FILES, [
    ...FILES.map((x) => ({ name: x.path, data: x.data })),
    { name: "odd", data: new Uint8Array() },
  ]);
  const typed: [string, RegExp][] = [
    ["2", /the entry "odd" is a symbolic link/],
    ["1", /the entry "odd" is a hard link/],
    ["3", /the entry "odd" is a character device/],
    ["4", /the entry "odd" is a block device/],
    ["6", /the entry "odd" is a FIFO/],
    ["x", /the entry "odd" is a extension header/],
  ];
  for (const [flag, re] of typed) {
    const r = await verify(
      dir,
      await writePackage(`${dir}/t${flag}.tar`, retype(base, "odd", flag)),
    );
    assertEquals(r.code, 1, flag);
    assertMatch(r.stderr, re, flag);
  }
  const paths: [string, RegExp][] = [
    ["/etc/passwd", /the path "\/etc\/passwd" is unsafe: it is absolute/],
    ["rules/../../x", /the path "rules\/..\/..\/x" is unsafe: it contains ".."/],
    ["a\\b", /it contains a backslash/],
    ["rules//x", /it has an empty or "." segment/],
    [".hidden", /only ASCII letters, digits/],
  ];
  for (const [name, re] of paths) {
    const tar = await craft(f.key, FILES, [
      ...FILES.map((x) => ({ name: x.path, data: x.data })),
      { name, data: enc.encode("x") },
    ]);
    const r = await verify(dir, await writePackage(`${dir}/p.tar`, tar));
    await Deno.remove(`${dir}/p.tar`);
    assertEquals(r.code, 1, name);
    assertMatch(r.stderr, re, name);
  }
  const dup = await craft(f.key, FILES, [
    ...FILES.map((x) => ({ name: x.path, data: x.data })),
    { name: "./README.txt", data: enc.encode("again") },
  ]);
  assertMatch(
    (await verify(dir, await writePackage(`${dir}/dup.tar`, dup))).stderr,
    /appears twice/,
  );
});

Deno.test("waf crp verify refuses a package that is a link, missing or not a tar", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const pkg = await writePackage(
    `${dir}/real.tar`,
    await buildPackage({ name: "b", version: "1", createdAt: NOW, files: FILES }, f.key),
  );
  await Deno.symlink(pkg, `${dir}/link.tar`);
  assertMatch((await verify(dir, `${dir}/link.tar`)).stderr, /not a regular file/);
  assertMatch((await verify(dir, `${dir}/absent.tar`)).stderr, /does not exist/);
  await Deno.writeTextFile(`${dir}/junk.tar`, "junk");
  const junk = await verify(dir, `${dir}/junk.tar`);
  assertEquals(junk.code, 1);
  assertMatch(junk.stderr, /not a valid ustar archive/);
  assertEquals((await cli(["crp", "verify", "--data-dir", dir])).code, 2);
});

Deno.test("waf crp stage stores exactly the verified bytes and keeps the old slot on failure", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const v1 = await buildPackage({ name: "b", version: "1", createdAt: NOW, files: FILES }, f.key);
  const r = await cli(["crp", "stage", await writePackage(`${dir}/v1.tar`, v1), "--data-dir", dir]);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /Staged b 1 \(sha256 [0-9a-f]{64}\) as ".*crp\/staged\.tar"/);
  assertMatch(
    r.stdout,
    /not used by plugin execution, server start-up, cluster distribution or downloads/,
  );
  assertEquals(await Deno.readFile(`${dir}/crp/staged.tar`), v1);
  assertEquals((await Deno.stat(`${dir}/crp/staged.tar`)).mode! & 0o777, 0o600);

  const bad = await craft(f.key, FILES, [{
    name: "README.txt",
    data: enc.encode("rules bundle\n"),
  }]);
  const failed = await cli([
    "crp",
    "stage",
    await writePackage(`${dir}/bad.tar`, bad),
    "--data-dir",
    dir,
  ]);
  assertEquals(failed.code, 1);
  assertEquals(await Deno.readFile(`${dir}/crp/staged.tar`), v1);

  const v2 = await buildPackage({ name: "b", version: "2", createdAt: NOW, files: FILES }, f.key);
  assertEquals(
    (await cli(["crp", "stage", await writePackage(`${dir}/v2.tar`, v2), "--data-dir", dir])).code,
    0,
  );
  assertEquals(await Deno.readFile(`${dir}/crp/staged.tar`), v2);
  assertEquals([...Deno.readDirSync(`${dir}/crp`)].map((e) => e.name), ["staged.tar"]);
  // The staged slot verifies on its own.
  assertEquals((await verify(dir, `${dir}/crp/staged.tar`)).code, 0);
});

function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      const p = `${d}/${e.name}`;
      out.push(`${p}:${Deno.statSync(p).mtime?.getTime()}`);
      if (e.isDirectory) walk(p);
    }
  };
  walk(dir);
  return out.sort();
}

Deno.test("waf crp activate and rollback fail closed and change nothing", async () => {
  await using dir = await tempDir();
  const f = await fixture(dir);
  const v1 = await buildPackage({ name: "b", version: "1", createdAt: NOW, files: FILES }, f.key);
  await cli(["crp", "stage", await writePackage(`${dir}/v1.tar`, v1), "--data-dir", dir]);
  const before = listing(dir);
  for (const verb of ["activate", "rollback"]) {
    const r = await cli(["crp", verb, "--data-dir", dir]);
    assertEquals(r.code, 1, verb);
    assertMatch(
      r.stderr,
      new RegExp(
        `waf crp ${verb} is not available: it needs the protected control-plane and sidecar adapters`,
      ),
    );
    assertMatch(r.stderr, /Nothing was changed/);
    const zh = await cli(["crp", verb, "--data-dir", dir], { env: { lang: "zh-CN" } });
    assertEquals(zh.code, 1);
    assertMatch(zh.stderr, /不可用/);
  }
  assertEquals(listing(dir), before);
  assertEquals(await Deno.readFile(`${dir}/crp/staged.tar`), v1);
  const help = await cli(["crp", "stage", "--help"]);
  assertMatch(
    help.stdout,
    /not connected to plugin execution, server\nstart-up, cluster distribution or downloads/,
  );
});

Deno.test("deno task crp:build keygen and build produce a package waf crp verify accepts", async () => {
  await using dir = await tempDir();
  const script = new URL("../../scripts/crp_build.ts", import.meta.url).pathname;
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-write", script, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
    };
  };
  const keygen = await run("keygen", "--out", `${dir}/keys`);
  assertEquals(keygen.code, 0, keygen.text);
  assertEquals((await Deno.stat(`${dir}/keys/crp_signing.key`)).mode! & 0o777, 0o600);
  const publicKey = (await Deno.readTextFile(`${dir}/keys/crp_signing.pub`)).trim();
  assertMatch(
    keygen.text,
    new RegExp(`public_keys:\\n    - "${publicKey.replace(/[+/]/g, "\\$&")}"`),
  );
  await Deno.mkdir(`${dir}/src/rules`, { recursive: true });
  await Deno.writeTextFile(`${dir}/src/rules/a.json`, "{}\n");
  await Deno.writeTextFile(`${dir}/src/notes.txt`, "hello\n");
  const build = (name: string, out: string) =>
    run(
      "build",
      ...["--src", `${dir}/src`, "--key", `${dir}/keys/crp_signing.key`],
      ...["--name", name, "--version", "2026.1", "--out", `${dir}/${out}`],
    );
  const built = await build("rules", "rules.tar");
  assertEquals(built.code, 0, built.text);
  assertEquals((await build("rules", "rules.tar")).code, 1, "never overwrites");
  await Deno.writeTextFile(`${dir}/waf.yaml`, `crp:\n  public_keys: ["${publicKey}"]\n`);
  const r = await verify(dir, `${dir}/rules.tar`);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /rules 2026.1, 2 files/);
  await Deno.symlink(`${dir}/src/notes.txt`, `${dir}/src/link`);
  const refused = await build("r", "r2.tar");
  assertEquals(refused.code, 1);
  assertMatch(refused.text, /Refusing the symbolic link "link"/);
});
