/**
 * Offline verification and staging of content packages (see `crp_format.ts`). Verification is
 * bounded and ordered; it stops at the first failure and reports each check it passed, so the
 * command can print what it checked. Staging persists exactly the bytes that were verified.
 */
import {
  type CrpLimits,
  decodeSignature,
  DEFAULT_LIMITS,
  importPublicKey,
  keyFingerprint,
  MANIFEST,
  type Manifest,
  manifestSchema,
  type PathProblem,
  pathProblem,
  sha256Hex,
  SIGNATURE,
} from "./crp_format.ts";
import { describeJsonError, parseJson } from "../../core/json_syntax.ts";
import { type Random, randomHex } from "../../core/random.ts";
import { readTar, type TarEntryType, TarError } from "../tar.ts";

export type CrpStep =
  | { step: "file"; bytes: number; max: number }
  | { step: "entries"; count: number; max: number }
  | { step: "signature"; key: string }
  | { step: "manifest"; name: string; version: string; files: number }
  | { step: "files"; files: number; bytes: number };

export type CrpFailure =
  | { code: "not_found" }
  | { code: "not_regular" }
  | { code: "too_large"; bytes: number; max: number }
  | { code: "malformed"; detail: string }
  | { code: "too_many_files"; max: number }
  | { code: "entry_type"; path: string; type: Exclude<TarEntryType, "file" | "dir"> }
  | { code: "unsafe_path"; path: string; problem: PathProblem }
  | { code: "duplicate"; path: string }
  | { code: "manifest_missing" }
  | { code: "manifest_too_large"; max: number }
  | { code: "signature_missing" }
  | { code: "signature_malformed" }
  | { code: "no_keys" }
  | { code: "bad_key"; index: number }
  | { code: "signature_invalid"; keys: number }
  | { code: "manifest_invalid"; detail: string }
  | { code: "reserved_listed"; path: string }
  | { code: "unlisted"; path: string }
  | { code: "missing"; path: string }
  | { code: "size_mismatch"; path: string; expected: number; actual: number }
  | { code: "hash_mismatch"; path: string };

export type CrpVerdict =
  | { ok: true; manifest: Manifest; bytes: Uint8Array; sha256: string }
  | { ok: false; failure: CrpFailure };

/** Reads and verifies the package at `path`; `onStep` hears each passed check in order. */
export async function verifyPackage(
  path: string,
  publicKeys: readonly string[],
  onStep: (step: CrpStep) => void,
  limits: CrpLimits = DEFAULT_LIMITS,
): Promise<CrpVerdict> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return fail({ code: "not_found" });
    throw err;
  }
  if (!info.isFile) return fail({ code: "not_regular" });
  if (info.size > limits.maxPackageBytes) {
    return fail({ code: "too_large", bytes: info.size, max: limits.maxPackageBytes });
  }
  const bytes = await readBounded(path, limits.maxPackageBytes);
  if (!bytes) return fail({ code: "too_large", bytes: info.size, max: limits.maxPackageBytes });
  onStep({ step: "file", bytes: bytes.length, max: limits.maxPackageBytes });
  return await verifyBytes(bytes, publicKeys, onStep, limits);
}

function fail(failure: CrpFailure): CrpVerdict {
  return { ok: false, failure };
}

/** Reads at most `max` bytes; undefined when the file grew past it meanwhile. */
async function readBounded(path: string, max: number): Promise<Uint8Array | undefined> {
  const file = await Deno.open(path, { read: true });
  try {
    const buffer = new Uint8Array(max + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = await file.read(buffer.subarray(length));
      if (n === null) break;
      length += n;
    }
    return length > max ? undefined : buffer.slice(0, length);
  } finally {
    file.close();
  }
}

/** Verifies an archive already in memory (the staged copy is exactly these bytes). */
export async function verifyBytes(
  bytes: Uint8Array,
  publicKeys: readonly string[],
  onStep: (step: CrpStep) => void,
  limits: CrpLimits = DEFAULT_LIMITS,
): Promise<CrpVerdict> {
  let entries;
  try {
    entries = readTar(bytes, limits.maxFiles);
  } catch (err) {
    if (err instanceof TarError && err.message.startsWith("more than")) {
      return fail({ code: "too_many_files", max: limits.maxFiles });
    }
    return fail({ code: "malformed", detail: err instanceof Error ? err.message : String(err) });
  }
  const files = new Map<string, Uint8Array>();
  const seen = new Set<string>();
  for (const entry of entries) {
    // "./x" is how `tar -C dir .` spells "x"; the root "./" itself carries nothing.
    let name = entry.name.startsWith("./") ? entry.name.slice(2) : entry.name;
    if (entry.type === "dir") {
      name = name.replace(/\/$/, "");
      if (name === "" || name === ".") continue;
    }
    if (entry.type !== "file" && entry.type !== "dir") {
      return fail({ code: "entry_type", path: name, type: entry.type });
    }
    const problem = pathProblem(name);
    if (problem) return fail({ code: "unsafe_path", path: name, problem });
    if (seen.has(name)) return fail({ code: "duplicate", path: name });
    seen.add(name);
    if (entry.type === "file") files.set(name, entry.data);
  }
  onStep({ step: "entries", count: entries.length, max: limits.maxFiles });

  const manifestBytes = files.get(MANIFEST);
  if (!manifestBytes) return fail({ code: "manifest_missing" });
  if (manifestBytes.length > limits.maxManifestBytes) {
    return fail({ code: "manifest_too_large", max: limits.maxManifestBytes });
  }
  const sigBytes = files.get(SIGNATURE);
  if (!sigBytes) return fail({ code: "signature_missing" });
  const signature = decodeSignature(sigBytes);
  if (!signature) return fail({ code: "signature_malformed" });
  if (publicKeys.length === 0) return fail({ code: "no_keys" });
  let matched: string | undefined;
  for (const [index, text] of publicKeys.entries()) {
    const key = await importPublicKey(text);
    if (!key) return fail({ code: "bad_key", index });
    const valid = await crypto.subtle.verify(
      "Ed25519",
      key,
      signature as BufferSource,
      manifestBytes as BufferSource,
    );
    if (valid) {
      matched = await keyFingerprint(key);
      break;
    }
  }
  if (!matched) return fail({ code: "signature_invalid", keys: publicKeys.length });
  onStep({ step: "signature", key: matched });

  const json = parseJson(new TextDecoder().decode(manifestBytes));
  if (!json.ok) return fail({ code: "manifest_invalid", detail: describeJsonError(json.error) });
  const parsed = manifestSchema.safeParse(json.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return fail({
      code: "manifest_invalid",
      detail: `${issue.path.join(".") || "(root)"}: ${issue.message}`,
    });
  }
  const manifest: Manifest = parsed.data;
  onStep({
    step: "manifest",
    name: manifest.name,
    version: manifest.version,
    files: manifest.files.length,
  });

  const listed = new Set<string>();
  let total = 0;
  for (const item of manifest.files) {
    if (item.path === MANIFEST || item.path === SIGNATURE) {
      return fail({ code: "reserved_listed", path: item.path });
    }
    const problem = pathProblem(item.path);
    if (problem) return fail({ code: "unsafe_path", path: item.path, problem });
    if (listed.has(item.path)) return fail({ code: "duplicate", path: item.path });
    listed.add(item.path);
    const data = files.get(item.path);
    if (!data) return fail({ code: "missing", path: item.path });
    if (data.length !== item.size) {
      return fail({
        code: "size_mismatch",
        path: item.path,
        expected: item.size,
        actual: data.length,
      });
    }
    if (await sha256Hex(data) !== item.sha256) {
      return fail({ code: "hash_mismatch", path: item.path });
    }
    total += data.length;
  }
  for (const name of files.keys()) {
    if (name !== MANIFEST && name !== SIGNATURE && !listed.has(name)) {
      return fail({ code: "unlisted", path: name });
    }
  }
  onStep({ step: "files", files: listed.size, bytes: total });
  return { ok: true, manifest, bytes, sha256: await sha256Hex(bytes) };
}

export const STAGED_NAME = "staged.tar";

/**
 * Persists verified package bytes as `<dir>/staged.tar`: a temporary file in the same
 * directory, fsync, rename over the slot, fsync of the directory. A crash at any point leaves
 * either the previous staged package or the new one, never a mix.
 */
export async function stageBytes(
  dir: string,
  bytes: Uint8Array,
  deps: { random: Random },
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const target = `${dir}/${STAGED_NAME}`;
  const tmp = `${dir}/.${STAGED_NAME}.${randomHex(deps.random, 8)}.tmp`;
  try {
    const file = await Deno.open(tmp, { write: true, createNew: true, mode: 0o600 });
    try {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.rename(tmp, target);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } finally {
    handle.close();
  }
  return target;
}
