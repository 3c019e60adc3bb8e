/**
 * The deployment's sealing and signing keys, resolved once at start-up, right after the store
 * opens. On one box (`temporary`) they are the data directory's `totp.key` and `auth.key`, as
 * always. In the `production` profile they live in `storage.production.secrets_file`, the same
 * file on every controller, never in the database it protects. The database records only which
 * keys its deployment has (`deployment.keys`: an HMAC of a fixed label under each key), so:
 *
 * - no file and no deployment recorded: the file is created (mode 0600) and recorded;
 * - a file and no deployment recorded: the file is adopted (copied in before the first start);
 * - a file whose fingerprints match: its keys are used;
 * - no file, or another file, while a deployment is recorded: start-up is refused, naming the
 *   file. A missing or wrong copy never mints new keys, which would seal new secrets that the
 *   other controllers cannot open and leave the old ones unreadable here.
 */
import type { Config } from "../config/config.ts";
import type { Db } from "../../db/store.ts";
import { createSettingsRepo } from "../../db/settings_repo.ts";
import { dataDirKeys, type DeploymentKeys } from "../core/deployment_keys.ts";
import { b64url, fromB64url, hmac, safeEqual } from "../core/digest.ts";
import type { Random } from "../core/random.ts";

/** The settings key holding the deployment's key fingerprints. */
export const DEPLOYMENT_KEYS_SETTING = "deployment.keys";

const KEY_BYTES = 32;
const FINGERPRINT_LABEL = "waf deployment key fingerprint v1";
const FILE_HEADER = `# waf deployment key file (storage.production.secrets_file)
# The same file on every controller of the deployment, mode 0600. Never store it in the
# database; back it up apart from the database. Without it, nothing the deployment sealed opens.
`;

export type DeploymentKeysProblem =
  /** No file, but the database belongs to a deployment. */
  | "missing"
  /** The file's keys are not the deployment's. */
  | "mismatch"
  /** The file is not a key file (or a key is not 32 bytes). */
  | "damaged"
  | "unreadable"
  | "unwritable";

const ADVICE: Record<DeploymentKeysProblem, string> = {
  missing:
    "the database already belongs to a deployment, and a new file would not open what it sealed: copy the deployment's key file from another controller or its backup (mode 0600)",
  mismatch:
    "its keys are not those of the deployment this database belongs to: copy the deployment's key file from another controller or its backup",
  damaged: "restore it from another controller or its backup",
  unreadable: "give the waf user read access (mode 0600, owned by that user)",
  unwritable: "create its directory, or give the waf user write access there",
};

/** A deployment key file that cannot be used; start-up stops and names the file. */
export class DeploymentKeysError extends Error {
  constructor(
    readonly file: string,
    readonly problem: DeploymentKeysProblem,
    readonly detail = "",
  ) {
    super(
      `The deployment key file "${file}" cannot be used (${problem}${
        detail ? `: ${detail}` : ""
      }): ${ADVICE[problem]}`,
    );
    this.name = "DeploymentKeysError";
  }
}

interface RawKeys {
  readonly sealing: Uint8Array;
  readonly signing: Uint8Array;
}

/** What the store records: never the keys, only what tells them apart. */
interface Fingerprints {
  readonly version: 1;
  readonly sealing: string;
  readonly signing: string;
}

export interface ResolveOptions {
  readonly config: Config;
  readonly dataDir: string;
  readonly db: Db;
  readonly random: Random;
  /** The time recorded with a new deployment (milliseconds). */
  readonly now: number;
}

/** The keys every area uses; throws {@link DeploymentKeysError} when the file cannot be used. */
export async function resolveDeploymentKeys(options: ResolveOptions): Promise<DeploymentKeys> {
  const { config } = options;
  if (config.storage.profile !== "production") return dataDirKeys(options.dataDir);
  const file = config.storage.production?.secrets_file;
  // deploymentProblems refuses production without the key; this is the last line of defence.
  if (!file) throw new DeploymentKeysError("(storage.production.secrets_file)", "missing");
  const settings = createSettingsRepo(options.db);
  const recorded = () => settings.get(DEPLOYMENT_KEYS_SETTING);
  let keys = await readKeyFile(file);
  if (keys === undefined) {
    if (recorded() !== undefined) throw new DeploymentKeysError(file, "missing");
    const made = {
      sealing: options.random.bytes(KEY_BYTES),
      signing: options.random.bytes(KEY_BYTES),
    };
    // Another process on this host may have made it a moment ago: then that file is read.
    keys = await createKeyFile(file, made) ? made : await readKeyFile(file);
    if (keys === undefined) throw new DeploymentKeysError(file, "missing");
    if (keys === made) await recordNew(settings, file, made, options.now);
  } else {
    await tightenMode(file);
  }
  const stored = recorded();
  if (stored === undefined && !record(settings, keys, options.now)) {
    return verified(file, keys, recorded());
  }
  return verified(file, keys, stored ?? fingerprints(keys));
}

/** Records the keys of the file just made; the file goes again when they are not recorded. */
async function recordNew(
  settings: ReturnType<typeof createSettingsRepo>,
  file: string,
  keys: RawKeys,
  now: number,
): Promise<void> {
  let recorded: boolean;
  try {
    recorded = record(settings, keys, now);
  } catch (err) {
    await Deno.remove(file).catch(() => {});
    throw err;
  }
  if (recorded) return;
  // Another controller recorded its deployment meanwhile: this new file is not its.
  await Deno.remove(file).catch(() => {});
  throw new DeploymentKeysError(file, "missing", "another controller created the deployment");
}

/** Records the deployment unless one is recorded already; true when this call recorded it. */
function record(
  settings: ReturnType<typeof createSettingsRepo>,
  keys: RawKeys,
  now: number,
): boolean {
  return settings.setIfAbsent(DEPLOYMENT_KEYS_SETTING, fingerprints(keys), now);
}

function verified(file: string, keys: RawKeys, stored: unknown): DeploymentKeys {
  if (!matches(stored, fingerprints(keys))) throw new DeploymentKeysError(file, "mismatch");
  return { sealing: { key: keys.sealing }, signing: { key: keys.signing } };
}

function fingerprints(keys: RawKeys): Fingerprints {
  return {
    version: 1,
    sealing: hmac(keys.sealing, FINGERPRINT_LABEL),
    signing: hmac(keys.signing, FINGERPRINT_LABEL),
  };
}

function matches(stored: unknown, mine: Fingerprints): boolean {
  const s = stored as Partial<Fingerprints> | null | undefined;
  if (!s || s.version !== 1 || typeof s.sealing !== "string" || typeof s.signing !== "string") {
    return false;
  }
  // Both compared, whatever the first says: the time taken tells nothing.
  const sealing = safeEqual(s.sealing, mine.sealing);
  const signing = safeEqual(s.signing, mine.signing);
  return sealing && signing;
}

/** The file's keys; undefined when there is no file. */
async function readKeyFile(file: string): Promise<RawKeys | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw new DeploymentKeysError(file, "unreadable", (err as Error).message);
  }
  return parseKeyFile(file, text);
}

/** `name: base64url` lines after `#` comments; both keys 32 bytes. */
export function parseKeyFile(file: string, text: string): RawKeys {
  const fields = new Map<string, string>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const colon = line.indexOf(":");
    if (colon < 0) throw new DeploymentKeysError(file, "damaged", "expected name: value lines");
    fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  if (fields.get("version") !== "1") {
    throw new DeploymentKeysError(file, "damaged", 'expected "version: 1"');
  }
  const key = (name: "sealing" | "signing") => {
    const bytes = fromB64url(fields.get(name) ?? "");
    if (bytes === undefined || bytes.length !== KEY_BYTES) {
      throw new DeploymentKeysError(file, "damaged", `expected a 32-byte "${name}" key`);
    }
    return bytes;
  };
  return { sealing: key("sealing"), signing: key("signing") };
}

/** The text of a key file holding `keys`. */
export function formatKeyFile(keys: RawKeys): string {
  return `${FILE_HEADER}version: 1\nsealing: ${b64url(keys.sealing)}\nsigning: ${
    b64url(keys.signing)
  }\n`;
}

/** Creates the file (mode 0600, never over an existing one); false when it exists already. */
async function createKeyFile(file: string, keys: RawKeys): Promise<boolean> {
  try {
    await Deno.writeTextFile(file, formatKeyFile(keys), { mode: 0o600, createNew: true });
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return false;
    throw new DeploymentKeysError(file, "unwritable", (err as Error).message);
  }
}

/** A key file readable by others is made owner-only, as the data directory's key files are. */
async function tightenMode(file: string): Promise<void> {
  const info = await Deno.stat(file);
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    await Deno.chmod(file, 0o600).catch(() => {});
  }
}
