/**
 * The command-table entries of the local operator commands (store, logs, language, packages,
 * the one-shot probe and accounts). `cli.ts` spreads them into COMMANDS; Chinese help for each
 * lives in `cli/i18n/messages_zh_cn.ts` HELP_ZH_CN.
 */
import type { CommandSpec } from "./context.ts";
import {
  crpActivateCommand,
  crpRollbackCommand,
  crpStageCommand,
  crpVerifyCommand,
} from "./crp.ts";
import { langSetCommand, langShowCommand } from "./lang.ts";
import { logsPackCommand } from "./logs.ts";
import { probeCommand } from "./probe.ts";
import { storeBackupCommand, storeCheckCommand, storeMigrateCommand } from "./store.ts";
import {
  userEnsureAdminCommand,
  userPasswordCommand,
  userRenameCommand,
  userRepairUsernameCommand,
} from "./user.ts";

const EXITS = "Exit codes: 0 success, 1 failure, 2 usage error.";

const PASSWORD_INPUT =
  `Exactly one password input: --password-stdin (recommended: one line on standard
input), --password PASSWORD (visible in the process list), or --generate (a strong password
that meets the policy, printed once).`;

export const OPERATOR_COMMANDS: readonly CommandSpec[] = [
  {
    words: ["user", "password"],
    summary: "Set an account's password (recovery)",
    usage: `waf user password USERNAME (--password-stdin | --password PASSWORD | --generate)
                  [--reset-2fa]

Sets the password of the account named exactly USERNAME. ${PASSWORD_INPUT}
The password policy applies. --reset-2fa also turns two-factor authentication (TOTP) off.
The credential epoch advances, so the account's existing sessions end at their next request,
also while "waf serve" runs. Audited as the local CLI.
Exit codes: 0 success, 1 failure, 2 usage error.`,
    run: userPasswordCommand,
  },
  {
    words: ["user", "ensure-admin"],
    summary: "Create an admin account, or make an existing one admin",
    usage: `waf user ensure-admin USERNAME --password-stdin

Ensures an enabled admin account named USERNAME exists: creates it (the first account also
completes first-install setup), or makes the existing account an enabled admin and sets its
password (its sessions end at their next request). USERNAME must follow the username rule.
--password PASSWORD and --generate are accepted instead of --password-stdin.
Exit codes: 0 success, 1 failure, 2 usage error.`,
    run: userEnsureAdminCommand,
  },
  {
    words: ["user", "rename"],
    summary: "Rename an account (both names canonical)",
    usage: `waf user rename OLD NEW

Renames the account OLD to NEW. Both names must follow the username rule, so a historical
non-canonical name cannot be selected here (use "waf user repair-username"). Revokes every
unrevoked session of the account. Writes a regular audit record, no username repair record.
Exit codes: 0 success, 1 failure, 2 usage error.`,
    run: userRenameCommand,
  },
  {
    words: ["user", "repair-username"],
    summary: "Repair a historical username that breaks the rule",
    usage: `waf user repair-username USER_ID NEW_USERNAME --reason TEXT

Only for an account whose current username breaks today's username rule (such accounts can
exist from before the rule tightened). USER_ID must match the account's immutable id exactly;
NEW_USERNAME must follow the rule and belong to no other account (accounts are never merged).
One transaction updates the username, revokes all the account's unrevoked sessions and
appends to the username repair log (your OS user and uid, the reason, old and new name, the
number of revoked sessions, the time). Id, password, role and two-factor state are unchanged.
Exit codes: 0 success, 1 failure, 2 usage error.`,
    run: userRepairUsernameCommand,
  },
  {
    words: ["store", "backup"],
    summary: "Write a consistent online backup of the store",
    usage: `waf store backup --out FILE

Writes a consistent snapshot of the management store (<data-dir>/waf.db) to FILE while
"waf serve" keeps running (SQLite VACUUM INTO: commits still in the write-ahead log are
included; never a plain file copy), runs PRAGMA integrity_check on the copy and prints "ok".
Refuses to overwrite an existing FILE. The store is opened as it is and never migrated, so a
backup taken before an upgrade keeps the old schema. Take one before every upgrade or repair.
On storage.profile: production it writes nothing and prints the pg_dump command line for the
configured database and schema (password masked) instead, and exits 1.
${EXITS}`,
    run: storeBackupCommand,
  },
  {
    words: ["store", "check"],
    summary: "Run the integrity check on the live store",
    usage: `waf store check

Runs PRAGMA integrity_check on the live store (read-only, safe while "waf serve" runs) and
prints "ok", or prints the problems and exits 1. On storage.profile: production it connects
to the configured PostgreSQL store, reads its schema version and counts every table's rows.
${EXITS}`,
    run: storeCheckCommand,
  },
  {
    words: ["store", "migrate"],
    summary: "Copy this box's store into an empty PostgreSQL database",
    usage: `waf store migrate --to-dsn DSN [--schema NAME] [--secrets-file PATH]

Moves a "temporary" deployment onto the production profile. Stop "waf serve" first. Copies
every management table of <data-dir>/waf.db (users, sessions, sites, policy, audit, settings,
...; not the access log, which stays local) into the schema NAME (default public) of the
PostgreSQL database DSN, in one transaction, keeping ids and resetting identity sequences.
Refuses a target whose tables hold any row, naming the table. Verifies each table's row count
and checksum on both sides before committing (a failure leaves the target empty), prints them
and the configuration lines to change. --secrets-file writes the deployment key file from
totp.key and auth.key (mode 0600, never over an existing file). The DSN's password is never
printed. On "production", "waf user ..." commands act on this database.
${EXITS}`,
    run: storeMigrateCommand,
  },
  {
    words: ["logs", "pack"],
    summary: "Pack logs and masked configuration into a support ZIP",
    usage: `waf logs pack --dir DIR [--name FILE.zip]

Writes a ZIP support archive into DIR: the runtime logs (<data-dir>/logs/waf.log and its
rotated files), exports of the audit log and the latest access logs from the store, the
effective configuration with secrets masked, and manifest.json (time, version, host facts).
The default name is waf-support-<UTC time>.zip. Never includes the setup token, the TOTP key,
session secrets, password or token hashes, or private keys. Refuses to overwrite a file.
${EXITS}`,
    run: logsPackCommand,
  },
  {
    words: ["lang", "show"],
    summary: "Show the command-line language",
    usage: `waf lang show

Shows the language of command messages, where it comes from (WAF_LANG, <data-dir>/cli.json
or the default, English) and the supported languages.
${EXITS}`,
    run: langShowCommand,
  },
  {
    words: ["lang", "set"],
    summary: "Set the command-line language (en or zh-CN)",
    usage: `waf lang set <en|zh-CN>

Saves the language of command messages in <data-dir>/cli.json. The environment variable
WAF_LANG overrides it for a single run. An unsupported language is refused with the list of
supported ones.
${EXITS}`,
    run: langSetCommand,
  },
  {
    words: ["crp", "verify"],
    summary: "Verify a signed content package offline",
    usage: `waf crp verify PACKAGE.tar

Checks a local package offline, in this order, stopping at the first failure: the file is a
regular file under the size cap; every tar entry is a regular file or directory (no links,
devices or FIFOs) with a safe relative path (no absolute path, "..", or duplicate), within the
file-count cap; manifest.sig is a valid Ed25519 signature over manifest.json by one of the
keys in crp.public_keys; every file is listed in the manifest with its SHA-256 and size, and
nothing listed is missing. Prints each check.
Verification only: staged packages are not connected to plugin execution, server start-up,
cluster distribution or downloads.
${EXITS}`,
    run: crpVerifyCommand,
  },
  {
    words: ["crp", "stage"],
    summary: "Verify a package and store it in the staged slot",
    usage: `waf crp stage PACKAGE.tar

Verifies PACKAGE exactly as "waf crp verify" does, then stores it as <data-dir>/crp/staged.tar
(written to a temporary file, synced, then renamed: a crash leaves either the old staged
package or the new one). The staged package is not connected to plugin execution, server
start-up, cluster distribution or downloads.
${EXITS}`,
    run: crpStageCommand,
  },
  {
    words: ["crp", "activate"],
    summary: "Not available: fails closed, changes nothing",
    usage: `waf crp activate

Activating a staged package needs the protected control-plane and sidecar adapters, which this
runtime does not have. The command fails closed: it prints why, changes nothing and exits 1.`,
    run: crpActivateCommand,
  },
  {
    words: ["crp", "rollback"],
    summary: "Not available: fails closed, changes nothing",
    usage: `waf crp rollback

Rolling back needs the protected control-plane and sidecar adapters, which this runtime does
not have. The command fails closed: it prints why, changes nothing and exits 1.`,
    run: crpRollbackCommand,
  },
  {
    words: ["temporary-online", "probe"],
    summary: "One-shot outbound probe: DNS, TCP, TLS, HTTP with timings",
    usage: `waf temporary-online probe --url URL [--timeout 5s] [--ca-file PEM] [--json]

A separate one-shot operator tool: makes a single outbound request to URL (http or https)
and reports each step with its time: DNS (system resolver; "skipped" for an IP address), TCP
connect, TLS (protocol, ALPN, certificate subject, issuer and expiry; --ca-file trusts a local
CA in addition to the system roots) and HTTP (status, header bytes, time to first byte).
Then it exits. --timeout bounds each step (default 5s). Nothing else in waf calls it; it is
not a plugin egress API. Exit 0 when an HTTP response arrived, 1 when a step failed.
${EXITS}`,
    run: probeCommand,
  },
];
