/**
 * The ACME account of a directory: one per directory URL, its key created once and stored
 * sealed with the data directory's key (settings row `acme.account.<directory>`), registered
 * with the CA at first use and its contact kept up to date.
 */
import type * as AcmeClient from "acme-client";
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { SecretBox } from "../core/secret_box.ts";
import { loadAcme } from "./acme_agent.ts";

const ACCOUNT_KEY = "acme.account.";

interface Account {
  readonly key_sealed: string;
  readonly url: string | null;
  readonly email: string | null;
}

export interface AccountDeps {
  readonly settings: SettingsRepo;
  readonly box: SecretBox;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
  /** Polling of the CA while it validates (tests shorten it). */
  readonly backoff?: { attempts: number; minMs: number; maxMs: number };
}

/** acme-client's client for the account of `directory`, registered (or its contact updated). */
export async function openAccount(
  deps: AccountDeps,
  directory: string,
  email: string | null,
): Promise<AcmeClient.Client> {
  const { settings, box, clock } = deps;
  const stored = settings.get(ACCOUNT_KEY + directory) as Account | undefined;
  const { acme } = await loadAcme();
  let key: string;
  if (stored === undefined) {
    key = (await acme.crypto.createPrivateEcdsaKey("P-256")).toString();
    const row: Account = {
      key_sealed: await box.seal(new TextEncoder().encode(key), ACCOUNT_KEY + directory),
      url: null,
      email,
    };
    deps.transaction(() => settings.set(ACCOUNT_KEY + directory, row, clock.now()));
  } else {
    try {
      key = new TextDecoder().decode(await box.open(stored.key_sealed, ACCOUNT_KEY + directory));
    } catch (err) {
      throw new AppError(
        500,
        "ACME_ACCOUNT_KEY_UNREADABLE",
        "The stored ACME account key cannot be opened (the data directory's key changed)",
        { cause: err },
      );
    }
  }
  const b = deps.backoff ?? { attempts: 10, minMs: 1000, maxMs: 10_000 };
  const client = new acme.Client({
    directoryUrl: directory,
    accountKey: key,
    accountUrl: stored?.url ?? undefined,
    backoffAttempts: b.attempts,
    backoffMin: b.minMs,
    backoffMax: b.maxMs,
  });
  const contact = email ? { contact: [`mailto:${email}`] } : {};
  // No address given: the account keeps its contact.
  if (stored?.url && (email === null || stored.email === email)) return client;
  if (stored?.url) {
    await client.updateAccount(contact);
  } else {
    // Creating an account for a key the CA knows answers the existing one (RFC 8555 7.3.1).
    await client.createAccount({ termsOfServiceAgreed: true, ...contact });
  }
  const url = client.getAccountUrl();
  const row = settings.get(ACCOUNT_KEY + directory) as Account;
  deps.transaction(() =>
    settings.set(ACCOUNT_KEY + directory, { ...row, url, email }, clock.now())
  );
  return client;
}
