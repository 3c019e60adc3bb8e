/**
 * Shared plumbing of the `waf user` commands: opening the store with the account services,
 * the password input modes, and wording the services' errors in the selected language.
 */
import { createAccountRepairRepo } from "../db/account_repair_repo.ts";
import { type Db, transaction } from "../db/store.ts";
import { createUsersRepo } from "../db/users_repo.ts";
import { createAuditRepo } from "../db/audit_repo.ts";
import { createAudit } from "../mod/core/audit.ts";
import { AppError } from "../mod/core/errors.ts";
import type { Translate } from "./i18n/i18n.ts";
import { createLocalAccounts, type LocalAccounts } from "../mod/identity/local_accounts.ts";
import { generatePassword, type PasswordRule } from "../mod/identity/password_policy.ts";
import type { UsernameProblem } from "../mod/identity/username.ts";
import type { CommandDeps } from "./context.ts";
import { EXIT_FAILURE } from "./context.ts";
import type { Loaded } from "./load_config.ts";
import { openOperatorStore } from "./operator_store.ts";
import { boolFlag, type Flags, type Invocation, stringFlag, usageError } from "./output.ts";

/** The password input flags every account command that sets a password accepts. */
export const PASSWORD_FLAGS = {
  "password-stdin": { type: "boolean" },
  password: { type: "string" },
  generate: { type: "boolean" },
} as const;

/** Who runs the command, for the repair record: the login name and the numeric uid. */
export function osUserOf(deps: CommandDeps): string {
  let uid: number | null = null;
  try {
    uid = Deno.uid();
  } catch { /* not available on this platform */ }
  return `${deps.env.osUser ?? "unknown"} (uid ${uid ?? "unknown"})`;
}

export interface OpenAccounts extends Disposable {
  readonly accounts: LocalAccounts;
  readonly db: Db;
}

/**
 * Opens the configured store (migrating it like `waf serve` would; on `production` the
 * PostgreSQL store) with the account services. Only
 * `create` may bring a missing store into existence (ensure-admin on a fresh host).
 */
export function openAccounts(
  loaded: Loaded,
  deps: CommandDeps,
  t: Translate,
  options: { create: boolean; hooks?: { afterUsernameUpdate?: () => void } },
): OpenAccounts | undefined {
  const db = openOperatorStore(loaded, deps, t, { create: options.create });
  if (!db) return undefined;
  const accounts = createLocalAccounts({
    users: createUsersRepo(db),
    repairs: createAccountRepairRepo(db),
    audit: createAudit({ repo: createAuditRepo(db), clock: deps.clock }),
    clock: deps.clock,
    random: deps.random,
    roles: loaded.config.apisec.permissions,
    transaction: (fn) => transaction(db, fn),
    osUser: osUserOf(deps),
    hooks: options.hooks,
  });
  return { accounts, db, [Symbol.dispose]: () => db.close() };
}

export type PasswordInput = { password: string; generated: boolean };

/** Reads the password from exactly one of --password-stdin, --password or --generate. */
export async function readPassword(
  flags: Flags,
  invocation: Invocation,
  username: string,
): Promise<PasswordInput | number> {
  const { deps, t, words } = invocation;
  const fromStdin = boolFlag(flags, "password-stdin");
  const inline = stringFlag(flags, "password");
  const generate = boolFlag(flags, "generate");
  const modes = [fromStdin, inline !== undefined, generate].filter(Boolean).length;
  if (modes !== 1) {
    return usageError(
      deps,
      t,
      words,
      t("flags.exclusive", {
        options: "--password-stdin, --password, --generate",
      }),
    );
  }
  if (generate) return { password: generatePassword(deps.random, username), generated: true };
  if (inline !== undefined) {
    deps.stderr(`${t("user.password_on_command_line")}\n`);
    return { password: inline, generated: false };
  }
  // One trailing line break is how `echo` and here-strings end input; it is not part of it.
  const text = (await deps.readStdin()).replace(/\r?\n$/, "");
  if (text === "") return usageError(deps, t, words, t("user.empty_stdin"));
  return { password: text, generated: false };
}

/** A username problem (data from the service) in the selected language. */
function usernameReason(t: Translate, problem: UsernameProblem | undefined, fallback: string) {
  if (problem === undefined) return fallback;
  switch (problem.code) {
    case "length":
      return t("username.length", { length: String(problem.length) });
    case "first":
    case "last":
      return t(`username.${problem.code}`);
    default:
      return t(`username.${problem.code}`, { char: problem.char });
  }
}

/**
 * A name as the operator must type it: printable ASCII as is, anything else (the invisible
 * characters of historical usernames) as `\u{...}`, so two look-alike names never print alike.
 */
export function visible(name: string): string {
  let out = "";
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    out += cp > 0x20 && cp <= 0x7e && ch !== "\\" ? ch : `\\u{${cp.toString(16).toUpperCase()}}`;
  }
  return out;
}

/** Words an account-service failure; anything unexpected is rethrown. */
export function reportAccountError(deps: CommandDeps, t: Translate, err: unknown): number {
  if (!(err instanceof AppError)) throw err;
  const d = err.details ?? {};
  const name = visible(String(d["name"] ?? ""));
  switch (err.code) {
    case "USER_NOT_FOUND": {
      const value = visible(String(d["value"] ?? ""));
      deps.stderr(
        `${
          d["by"] === "id" ? t("user.no_id", { id: value }) : t("user.no_name", { name: value })
        }\n`,
      );
      break;
    }
    case "USERNAME_INVALID":
      deps.stderr(
        `${
          t("user.username_invalid", {
            name,
            reason: usernameReason(
              t,
              err.problem as UsernameProblem | undefined,
              String(d["reason"]),
            ),
          })
        }\n`,
      );
      break;
    case "USERNAME_TAKEN":
      deps.stderr(`${t("user.username_taken", { name })}\n`);
      break;
    case "USERNAME_CANONICAL":
      deps.stderr(`${t("user.username_canonical", { name })}\n`);
      break;
    case "SAME_USERNAME":
      deps.stderr(`${t("user.same_username")}\n`);
      break;
    case "PASSWORD_POLICY": {
      const rules = (d["rules"] as PasswordRule[]).map((r) => `  - ${t(`password.${r}`)}`);
      deps.stderr(`${t("user.password_policy")}\n${rules.join("\n")}\n`);
      break;
    }
    case "ROLE_INVALID":
      deps.stderr(`${t("user.no_admin_role")}\n`);
      break;
    default:
      deps.stderr(`${err.message}\n`);
  }
  return EXIT_FAILURE;
}
