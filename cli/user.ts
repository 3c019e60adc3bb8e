/**
 * `waf user password|ensure-admin|rename|repair-username`: account recovery on the host,
 * directly against the store (safe while `waf serve` runs: the server drops the affected
 * sessions at their next request because the credential epoch moved on).
 */
import { removeSetupUrl } from "../mod/identity/setup_token.ts";
import { type Command, EXIT_OK } from "./context.ts";
import { startOperator } from "./operator.ts";
import { boolFlag, stringFlag, usageError } from "./output.ts";
import {
  openAccounts,
  PASSWORD_FLAGS,
  readPassword,
  reportAccountError,
  visible,
} from "./user_common.ts";

export const userPasswordCommand: Command = async (args, global, deps) => {
  const words = ["user", "password"];
  const started = await startOperator(global, deps, {
    words,
    args,
    options: { ...PASSWORD_FLAGS, "reset-2fa": { type: "boolean" } },
    positionals: { min: 1, max: 1 },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const username = flags.positionals[0]!;
  const input = await readPassword(flags, { deps, t, words }, username);
  if (typeof input === "number") return input;
  using store = openAccounts(loaded, deps, t, { create: false });
  if (!store) return 1;
  try {
    const reset2fa = boolFlag(flags, "reset-2fa");
    const result = await store.accounts.setPassword(username, input.password, {
      reset2fa,
      generated: input.generated,
    });
    deps.stdout(`${t("user.password_set", { name: visible(result.user.username) })}\n`);
    if (reset2fa) {
      deps.stdout(
        `${t(result.totpWasEnabled ? "user.totp_disabled" : "user.totp_was_off")}\n`,
      );
    }
    if (input.generated) {
      deps.stdout(`${t("user.generated")}\n${input.password}\n`);
    }
    return EXIT_OK;
  } catch (err) {
    return reportAccountError(deps, t, err);
  }
};

export const userEnsureAdminCommand: Command = async (args, global, deps) => {
  const words = ["user", "ensure-admin"];
  const started = await startOperator(global, deps, {
    words,
    args,
    options: PASSWORD_FLAGS,
    positionals: { min: 1, max: 1 },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const username = flags.positionals[0]!;
  const input = await readPassword(flags, { deps, t, words }, username);
  if (typeof input === "number") return input;
  using store = openAccounts(loaded, deps, t, { create: true });
  if (!store) return 1;
  try {
    const result = await store.accounts.ensureAdmin(username, input.password);
    if (result.created) {
      deps.stdout(`${t("user.admin_created", { name: username, id: result.user.id })}\n`);
      // The first account completes setup, so the link with the setup token is now useless.
      if (await removeSetupUrl(loaded.dataDir)) {
        deps.stdout(`${t("user.setup_url_removed")}\n`);
      }
    } else {
      deps.stdout(
        `${t("user.admin_updated", { name: username, role: result.previousRole ?? "" })}\n`,
      );
    }
    if (input.generated) deps.stdout(`${t("user.generated")}\n${input.password}\n`);
    return EXIT_OK;
  } catch (err) {
    return reportAccountError(deps, t, err);
  }
};

export const userRenameCommand: Command = async (args, global, deps) => {
  const started = await startOperator(global, deps, {
    words: ["user", "rename"],
    args,
    positionals: { min: 2, max: 2 },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const [oldName, newName] = flags.positionals as [string, string];
  using store = openAccounts(loaded, deps, t, { create: false });
  if (!store) return 1;
  try {
    const result = store.accounts.rename(oldName, newName);
    deps.stdout(
      `${t("user.renamed", { old: oldName, name: newName, sessions: result.revokedSessions })}\n`,
    );
    return EXIT_OK;
  } catch (err) {
    return reportAccountError(deps, t, err);
  }
};

/** Test-only: a hook run inside the repair transaction right after the username update. */
export interface RepairHooks {
  readonly afterUsernameUpdate?: () => void;
}

/** The repair command, with fault points for tests (the CLI table uses no hooks). */
export function repairUsernameCommand(hooks: RepairHooks = {}): Command {
  return async (args, global, deps) => {
    const words = ["user", "repair-username"];
    const started = await startOperator(global, deps, {
      words,
      args,
      options: { reason: { type: "string" } },
      positionals: { min: 2, max: 2 },
    });
    if (typeof started === "number") return started;
    const { t, flags, loaded } = started;
    const reason = stringFlag(flags, "reason");
    if (reason === undefined || reason.trim() === "") {
      return usageError(deps, t, words, t("flags.required", { option: "--reason" }));
    }
    const [userId, newName] = flags.positionals as [string, string];
    using store = openAccounts(loaded, deps, t, { create: false, hooks });
    if (!store) return 1;
    try {
      const result = store.accounts.repairUsername(userId, newName, reason);
      deps.stdout(
        `${
          t("user.repaired", {
            id: userId,
            old: visible(result.previous),
            name: newName,
            sessions: result.revokedSessions,
          })
        }\n`,
      );
      return EXIT_OK;
    } catch (err) {
      return reportAccountError(deps, t, err);
    }
  };
}

export const userRepairUsernameCommand: Command = repairUsernameCommand();
