/**
 * The API-security shared secret in the cluster's policy snapshot. The store keeps it sealed
 * under the data directory's `totp.key` (`apisec_settings.ts`), which a node does not have; the
 * controller's snapshot therefore carries it opened, only inside the node-controller mTLS channel,
 * as `auth.secret_sealed: "opened.<base64url>"`, and the node seals it under its own key as it
 * stores the rows. The opened value stays in the same field on purpose: a node of an older build
 * keeps every other setting and refuses HS tokens (it cannot open the value, as before), where a
 * new field would fail its strict stored schema and leave it without JWT authentication.
 */
import type { PolicyObjectRow } from "../../db/policy_objects_repo.ts";
import { b64url, fromB64url } from "../core/digest.ts";
import type { Logger } from "../core/logger.ts";
import type { Random } from "../core/random.ts";
import { createSyncSecretBox, type SyncSecretBox } from "../core/secret_box.ts";
import type { DeploymentKeys } from "../core/deployment_keys.ts";
import { APISEC_KIND, SECRET_OWNER } from "./apisec_settings.ts";

/** Prefix of the opened form (a sealed value starts with its envelope version, `v1.`). */
const OPENED = "opened.";

/** Opens and seals the secrets a policy object row keeps sealed at rest. */
export interface ObjectSecrets {
  /** The row as the snapshot carries it (the secret opened). */
  open(row: PolicyObjectRow): PolicyObjectRow;
  /** The row as the store keeps it (the secret sealed under this data directory's key). */
  seal(row: PolicyObjectRow): PolicyObjectRow;
}

type Doc = { auth?: { secret_sealed?: string | null } };

/** `row` with `auth.secret_sealed` mapped by `fn` (other rows and secret-less ones untouched). */
function mapSecret(
  row: PolicyObjectRow,
  fn: (value: string) => string | null,
): PolicyObjectRow {
  if (row.kind !== APISEC_KIND) return row;
  const doc = JSON.parse(row.config) as Doc;
  const value = doc.auth?.secret_sealed;
  if (typeof value !== "string") return row;
  const next = fn(value);
  if (next === value) return row;
  return { ...row, config: JSON.stringify({ ...doc, auth: { ...doc.auth, secret_sealed: next } }) };
}

export function createApisecWire(deps: {
  readonly box: SyncSecretBox;
  /** Told once per value that does not open (another data directory's key, damage). */
  readonly unreadable?: (err: unknown) => void;
}): ObjectSecrets {
  const reported = new Set<string>();
  // The last value opened: the controller opens it each time it recomputes its policy version.
  let last: { sealed: string; opened: string } | undefined;
  return {
    open: (row) =>
      mapSecret(row, (sealed) => {
        if (sealed.startsWith(OPENED)) return sealed;
        if (last?.sealed === sealed) return last.opened;
        try {
          const opened = OPENED + b64url(deps.box.open(sealed, SECRET_OWNER));
          last = { sealed, opened };
          return opened;
        } catch (err) {
          if (!reported.has(sealed)) {
            reported.add(sealed);
            deps.unreadable?.(err);
          }
          return null;
        }
      }),
    seal: (row) =>
      mapSecret(row, (value) => {
        if (!value.startsWith(OPENED)) return value;
        const plain = fromB64url(value.slice(OPENED.length));
        return plain === undefined || plain.length === 0
          ? null
          : deps.box.seal(plain, SECRET_OWNER);
      }),
  };
}

/**
 * The secrets sealed with the deployment's sealing key (one box: its `totp.key`); failures go to
 * the log.
 */
export function deploymentApisecWire(
  keys: DeploymentKeys,
  random: Random,
  logger: Logger,
): ObjectSecrets {
  return createApisecWire({
    box: createSyncSecretBox(keys.sealing, random),
    unreadable: () =>
      logger.error(
        "the API-security shared secret cannot be opened (sealed with another data directory's totp.key, or damaged); nodes get none and refuse HS tokens until it is set again",
      ),
  });
}
