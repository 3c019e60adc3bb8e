/**
 * Product version (bumped on release), the build this process runs (from source, `deno compile`
 * or the self-contained executable, with its content hash) and the version report of
 * `GET /api/system/version` and `waf --version`.
 */
import { SCHEMA_VERSION } from "../../db/migrations.ts";

export const VERSION = "0.1.0";

export const BUILD_KINDS = ["source", "deno compile", "self-contained"] as const;
export type BuildKind = (typeof BUILD_KINDS)[number];

export interface BuildInfo {
  readonly kind: BuildKind;
  /** SHA-256 of the build's file manifest (docs/operations.md); "source" when run from source. */
  readonly contentHash: string;
  /** Self-contained: the folder the executable unpacked itself into and runs from. */
  readonly unpackedAt?: string;
}

// scripts/compile.ts writes build.json beside main.ts (the self-contained stub on unpacking);
// a source checkout has none.
const BUILD_FILE = new URL("../../build.json", import.meta.url);
const UNPACKED_AT = new URL("../../../", import.meta.url);
const SOURCE: BuildInfo = { kind: "source", contentHash: "source" };
let build: BuildInfo | undefined;

function readBuild(): BuildInfo {
  let raw: { kind?: unknown; content_hash?: unknown };
  try {
    raw = JSON.parse(Deno.readTextFileSync(BUILD_FILE));
  } catch {
    return SOURCE;
  }
  const kind = BUILD_KINDS.find((k) => k === raw.kind && k !== "source");
  const hash = typeof raw.content_hash === "string" && /^[0-9a-f]{64}$/.test(raw.content_hash)
    ? raw.content_hash
    : undefined;
  if (!kind || !hash) return SOURCE;
  return kind === "self-contained"
    ? { kind, contentHash: hash, unpackedAt: decodeURIComponent(UNPACKED_AT.pathname) }
    : { kind, contentHash: hash };
}

/** The build this process runs, read once. */
export function buildInfo(): BuildInfo {
  return build ??= readBuild();
}

/** What `waf --version` prints: the same lines for every kind of build. */
export function versionText(): string {
  const b = buildInfo();
  return `waf ${VERSION}\nbuild: ${b.kind}\ncontent: ${b.contentHash}\n` +
    `runtime: deno ${Deno.version.deno} (${Deno.build.target})\n`;
}

/** The product, store schema, runtime and build this process runs. */
export function versionReport() {
  const b = buildInfo();
  return {
    version: VERSION,
    schema_version: SCHEMA_VERSION,
    runtime: {
      deno: Deno.version.deno,
      v8: Deno.version.v8,
      typescript: Deno.version.typescript,
    },
    build: {
      os: Deno.build.os,
      arch: Deno.build.arch,
      target: Deno.build.target,
      kind: b.kind,
      content_hash: b.contentHash,
    },
  };
}
