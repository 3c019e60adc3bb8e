/**
 * What `waf serve` refuses before it writes anything, as `waf config check` reports it too: the
 * deployment problems of the configuration, a cluster node that can neither join nor start, and
 * the production profile's database probe (run once the file names everything it needs).
 */
import { type ConfigProblem, deploymentProblems, formatProblems } from "../mod/config/config.ts";
import { nodeJoinProblem } from "../mod/cluster/node_identity.ts";
import { probeProductionStore } from "../mod/deployment/probe.ts";
import type { Config } from "../mod/config/config.ts";
import type { Translate } from "./i18n/i18n.ts";

/** A problem that is the specification's own start-up failure (exit 1, not a usage error). */
export function isProductionProblem(p: ConfigProblem): boolean {
  return p.code === "ErrProductionStorageUnavailable";
}

export async function startProblems(
  config: Config,
  dataDir: string,
  joinToken: string | undefined,
): Promise<ConfigProblem[]> {
  const problems = deploymentProblems(config);
  const join = await nodeJoinProblem(config, dataDir, joinToken);
  if (join) problems.push(join);
  if (!problems.some(isProductionProblem)) {
    const unreachable = await probeProductionStore(config);
    if (unreachable) problems.push(unreachable);
  }
  return problems;
}

/** The `ErrProductionStorageUnavailable` report: its line, then each failing dependency. */
export function productionReport(t: Translate, problems: readonly ConfigProblem[]): string {
  return `${t("serve.production_unavailable")}\n${formatProblems(problems)}\n`;
}
