/**
 * Maps `waf <noun> <verb>` to command functions. Global options (`--config`, `--data-dir`,
 * `--log-format`) are accepted before or after the command words; exit codes are 0 ok,
 * 1 failure, 2 usage or invalid configuration.
 */
import { configCheckCommand } from "./cli/config_check.ts";
import {
  type CommandDeps,
  type CommandSpec,
  EXIT_OK,
  EXIT_USAGE,
  type GlobalOptions,
} from "./cli/context.ts";
import { cliTranslator } from "./cli/lang.ts";
import { nearest } from "./mod/core/nearest.ts";
import { OPERATOR_COMMANDS } from "./cli/operator_commands.ts";
import { serveCommand } from "./cli/serve.ts";
import { setupUrlCommand } from "./cli/setup_url.ts";
import { commandHelp, type Translate } from "./cli/i18n/i18n.ts";
import { buildInfo, VERSION, versionText } from "./mod/core/version.ts";

export const COMMANDS: readonly CommandSpec[] = [
  {
    words: ["serve"],
    summary: "Run the data plane and the management plane",
    usage: `waf serve [--config PATH] [--data-dir DIR] [--log-format text|json] [--join-token TOKEN]

Starts the data-plane reverse proxy (server.data.listen, default 0.0.0.0:8080) and the
management plane (server.management.listen, default 127.0.0.1:9443) on one embedded store.
Creates the configuration file with documented defaults when it is absent. Logs go to stderr
and to <data-dir>/logs/waf.log (rotated by size: 10 MiB x 5). Stops gracefully on SIGINT or
SIGTERM. With cluster.role: node, --join-token (or WAF_CLUSTER_JOIN_TOKEN, or
cluster.join_token) enrols the node with its controller once; the token is never logged.`,
    run: serveCommand,
  },
  {
    words: ["config", "check"],
    summary: "Validate the configuration file",
    usage: `waf config check [--config PATH]

Validates the configuration file and prints each problem with its key path.
Exit code 0 when valid, 2 when invalid or missing.`,
    run: configCheckCommand,
  },
  {
    words: ["setup", "url"],
    summary: "Rotate the first-install setup token and write a fresh setup link",
    usage: `waf setup url [--config PATH] [--data-dir DIR]

While first-install setup is incomplete, replaces the setup token (the running server
accepts the new one at once and refuses the old one), writes the complete setup link to
<data-dir>/runtime/setup.url (mode 0600, valid for 10 minutes) and prints only that file's
path and the token's receipt. Exit code 1 when setup is already complete.`,
    run: setupUrlCommand,
  },
  ...OPERATOR_COMMANDS,
];

/** The main help in the language of `t`. */
export function mainHelp(t: Translate): string {
  const width = Math.max(14, ...COMMANDS.map((c) => c.words.join(" ").length));
  const lines = COMMANDS.map((c) =>
    `  ${c.words.join(" ").padEnd(width)}  ${commandHelp(t.lang, c.words, c).summary}`
  );
  const { unpackedAt } = buildInfo();
  const unpacked = unpackedAt ? `\n${t("cli.unpacked_at", { dir: unpackedAt })}\n` : "";
  return `waf ${VERSION}: ${t("cli.tagline")}

${t("cli.usage_line")}

${t("cli.commands")}
${lines.join("\n")}
${"  " + "help <command>".padEnd(width)}  ${t("cli.help_summary")}

${t("cli.global_help")}
${unpacked}`;
}

function usageOf(t: Translate, spec: CommandSpec): string {
  return `${commandHelp(t.lang, spec.words, spec).usage}\n\n${t("cli.global_help")}\n`;
}

type Parsed =
  | { kind: "ok"; global: GlobalOptions; rest: string[]; help: boolean; version: boolean }
  | {
    kind: "error";
    message: string;
    id: "cli.option_needs_value" | "cli.bad_log_format";
    params: Record<string, string>;
  };

/** Pulls global options out of argv wherever they stand. */
export function parseGlobal(argv: readonly string[]): Parsed {
  let configPath: string | undefined;
  let dataDir: string | undefined;
  let logFormat: "text" | "json" | undefined;
  let help = false;
  let version = false;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (name === "--config" || name === "--data-dir" || name === "--log-format") {
      let value: string | undefined;
      if (eq > 0 && arg.startsWith("--")) value = arg.slice(eq + 1);
      else value = argv[++i];
      if (value === undefined || value === "") {
        return {
          kind: "error",
          message: `Option ${name} needs a value`,
          id: "cli.option_needs_value",
          params: { option: name },
        };
      }
      if (name === "--config") configPath = value;
      else if (name === "--data-dir") dataDir = value;
      else if (value === "text" || value === "json") logFormat = value;
      else {
        return {
          kind: "error",
          message: `Option --log-format expects "text" or "json", got "${value}"`,
          id: "cli.bad_log_format",
          params: { value },
        };
      }
    } else if (arg === "--help" || arg === "-h") {
      help = true;
    } else if (arg === "--version" || arg === "-V") {
      version = true;
    } else {
      rest.push(arg);
    }
  }
  return { kind: "ok", global: { configPath, dataDir, logFormat }, rest, help, version };
}

function findCommand(words: readonly string[]): { spec: CommandSpec; args: string[] } | undefined {
  let best: CommandSpec | undefined;
  for (const spec of COMMANDS) {
    if (spec.words.every((w, i) => words[i] === w)) {
      if (!best || spec.words.length > best.words.length) best = spec;
    }
  }
  return best ? { spec: best, args: words.slice(best.words.length) } : undefined;
}

/**
 * The commands that start with the longest prefix of `words` naming a group (`user`, `store`,
 * `logs`, ...), when no whole command matches: `waf user` lists the `user` commands.
 */
function groupOf(words: readonly string[]):
  | { group: string; specs: readonly CommandSpec[] }
  | undefined {
  for (let k = words.length; k >= 1; k--) {
    const specs = COMMANDS.filter((spec) =>
      spec.words.length > k && words.slice(0, k).every((w, i) => spec.words[i] === w)
    );
    if (specs.length > 0) return { group: words.slice(0, k).join(" "), specs };
  }
  return undefined;
}

/** The first words of the commands (`serve`, `config`, `user`, ...) and `help`. */
const NOUNS = [...new Set(COMMANDS.map((c) => c.words[0]!)), "help"];

/** The command of `group` whose next word is close to the word typed after the group's. */
function verbNear(
  group: { group: string; specs: readonly CommandSpec[] },
  words: readonly string[],
): string | undefined {
  const k = group.group.split(" ").length;
  const typed = words[k];
  if (typed === undefined) return undefined;
  const verb = nearest(typed, [...new Set(group.specs.map((s) => s.words[k]!))]);
  return verb === undefined ? undefined : `${group.group} ${verb}`;
}

/**
 * The command meant by words that name none ("did you mean"), with the rule `waf config check`
 * uses for unknown keys ({@link nearest}): a mistyped verb of a known noun (`user pasword` is
 * `user password`), or a mistyped noun with its verb when that is close too (`confg check`).
 */
export function suggestCommand(words: readonly string[]): string | undefined {
  const group = groupOf(words);
  if (group) return verbNear(group, words);
  const first = words[0];
  if (first === undefined || first.startsWith("-")) return undefined;
  const noun = nearest(first, NOUNS);
  if (noun === undefined) return undefined;
  if (noun === "help") {
    const rest = words.slice(1);
    const meant = findCommand(rest) ? rest.join(" ") : suggestCommand(rest) ?? rest.join(" ");
    return meant ? `help ${meant}` : "help";
  }
  const fixed = [noun, ...words.slice(1)];
  const found = findCommand(fixed);
  if (found) return found.spec.words.join(" ");
  const fixedGroup = groupOf(fixed);
  return fixedGroup && (verbNear(fixedGroup, fixed) ?? fixedGroup.group);
}

/** "Unknown command" for `words`, with "did you mean" when one is close (`prefix`: `help `). */
function unknownCommand(t: Translate, words: readonly string[], prefix = ""): string {
  const command = words.join(" ");
  const near = suggestCommand(words);
  return near === undefined
    ? t("cli.unknown_command", { command })
    : t("cli.unknown_command_near", { command, suggestion: `waf ${prefix}${near}` });
}

function groupHelp(t: Translate, group: { group: string; specs: readonly CommandSpec[] }): string {
  const width = Math.max(...group.specs.map((c) => c.words.join(" ").length));
  const lines = group.specs.map((c) =>
    `  waf ${c.words.join(" ").padEnd(width)}  ${commandHelp(t.lang, c.words, c).summary}`
  );
  return `${t("cli.group_commands", { group: group.group })}\n${lines.join("\n")}\n\n${
    t("cli.group_hint", { group: group.group })
  }\n`;
}

/** Runs the CLI; returns the process exit code. */
export async function runCli(argv: readonly string[], deps: CommandDeps): Promise<number> {
  const parsed = parseGlobal(argv);
  const { t } = await cliTranslator(
    parsed.kind === "ok"
      ? parsed.global
      : { configPath: undefined, dataDir: undefined, logFormat: undefined },
    deps,
  );
  if (parsed.kind === "error") {
    deps.stderr(`${t(parsed.id, parsed.params)}\n${t("cli.see_help")}\n`);
    return EXIT_USAGE;
  }
  const { global, rest } = parsed;
  if (parsed.version && rest.length === 0) {
    deps.stdout(versionText());
    return EXIT_OK;
  }
  if (rest[0] === "help") {
    if (rest.length === 1) {
      deps.stdout(mainHelp(t));
      return EXIT_OK;
    }
    const found = findCommand(rest.slice(1));
    const group = found && found.args.length === 0 ? undefined : groupOf(rest.slice(1));
    if (group && rest.length === group.group.split(" ").length + 1) {
      deps.stdout(groupHelp(t, group));
      return EXIT_OK;
    }
    if (!found || found.args.length > 0) {
      deps.stderr(`${unknownCommand(t, rest.slice(1), "help ")}\n${t("cli.see_list")}\n`);
      return EXIT_USAGE;
    }
    deps.stdout(usageOf(t, found.spec));
    return EXIT_OK;
  }
  if (rest.length === 0) {
    if (parsed.help) {
      deps.stdout(mainHelp(t));
      return EXIT_OK;
    }
    deps.stderr(`${t("cli.missing_command")}\n\n${mainHelp(t)}`);
    return EXIT_USAGE;
  }
  const found = findCommand(rest);
  const group = found ? undefined : groupOf(rest);
  if (group) {
    const exact = rest.length === group.group.split(" ").length;
    if (exact && parsed.help) {
      deps.stdout(groupHelp(t, group));
      return EXIT_OK;
    }
    const head = exact ? t("cli.missing_command") : unknownCommand(t, rest);
    deps.stderr(`${head}\n\n${groupHelp(t, group)}`);
    return EXIT_USAGE;
  }
  if (!found) {
    const first = rest[0]!;
    const what = first.startsWith("-")
      ? t("cli.unknown_option", { option: first })
      : unknownCommand(t, rest);
    deps.stderr(`${what}\n${t("cli.see_help")}\n`);
    return EXIT_USAGE;
  }
  if (parsed.help) {
    deps.stdout(usageOf(t, found.spec));
    return EXIT_OK;
  }
  return await found.spec.run(found.args, global, deps);
}
