/**
 * English command-line messages. Sentence case, no trailing period, values quoted (see
 * STYLE.md). `cli/i18n/messages_zh_cn.ts` must have the same ids with the same placeholders.
 */
export const EN = {
  // cli.ts: the command table and global options
  "cli.tagline": "a self-hosted web application firewall",
  "cli.usage_line": "Usage: waf <command> [options]",
  "cli.commands": "Commands:",
  "cli.help_summary": "Show help for a command",
  "cli.global_help": `Global options (before or after the command words):
  --config PATH        configuration file (default: <data-dir>/waf.yaml, i.e. ./data/waf.yaml)
  --data-dir DIR       data directory (default: ./data, or data_dir from the config file)
  --log-format FORMAT  text (default) or json
  -h, --help           show help
  -V, --version        show the version
Environment: WAF_LANG=en|zh-CN selects the language for one run (see "waf lang")`,
  "cli.unpacked_at":
    "This self-contained build unpacked itself into {dir} on its first run (into $XDG_CACHE_HOME/waf/<content>/,\n~/.cache/waf/<content>/ by default, or <data-dir>/.runtime/<content>/ when the home is not writable)",
  "cli.option_needs_value": "Option {option} needs a value",
  "cli.bad_log_format": 'Option --log-format expects "text" or "json", got "{value}"',
  "cli.see_help": 'Run "waf --help" for usage.',
  "cli.see_list": 'Run "waf --help" for the list.',
  "cli.unknown_command": 'Unknown command: "{command}"',
  "cli.unknown_command_near": 'Unknown command: "{command}"; did you mean "{suggestion}"?',
  "cli.unknown_option": 'Unknown option: "{option}"',
  "cli.missing_command": "Missing command",
  "cli.group_commands": '"waf {group}" is followed by one of these commands:',
  "cli.group_hint": 'Run "waf help {group} <command>" for the usage of one of them.',
  // Flags and usage
  "flags.unknown_option": 'Unknown option "{option}"',
  "flags.missing_value": 'Option "{option}" needs a value',
  "flags.no_value": 'Option "{option}" does not take a value',
  "flags.unexpected_argument": 'Unexpected argument: "{argument}"',
  "flags.missing_argument": "Missing argument",
  "flags.required": "Option {option} is required",
  "flags.exclusive": "Exactly one of {options} is required",
  "flags.bad_duration": 'Option {option} expects a duration such as "5s" or "500ms", got "{value}"',
  "cli.see_command_help": 'Run "waf help {command}" for usage.',
  "config.invalid": 'Invalid configuration in "{path}":',
  "config.not_found": 'Configuration file not found: "{path}"',
  "config.valid": 'Configuration "{path}" is valid',
  // waf serve
  "serve.production_unavailable":
    'ErrProductionStorageUnavailable: storage.profile is "production" but a dependency it needs is missing or unreachable; refusing to start (no listener opened, no file written):',
  "serve.deployment_keys": 'The deployment key file "{file}" cannot be used: {reason}',
  "serve.deployment_keys_missing":
    "it does not exist, but the database already belongs to a deployment, and new keys would not open what it sealed: copy the deployment's key file from another controller or its backup (mode 0600)",
  "serve.deployment_keys_mismatch":
    "its keys are not those of the deployment this database belongs to: copy the deployment's key file from another controller or its backup",
  "serve.deployment_keys_damaged":
    "it is not a deployment key file, or a key in it is damaged: restore it from another controller or its backup",
  "serve.deployment_keys_unreadable":
    "it cannot be read: give the waf user read access (mode 0600, owned by that user)",
  "serve.deployment_keys_unwritable":
    "it cannot be created: create its directory, or give the waf user write access there",
  "serve.listener_failed": "Cannot open the {listener} listener on {address}: {reason}",
  "serve.listen_in_use":
    "another process already listens there (change the address or port in waf.yaml, or stop the other process)",
  "serve.listen_permission":
    "permission denied (ports below 1024 need privileges: choose a port from 1024 up)",
  "serve.listen_unavailable": "this host has no such address (check the host part in waf.yaml)",
  "serve.listen_other": "the operating system refused it",
  "serve.not_started": 'waf did not start, and nothing was written to the data directory "{dir}"',
  "serve.start_undone":
    'waf did not start; what this start had written to the data directory "{dir}" was removed',
  "store.schema_too_new":
    "Database schema version {found} is newer than this binary supports (version {known}): upgrade waf or restore a backup taken before the upgrade",
  // waf lang
  "lang.current": "Language: {lang} ({source})",
  "lang.source_env": "from WAF_LANG",
  "lang.source_file": 'set in "{path}"',
  "lang.source_default": "default",
  "lang.supported": "Supported languages: {list}",
  "lang.ignored_env": 'WAF_LANG="{value}" is not a supported language and is ignored',
  "lang.ignored_file": 'The language "{value}" in "{path}" is not supported and is ignored',
  "lang.unknown": 'Unsupported language "{value}": expected one of {list}',
  "lang.set_done": 'Language set to {lang} (saved in "{path}")',
  "lang.env_overrides": "Note: WAF_LANG is set and selects {lang} for commands run with it",
  // waf store
  "store.missing": 'No store at "{path}": check --data-dir or data_dir',
  "store.open_failed": 'Cannot open the store "{path}": {error}',
  "store.backup_exists": 'Refusing to overwrite "{path}": choose a new file name',
  "store.backup_no_folder":
    'The folder "{folder}" does not exist: create it first (mkdir -p "{folder}") or choose another --out',
  "store.backup_not_a_folder": '"{folder}" is not a folder: choose another --out than "{path}"',
  "store.backup_corrupt": "The backup copy failed the integrity check and was removed:",
  "store.backup_failed": "Backup failed: {error}",
  "store.backup_done":
    'Backup written to "{path}" ({bytes} bytes, schema version {version}); integrity check of the copy:',
  "store.check_failed": "The store failed the integrity check:",
  "store.check_done": 'Integrity check of "{path}" (schema version {version}):',
  "store.backup_production":
    "storage.profile is production: the store is the PostgreSQL database {where}, and this command wrote nothing. Back it up with pg_dump (give the password through PGPASSWORD or ~/.pgpass):",
  "store.backup_production_keys":
    "Back up storage.production.secrets_file apart from the database: without it nothing the deployment sealed opens.",
  "store.check_production":
    "Check of the PostgreSQL store {where} (schema version {version}); rows per table:",
  "store.migrate_bad_schema": 'The schema "{schema}" must be a lower-case SQL name',
  "store.migrate_not_empty":
    "Refusing to migrate: the target {where} is not empty (table {table} holds rows). Use an empty database or another --schema",
  "store.migrate_source_version":
    "The store is at schema version {found}, this binary copies version {known}: start waf serve of this version once (it migrates the store), stop it, and run the migration again",
  "store.migrate_failed": "The migration failed and the target was left empty: {error}",
  "store.migrate_done": "Copied and verified into {where} (counts and checksums per table):",
  "store.migrate_config":
    "Stop waf serve before migrating (later writes are not copied). Then change the configuration:",
  "store.migrate_next":
    "The access log stays in this data directory's waf.db; new records go to access_log.db. Then start waf serve.",
  "store.migrate_keys_hint":
    'Create storage.production.secrets_file from "{dir}/totp.key" (sealing) and "{dir}/auth.key" (signing) before the first start, or run again with --secrets-file PATH on an empty target: a new key file would not open the secrets sealed on this box.',
  "store.migrate_keys_exists":
    'Refusing to overwrite the key file "{path}": choose another --secrets-file or leave it out',
  "store.migrate_keys_missing":
    'The copy is committed, but "{dir}/totp.key" or "{dir}/auth.key" is missing, so no key file was written: restore them and write storage.production.secrets_file before the first start',
  "store.migrate_keys_failed":
    'The copy is committed, but the key file "{path}" could not be written: {error}',
  "store.migrate_keys_written":
    'Deployment key file written to "{path}" (mode 0600): the same file on every controller',
  // waf logs pack
  "logs.bad_name":
    'The archive name "{name}" must be a plain file name ending in ".zip" (letters, digits, ".", "_", "-")',
  "logs.store_skipped": "The store could not be opened; its exports are left out: {error}",
  "logs.exists": 'Refusing to overwrite "{path}": choose another --name',
  "logs.done": 'Support archive written to "{path}" ({bytes} bytes):',
  "logs.failed": "Packing the support archive failed: {error}",
  // waf crp
  "crp.verifying": 'Verifying "{path}"',
  "crp.failed": "FAILED",
  "crp.step.file": "the package is a regular file of {bytes} bytes (cap {max})",
  "crp.step.entries":
    "{count} archive entries, all regular files or directories with safe relative paths (cap {max})",
  "crp.step.signature": "manifest.sig is a valid Ed25519 signature over manifest.json (key {key})",
  "crp.step.manifest": "manifest.json is well-formed: {name} {version}, {files} files",
  "crp.step.files":
    "every file is listed with a matching SHA-256 and size, none missing or unlisted ({files} files, {bytes} bytes)",
  "crp.verified": "Package {name} {version} verified (sha256 {sha256})",
  "crp.staged": 'Staged {name} {version} (sha256 {sha256}) as "{path}"',
  "crp.not_connected":
    "The staged package is not used by plugin execution, server start-up, cluster distribution or downloads",
  "crp.stage_failed": "Staging failed; the previous staged package is unchanged: {error}",
  "crp.unavailable":
    "{command} is not available: it needs the protected control-plane and sidecar adapters, which this runtime does not have. Nothing was changed",
  "crp.fail.not_found": "the package file does not exist",
  "crp.fail.not_regular":
    "the package is not a regular file (links, directories and devices are refused)",
  "crp.fail.too_large": "the package has {bytes} bytes, more than the cap of {max}",
  "crp.fail.malformed": "the package is not a valid ustar archive: {detail}",
  "crp.fail.too_many_files": "the package has more than {max} entries",
  "crp.fail.entry_type":
    'the entry "{path}" is a {type}; only regular files and directories are allowed',
  "crp.fail.unsafe_path": 'the path "{path}" is unsafe: {problem}',
  "crp.fail.duplicate": 'the path "{path}" appears twice',
  "crp.fail.manifest_missing": "manifest.json is missing",
  "crp.fail.manifest_too_large": "manifest.json is larger than {max} bytes",
  "crp.fail.signature_missing": "manifest.sig is missing",
  "crp.fail.signature_malformed": "manifest.sig is not a base64 Ed25519 signature (64 bytes)",
  "crp.fail.no_keys":
    "no public keys are configured: add the signer's key to crp.public_keys in the configuration",
  "crp.fail.bad_key": "crp.public_keys entry {index} is not an Ed25519 public key",
  "crp.fail.signature_invalid":
    "the signature does not verify with any of the {keys} configured public keys",
  "crp.fail.manifest_invalid": "manifest.json is invalid: {detail}",
  "crp.fail.reserved_listed": 'the manifest lists the reserved file "{path}"',
  "crp.fail.unlisted": 'the file "{path}" is not listed in the manifest',
  "crp.fail.missing": 'the listed file "{path}" is missing',
  "crp.fail.size_mismatch": 'the file "{path}" has {actual} bytes but the manifest says {expected}',
  "crp.fail.hash_mismatch": 'the SHA-256 of "{path}" does not match the manifest',
  "crp.path.absolute": "it is absolute",
  "crp.path.dot_dot": 'it contains ".."',
  "crp.path.backslash": "it contains a backslash",
  "crp.path.empty": 'it has an empty or "." segment',
  "crp.path.characters":
    "only ASCII letters, digits, '.', '_' and '-' are allowed, and no segment may start with '.' or '-'",
  "crp.path.long": "it is longer than 255 characters",
  "crp.type.hardlink": "hard link",
  "crp.type.symlink": "symbolic link",
  "crp.type.char-device": "character device",
  "crp.type.block-device": "block device",
  "crp.type.fifo": "FIFO",
  "crp.type.extension": "extension header (pax or GNU), which is not supported",
  // waf temporary-online probe
  "probe.header": "Probing {url} (timeout {timeout} ms per step)",
  "probe.ok": "ok",
  "probe.skipped": "skipped",
  "probe.failed": "failed",
  "probe.not_run": "not run (an earlier step failed)",
  "probe.skip_ip": "the host is an IP address",
  "probe.skip_plain": "plain http",
  "probe.tls_detail":
    "{protocol}, ALPN {alpn}, subject {subject}, issuer {issuer}, expires {expires}",
  "probe.http_detail": "{status}, {bytes} header bytes, time to first byte {ttfb}",
  "probe.bad_url": 'Option --url expects an http:// or https:// URL, got "{url}"',
  "probe.ca_unreadable": 'Cannot read the CA file "{path}": {error}',
  // waf user
  "user.password_on_command_line":
    "Warning: a password given with --password may be visible in the process list and shell history; prefer --password-stdin",
  "user.empty_stdin": "No password on standard input",
  "user.no_name": 'No account is named "{name}" (names match exactly, byte for byte)',
  "user.no_id": 'No account has the id "{id}" (ids match exactly)',
  "user.username_invalid": 'The username "{name}" breaks the username rule: {reason}',
  "user.username_taken":
    'The username "{name}" belongs to another account; accounts are never merged',
  "user.username_canonical":
    'The username "{name}" already follows the rule: use "waf user rename" instead',
  "user.same_username": "The new username equals the old one: nothing to change",
  "user.password_policy": "The password does not meet the policy:",
  "user.no_admin_role": 'The role "admin" is not configured in apisec.permissions',
  "user.password_set":
    'Password of "{name}" changed; its existing sessions end at their next request',
  "user.totp_disabled": "Two-factor authentication (TOTP) is now off for this account",
  "user.totp_was_off": "Two-factor authentication (TOTP) was already off",
  "user.generated": "Generated password (shown only this once):",
  "user.admin_created": 'Created the admin account "{name}" (id {id})',
  "user.setup_url_removed": "First-install setup is complete; the setup link file was removed",
  // waf setup url
  "setup.no_store": 'No store at "{path}": start "waf serve" once with this data directory first',
  "setup.already_complete": "Setup is already complete: sign in on the console's /login page",
  "setup.link_written": "Setup link written to {path} (valid for {minutes} minutes)",
  "setup.receipt": "Receipt: {receipt}",
  "user.admin_updated":
    'The account "{name}" is now an enabled admin (was "{role}") with the new password; its existing sessions end at their next request',
  "user.renamed": 'Renamed "{old}" to "{name}"; {sessions} session(s) revoked',
  "user.repaired":
    'Repaired the username of {id}: "{old}" is now "{name}"; {sessions} session(s) revoked; recorded in the username repair log',
  "username.whitespace": "it contains the whitespace character {char}",
  "username.control": "it contains the control or format character {char}",
  "username.non_ascii": "it contains the non-ASCII character {char}",
  "username.character":
    "it contains {char}; only ASCII letters, digits, '.', '_' and '-' are allowed",
  "username.length": "it must be 3 to 32 characters long, not {length}",
  "username.first": "it must start with an ASCII letter",
  "username.last": "it must end with an ASCII letter or digit",
  "password.min_length": "at least 10 characters",
  "password.max_length": "at most 256 characters",
  "password.character_classes":
    "at least 3 of: upper-case letters, lower-case letters, digits (not all one repeated digit), special characters",
  "password.common_password": "not a common password",
  "password.sequence":
    "no runs of 4 or more consecutive letters or digits such as 'abcd' or '1234'",
  "password.keyboard_walk": "no keyboard walks of 4 or more keys such as 'qwer' or 'asdf'",
  "password.repeated_run":
    "no character repeated 4 or more times in a row and no repeated short pattern",
  "password.contains_username": "must neither equal nor contain the username (ignoring case)",
} as const satisfies Record<string, string>;

export type MessageId = keyof typeof EN;
