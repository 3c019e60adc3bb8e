/**
 * `waf crp verify|stage|activate|rollback`: offline verification of a signed content package
 * and atomic staging under `<data-dir>/crp/`. Activation and rollback need protected
 * control-plane/sidecar adapters this runtime does not have, so they fail closed. The staged
 * package is not connected to plugin execution, start-up, cluster distribution or downloads.
 */
import type { CrpFailure, CrpStep } from "../mod/ops/crp/crp.ts";
import { stageBytes, verifyPackage } from "../mod/ops/crp/crp.ts";
import type { Translate } from "./i18n/i18n.ts";
import {
  type Command,
  type CommandDeps,
  EXIT_FAILURE,
  EXIT_OK,
  type GlobalOptions,
} from "./context.ts";
import { cliTranslator } from "./lang.ts";
import { startOperator } from "./operator.ts";
import { flagsOrUsage } from "./output.ts";

function describeStep(t: Translate, step: CrpStep): string {
  switch (step.step) {
    case "file":
      return t("crp.step.file", { bytes: step.bytes, max: step.max });
    case "entries":
      return t("crp.step.entries", { count: step.count, max: step.max });
    case "signature":
      return t("crp.step.signature", { key: step.key });
    case "manifest":
      return t("crp.step.manifest", {
        name: step.name,
        version: step.version,
        files: step.files,
      });
    case "files":
      return t("crp.step.files", { files: step.files, bytes: step.bytes });
  }
}

function describeFailure(t: Translate, failure: CrpFailure): string {
  const { code, ...params } = failure;
  const values: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(params)) {
    values[k] = k === "index" ? Number(v) + 1 : v as string | number;
  }
  if (failure.code === "unsafe_path") values["problem"] = t(`crp.path.${failure.problem}`);
  if (failure.code === "entry_type") {
    values["type"] = t(`crp.type.${failure.type}`);
  }
  return t(`crp.fail.${code}`, values);
}

interface Verified {
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly name: string;
  readonly version: string;
}

/** Runs verification and prints each passed check; returns the verified bytes or undefined. */
async function verifyAndReport(
  t: Translate,
  deps: CommandDeps,
  path: string,
  keys: readonly string[],
): Promise<Verified | undefined> {
  deps.stdout(`${t("crp.verifying", { path })}\n`);
  const verdict = await verifyPackage(path, keys, (step) => {
    deps.stdout(`  ok  ${describeStep(t, step)}\n`);
  });
  if (!verdict.ok) {
    deps.stderr(`  ${t("crp.failed")}: ${describeFailure(t, verdict.failure)}\n`);
    return undefined;
  }
  return {
    bytes: verdict.bytes,
    sha256: verdict.sha256,
    name: verdict.manifest.name,
    version: verdict.manifest.version,
  };
}

/** Shared start of verify and stage: flags, configuration, then verification with output. */
async function verifyFromArgs(
  words: readonly string[],
  args: readonly string[],
  global: GlobalOptions,
  deps: CommandDeps,
): Promise<{ t: Translate; dataDir: string; verified: Verified } | number> {
  const started = await startOperator(global, deps, {
    words,
    args,
    positionals: { min: 1, max: 1 },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const verified = await verifyAndReport(
    t,
    deps,
    flags.positionals[0]!,
    loaded.config.crp.public_keys,
  );
  return verified ? { t, dataDir: loaded.dataDir, verified } : EXIT_FAILURE;
}

export const crpVerifyCommand: Command = async (args, global, deps) => {
  const result = await verifyFromArgs(["crp", "verify"], args, global, deps);
  if (typeof result === "number") return result;
  const { t, verified } = result;
  const { name, version, sha256 } = verified;
  deps.stdout(`${t("crp.verified", { name, version, sha256 })}\n`);
  return EXIT_OK;
};

export const crpStageCommand: Command = async (args, global, deps) => {
  const result = await verifyFromArgs(["crp", "stage"], args, global, deps);
  if (typeof result === "number") return result;
  const { t, verified, dataDir } = result;
  let target: string;
  try {
    target = await stageBytes(`${dataDir}/crp`, verified.bytes, deps);
  } catch (err) {
    deps.stderr(`${t("crp.stage_failed", { error: String(err) })}\n`);
    return EXIT_FAILURE;
  }
  const { name, version, sha256 } = verified;
  deps.stdout(
    `${t("crp.staged", { name, version, sha256, path: target })}\n${t("crp.not_connected")}\n`,
  );
  return EXIT_OK;
};

function failClosed(words: string[]): Command {
  return async (args, global, deps) => {
    const { t } = await cliTranslator(global, deps);
    const flags = flagsOrUsage({ deps, t, words }, args, {});
    if (typeof flags === "number") return flags;
    deps.stderr(`${t("crp.unavailable", { command: `waf ${words.join(" ")}` })}\n`);
    return EXIT_FAILURE;
  };
}

export const crpActivateCommand: Command = failClosed(["crp", "activate"]);
export const crpRollbackCommand: Command = failClosed(["crp", "rollback"]);
