/**
 * Builds and signs content packages for `waf crp verify|stage` (operators and tests).
 *
 *   deno task crp:build keygen --out DIR
 *       writes DIR/crp_signing.key (PKCS#8 PEM, mode 0600) and DIR/crp_signing.pub (base64),
 *       and prints the line to add under crp.public_keys in waf.yaml
 *   deno task crp:build build --src DIR --key FILE --name NAME --version VERSION --out FILE.tar
 *       packs every regular file under DIR (links and special files are refused) with a
 *       manifest of SHA-256 and size, signs the manifest, and writes FILE.tar (never overwrites)
 */
import { parseArgs } from "node:util";
import { systemClock } from "../mod/core/clock.ts";
import { buildPackage, generateSigningKey, importSigningKey } from "../mod/ops/crp/crp_build.ts";

const USAGE = `Usage:
  deno task crp:build keygen --out DIR
  deno task crp:build build --src DIR --key FILE --name NAME --version VERSION --out FILE.tar`;

function fail(message: string, code = 1): never {
  console.error(message);
  Deno.exit(code);
}

async function collect(root: string, rel = ""): Promise<{ path: string; data: Uint8Array }[]> {
  const out: { path: string; data: Uint8Array }[] = [];
  for await (const entry of Deno.readDir(rel ? `${root}/${rel}` : root)) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    const info = await Deno.lstat(`${root}/${path}`);
    if (info.isSymlink) fail(`Refusing the symbolic link "${path}"`);
    if (info.isDirectory) out.push(...await collect(root, path));
    else if (info.isFile) out.push({ path, data: await Deno.readFile(`${root}/${path}`) });
    else fail(`Refusing the special file "${path}"`);
  }
  return out;
}

async function keygen(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { out: { type: "string" } }, strict: true });
  if (!values.out) fail(USAGE, 2);
  const dir = values.out;
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const { privatePem, publicKey } = await generateSigningKey();
  await Deno.writeTextFile(`${dir}/crp_signing.key`, privatePem, { mode: 0o600, createNew: true });
  await Deno.writeTextFile(`${dir}/crp_signing.pub`, publicKey + "\n", { createNew: true });
  console.log(`Private key: ${dir}/crp_signing.key (keep it off the WAF hosts)`);
  console.log(`Public key:  ${dir}/crp_signing.pub`);
  console.log(`Add to waf.yaml:\ncrp:\n  public_keys:\n    - "${publicKey}"`);
}

async function build(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      src: { type: "string" },
      key: { type: "string" },
      name: { type: "string" },
      version: { type: "string" },
      out: { type: "string" },
    },
    strict: true,
  });
  const { src, key, name, version, out } = values;
  if (!src || !key || !name || !version || !out) fail(USAGE, 2);
  const signingKey = await importSigningKey(await Deno.readTextFile(key));
  const files = await collect(src);
  const tar = await buildPackage(
    { name, version, createdAt: systemClock.now(), files },
    signingKey,
  );
  await Deno.writeFile(out, tar, { createNew: true });
  console.log(`Wrote ${out}: ${files.length} files, ${tar.length} bytes`);
}

if (import.meta.main) {
  const [command, ...rest] = Deno.args;
  try {
    if (command === "keygen") await keygen(rest);
    else if (command === "build") await build(rest);
    else fail(USAGE, 2);
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
}
