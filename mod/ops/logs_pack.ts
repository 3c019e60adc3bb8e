/**
 * The support archive of `waf logs pack`: runtime logs, audit and access-log exports, the
 * effective configuration with secrets masked and a manifest, as one ZIP. It is built from an
 * allow-list of sources, so files such as the TOTP key, TLS private keys or the store itself are
 * never read; everything text-like is also scrubbed (`redact.ts`) before it is packed.
 */
import { createSupportExportRepo } from "../../db/support_export_repo.ts";
import { lineFormat } from "../access_log/lines.ts";
import { type Db, schemaVersion } from "../../db/store.ts";
import type { Config } from "../config/config.ts";
import { maskConfigValue, scrubText } from "../core/redact.ts";
import { createZip, type ZipEntry } from "./zip.ts";

export const SUPPORT_FORMAT = "waf-support/1";

export interface PackLimits {
  /** Bytes kept per log file (its tail, where the latest lines are). */
  readonly logBytes: number;
  readonly auditRows: number;
  readonly accessRows: number;
}

export const DEFAULT_PACK_LIMITS: PackLimits = {
  logBytes: 10 * 1024 * 1024,
  auditRows: 10_000,
  accessRows: 10_000,
};

export interface HostFacts {
  readonly hostname: string;
  readonly os: string;
  readonly arch: string;
  readonly os_release: string;
  readonly deno: string;
  readonly cpus: number;
  readonly memory_bytes: number | null;
}

/** Facts about the machine that help support; nothing identifying beyond the host name. */
export function hostFacts(): HostFacts {
  let memory: number | null = null;
  try {
    memory = Deno.systemMemoryInfo().total;
  } catch { /* not permitted or not available */ }
  return {
    hostname: Deno.hostname(),
    os: Deno.build.os,
    arch: Deno.build.arch,
    os_release: Deno.osRelease(),
    deno: Deno.version.deno,
    cpus: navigator.hardwareConcurrency,
    memory_bytes: memory,
  };
}

export interface PackInput {
  readonly dataDir: string;
  readonly configPath: string;
  readonly config: Config;
  /** The management store (read-only on `temporary`), or undefined when there is none yet. */
  readonly db: Db | undefined;
  /** This controller's access-log file when it is not `db` (`access_log.db` on production). */
  readonly logDb?: Db | undefined;
  readonly version: string;
  readonly host: HostFacts;
  /** Secret values the process knows (the setup token) that must not appear anywhere. */
  readonly knownSecrets: readonly string[];
  readonly now: number;
  readonly limits?: PackLimits;
}

export type PackResult =
  | { kind: "ok"; path: string; bytes: number; files: readonly { path: string; bytes: number }[] }
  | { kind: "exists"; path: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const LOG_NAME = /^waf\.log(\.\d+)?$/;

/** `waf-support-20260101T120000Z.zip` for time `now`. */
export function defaultArchiveName(now: number): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return `waf-support-${stamp}.zip`;
}

async function readTail(path: string, max: number): Promise<Uint8Array> {
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    const start = Math.max(0, size - max);
    await file.seek(start, Deno.SeekMode.Start);
    const buffer = new Uint8Array(size - start);
    let length = 0;
    while (length < buffer.length) {
      const n = await file.read(buffer.subarray(length));
      if (n === null) break;
      length += n;
    }
    return buffer.subarray(0, length);
  } finally {
    file.close();
  }
}

async function logEntries(input: PackInput, limits: PackLimits): Promise<ZipEntry[]> {
  const dir = `${input.dataDir}/logs`;
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && LOG_NAME.test(entry.name)) names.push(entry.name);
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
  names.sort();
  const out: ZipEntry[] = [];
  for (const name of names) {
    const text = decoder.decode(await readTail(`${dir}/${name}`, limits.logBytes));
    out.push({ path: `logs/${name}`, data: encoder.encode(scrubText(text, input.knownSecrets)) });
  }
  return out;
}

function jsonl(rows: readonly unknown[], knownSecrets: readonly string[]): Uint8Array {
  const text = rows.map((row) => JSON.stringify(row)).join("\n");
  return encoder.encode(scrubText(text ? text + "\n" : "", knownSecrets));
}

function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function exportEntries(input: PackInput, limits: PackLimits): ZipEntry[] {
  const logDb = "logDb" in input ? input.logDb : input.db;
  if (!input.db && !logDb) return [];
  const repo = createSupportExportRepo(input.db, logDb, lineFormat);
  const out: ZipEntry[] = [];
  const audit = repo.latestAudit(limits.auditRows);
  if (audit) {
    const rows = audit.map((r) => ({
      ...r,
      time: new Date(r.time).toISOString(),
      detail: maskConfigValue(parseJson(r.detail)),
    }));
    out.push({ path: "exports/audit_log.jsonl", data: jsonl(rows, input.knownSecrets) });
  }
  const access = repo.latestAccess(limits.accessRows);
  if (access) {
    const rows = access.map((r) => ({
      ...r,
      time: new Date(r.time).toISOString(),
      record: maskConfigValue(parseJson(r.record)),
    }));
    out.push({ path: "exports/access_logs.jsonl", data: jsonl(rows, input.knownSecrets) });
  }
  return out;
}

/** What the archive never holds, stated in its manifest so a reader knows not to look. */
export const NEVER_INCLUDED = [
  "the setup token",
  "the TOTP encryption key and TOTP secrets",
  "session ids, session secrets and cookies",
  "password hashes and API token hashes",
  "private keys (data-dir tls/*.key and any PEM private key in logs)",
  "the store itself (waf.db, the production database, access_log.db)",
] as const;

/** Builds the archive and writes it to `out`; never overwrites an existing file. */
export async function packSupportArchive(input: PackInput, out: string): Promise<PackResult> {
  const limits = input.limits ?? DEFAULT_PACK_LIMITS;
  const config = maskConfigValue(input.config);
  const entries: ZipEntry[] = [
    {
      path: "config/effective.json",
      data: encoder.encode(
        scrubText(JSON.stringify(config, null, 2) + "\n", input.knownSecrets),
      ),
    },
    ...await logEntries(input, limits),
    ...exportEntries(input, limits),
  ];
  const manifest = {
    format: SUPPORT_FORMAT,
    created_at: new Date(input.now).toISOString(),
    waf_version: input.version,
    schema_version: input.db ? schemaVersion(input.db) : null,
    host: input.host,
    data_dir: input.dataDir,
    config_path: input.configPath,
    files: entries.map((e) => ({ path: e.path, bytes: e.data.length })),
    limits,
    never_included: NEVER_INCLUDED,
  };
  entries.unshift({
    path: "manifest.json",
    data: encoder.encode(JSON.stringify(manifest, null, 2) + "\n"),
  });
  const zip = createZip(entries, input.now);
  try {
    await Deno.writeFile(out, zip, { createNew: true, mode: 0o600 });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return { kind: "exists", path: out };
    throw err;
  }
  return {
    kind: "ok",
    path: out,
    bytes: zip.length,
    files: entries.map((e) => ({ path: e.path, bytes: e.data.length })),
  };
}
