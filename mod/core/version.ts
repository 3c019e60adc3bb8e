/** Product version (bumped on release) and the version report of `GET /api/system/version`. */
import { SCHEMA_VERSION } from "../../db/migrations.ts";

export const VERSION = "0.1.0";

/** The product, store schema, runtime and build this process runs. */
export function versionReport() {
  return {
    version: VERSION,
    schema_version: SCHEMA_VERSION,
    runtime: {
      deno: Deno.version.deno,
      v8: Deno.version.v8,
      typescript: Deno.version.typescript,
    },
    build: { os: Deno.build.os, arch: Deno.build.arch, target: Deno.build.target },
  };
}
