/**
 * `waf config check`: validates the config file and prints each problem with its key path: the
 * same validation as `waf serve`, including what serve refuses at start (`deploymentProblems`,
 * and a cluster node that has neither joined nor a join token, judged with the data directory
 * and WAF_CLUSTER_JOIN_TOKEN as `serve` would).
 */
import { deploymentProblems, formatProblems, readConfigFile } from "../mod/config/config.ts";
import { type Command, EXIT_OK, EXIT_USAGE } from "./context.ts";
import { cliTranslator } from "./lang.ts";
import { configPathOf, DEFAULT_DATA_DIR } from "./load_config.ts";
import { nodeJoinProblem } from "../mod/cluster/node_identity.ts";
import { flagsOrUsage } from "./output.ts";

export const configCheckCommand: Command = async (args, global, deps) => {
  const { t } = await cliTranslator(global, deps);
  const flags = flagsOrUsage({ deps, t, words: ["config", "check"] }, args, {});
  if (typeof flags === "number") return flags;
  const path = configPathOf(global);
  const result = await readConfigFile(path);
  if (result === undefined) {
    deps.stderr(`${t("config.not_found", { path })}\n`);
    return EXIT_USAGE;
  }
  const problems = [
    ...(result.kind === "invalid" ? result.problems : deploymentProblems(result.config)),
  ];
  if (result.kind === "ok") {
    const dataDir = global.dataDir ?? result.config.data_dir ?? DEFAULT_DATA_DIR;
    const join = await nodeJoinProblem(result.config, dataDir, deps.env.clusterJoinToken);
    if (join) problems.push(join);
  }
  if (problems.length > 0) {
    deps.stderr(`${t("config.invalid", { path })}\n${formatProblems(problems)}\n`);
    return EXIT_USAGE;
  }
  deps.stdout(`${t("config.valid", { path })}\n`);
  return EXIT_OK;
};
