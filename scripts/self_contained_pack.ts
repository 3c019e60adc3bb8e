/**
 * Packs a staged folder (`bin/deno`, `src/`, `deno_dir/npm/`) into the self-contained `waf`
 * file: its manifest (`CONTENTS.sha256`, whose SHA-256 is the content hash), a reproducible
 * tar, compressed, behind the sh stub of scripts/self_contained_stub.sh. Why gzip:
 * docs/operations.md, "The self-contained executable".
 */
import { VERSION } from "../mod/core/version.ts";
import { manifest } from "./program_files.ts";
import { SERVER_DENO_FLAGS, SERVER_V8_FLAGS } from "./server_flags.ts";

/** How the archive is compressed, and what the stub runs to read it back. */
export const COMPRESSIONS = {
  gzip: { compress: (level: number) => ["gzip", "-n", `-${level}`], decompress: "gzip -dc" },
  xz: { compress: (level: number) => ["xz", "-T1", `-${level}`], decompress: "xz -dc" },
  zstd: { compress: (level: number) => ["zstd", "-q", `-${level}`], decompress: "zstd -dcq" },
} as const;
export type Compression = keyof typeof COMPRESSIONS;

/** The folders of a staged build that the file carries (and the stub checks). */
export const SHIPPED = ["bin", "src", "deno_dir/npm"] as const;

/** The flags the stub runs the program with: those of `deno task start`, offline. */
export const RUN_FLAGS: readonly string[] = [
  "-A",
  "--cached-only",
  "--frozen",
  "--unstable-net",
  SERVER_V8_FLAGS,
  ...SERVER_DENO_FLAGS,
];

export interface PackOptions {
  readonly output: string;
  readonly compression?: Compression;
  readonly level?: number;
}

export interface Packed {
  readonly output: string;
  readonly contentHash: string;
  readonly bytes: number;
}

const STUB = new URL("./self_contained_stub.sh", import.meta.url);
const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The stub with its hash, flags and payload offset filled in. */
async function stub(hash: string, compression: Compression, payloadStart: number) {
  const template = await Deno.readTextFile(STUB);
  return template
    .replaceAll("@VERSION@", VERSION)
    .replaceAll("@HASH@", hash)
    .replaceAll("@COMPRESSION@", compression)
    .replaceAll("@DECOMPRESSOR@", compression)
    .replaceAll("@DECOMPRESS@", COMPRESSIONS[compression].decompress)
    .replaceAll("@DENO_FLAGS@", RUN_FLAGS.map(shellQuote).join(" "))
    .replaceAll("@START@", String(payloadStart));
}

/** The stub, its payload offset naming its own length: filled in until that stops changing. */
async function fittedStub(hash: string, compression: Compression): Promise<Uint8Array> {
  let start = 0;
  for (;;) {
    const bytes = new TextEncoder().encode(await stub(hash, compression, start));
    if (bytes.length + 1 === start) return bytes;
    start = bytes.length + 1;
  }
}

/** `tar ... | compressor > payload`, without a shell. */
async function tarInto(stage: string, compress: readonly string[], payload: string) {
  const tar = [
    // Sorted names, fixed times, owners and modes: the same inputs give the same bytes.
    "--sort=name",
    "--mtime=@0",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mode=a+rX,u+w,go-w",
    "--hard-dereference",
    "--format=gnu",
    "-C",
    stage,
    "-cf",
    "-",
    "CONTENTS.sha256",
    ...SHIPPED,
  ];
  const out = await Deno.open(payload, { write: true, create: true, truncate: true });
  const packer = new Deno.Command("tar", { args: tar, stdout: "piped" }).spawn();
  const squeezer = new Deno.Command(compress[0]!, {
    args: compress.slice(1),
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const [packed, squeezed] = await Promise.all([
    packer.stdout.pipeTo(squeezer.stdin).then(() => packer.status),
    squeezer.stdout.pipeTo(out.writable).then(() => squeezer.status),
  ]);
  if (!packed.success || !squeezed.success) throw new Error(`tar | ${compress.join(" ")} failed`);
}

/** Writes `options.output` (mode 0755) from the staged folder `stage`. */
export async function packSelfContained(stage: string, options: PackOptions): Promise<Packed> {
  const compression = options.compression ?? "gzip";
  const list = await manifest(stage, SHIPPED);
  await Deno.writeTextFile(`${stage}/CONTENTS.sha256`, list.text);
  const payload = `${stage}/payload`;
  await tarInto(stage, COMPRESSIONS[compression].compress(options.level ?? 6), payload);
  const head = await fittedStub(list.hash, compression);
  const tmp = `${options.output}.tmp-${Deno.pid}`;
  await Deno.writeFile(tmp, head, { mode: 0o755 });
  const body = await Deno.open(payload);
  await body.readable.pipeTo((await Deno.open(tmp, { append: true })).writable);
  await Deno.chmod(tmp, 0o755);
  await Deno.rename(tmp, options.output);
  await Deno.remove(payload);
  return {
    output: options.output,
    contentHash: list.hash,
    bytes: (await Deno.stat(options.output)).size,
  };
}
