/**
 * `waf config check`: validates the config file and prints each problem with its key path: the
 * same validation as `waf serve`, including what serve refuses at start (`deploymentProblems`,
 * a cluster node that has neither joined nor a join token, judged with the data directory and
 * WAF_CLUSTER_JOIN_TOKEN as `serve` would, and the production profile's database probe). The
 * production profile's failure is reported as serve reports it, with serve's exit code 1.
 */
import { type ConfigProblem, formatProblems, readConfigFile } from "../mod/config/config.ts";
import { type Command, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./context.ts";
import { cliTranslator } from "./lang.ts";
import { configPathOf, DEFAULT_DATA_DIR } from "./load_config.ts";
import { flagsOrUsage } from "./output.ts";
import { isProductionProblem, productionReport, startProblems } from "./start_problems.ts";

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
  let problems: readonly ConfigProblem[] = result.kind === "invalid" ? result.problems : [];
  if (result.kind === "ok") {
    const dataDir = global.dataDir ?? result.config.data_dir ?? DEFAULT_DATA_DIR;
    problems = await startProblems(result.config, dataDir, deps.env.clusterJoinToken);
  }
  const production = problems.filter(isProductionProblem);
  const others = problems.filter((p) => !isProductionProblem(p));
  if (production.length > 0) deps.stderr(productionReport(t, production));
  if (others.length > 0) {
    deps.stderr(`${t("config.invalid", { path })}\n${formatProblems(others)}\n`);
  }
  if (production.length > 0) return EXIT_FAILURE;
  if (others.length > 0) return EXIT_USAGE;
  deps.stdout(`${t("config.valid", { path })}\n`);
  return EXIT_OK;
};
