/** Site fixtures: a valid site input with overrides, parsed exactly as the API parses it. */
import { DatabaseSync } from "node:sqlite";
import { type SiteConfig, siteInputSchema } from "../../mod/data_plane/site_schema.ts";

export function siteInput(overrides: Record<string, unknown> = {}): SiteConfig {
  return siteInputSchema.parse({
    name: "shop",
    hosts: ["shop.test"],
    upstreams: ["http://127.0.0.1:9"],
    ...overrides,
  });
}

export const SYSTEM = { actor: { type: "system" as const } };

/** PEM private key text of any kind (PKCS#8, RSA, EC, encrypted). */
export const PEM_PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** One text column of every row of a table, read from the file with SQLite itself. */
function column(dbPath: string, sql: string): string[] {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    return (db.prepare(sql).all() as { v: string }[]).map((r) => r.v);
  } finally {
    db.close();
  }
}

/** The `config` column of every site row. */
export const storedSiteConfigs = (dbPath: string): string[] =>
  column(dbPath, "SELECT config AS v FROM sites ORDER BY id");

/** The `config` column of every policy object of `kind`. */
export const storedPolicyObjects = (dbPath: string, kind: string): string[] =>
  column(dbPath, `SELECT config AS v FROM policy_objects WHERE kind = '${kind}' ORDER BY id`);

/** The `value` column of every settings row (ACME state and account, sealed secrets). */
export const storedSettings = (dbPath: string): string[] =>
  column(dbPath, "SELECT value AS v FROM settings ORDER BY key");
