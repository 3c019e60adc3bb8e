/** What every command receives from the composition root (main.ts). */
import type { Clock } from "../mod/core/clock.ts";
import type { LogFormat } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";

export interface CommandDeps {
  readonly clock: Clock;
  readonly random: Random;
  /** Environment values the commands may use; read only in main.ts. */
  readonly env: {
    readonly setupToken?: string;
    /** `WAF_CLUSTER_JOIN_TOKEN`: a node's one-time join token. */
    readonly clusterJoinToken?: string;
    readonly osUser?: string;
    /** `WAF_LANG`: overrides the persisted CLI language (`waf lang set`). */
    readonly lang?: string;
  };
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Whole standard input, for `--password-stdin`. */
  readonly readStdin: () => Promise<string>;
}

/** Global options accepted before or after the command words. */
export interface GlobalOptions {
  readonly configPath: string | undefined;
  readonly dataDir: string | undefined;
  readonly logFormat: LogFormat | undefined;
}

export type Command = (
  args: readonly string[],
  global: GlobalOptions,
  deps: CommandDeps,
) => Promise<number>;

/** One row of the command table: the words that select it, its help, and its function. */
export interface CommandSpec {
  readonly words: readonly string[];
  readonly summary: string;
  readonly usage: string;
  readonly run: Command;
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
