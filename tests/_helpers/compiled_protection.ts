/** Compiles protection documents given as plain data, without a store (unit tests, benches). */
import type { PolicyObjectRow } from "../../db/policy_objects_repo.ts";
import {
  type CompiledProtection,
  createProtectionCompiler,
  KIND,
} from "../../mod/protection/protection_compile.ts";

/** `rows` by kind (ids are `<kind>_<index>`; indicators belong to feed `threat_feed_0`). */
export function compileDocs(
  rows: Record<string, unknown[]>,
  singletons: Record<string, unknown> = {},
): CompiledProtection {
  const toRows = (kind: string): PolicyObjectRow[] =>
    (rows[kind] ?? []).map((doc, i) => ({
      id: kind === KIND.indicators ? `${KIND.feed}_${i}:indicators` : `${kind}_${i}`,
      kind,
      site_id: null,
      position: i,
      config: JSON.stringify(doc),
      created_at: 0,
      updated_at: 0,
    }));
  const single = (k: string) =>
    singletons[k] === undefined ? undefined : JSON.stringify(singletons[k]);
  return createProtectionCompiler()({ rows: toRows, singleton: single });
}

/** A chain that records `check:result[:rule]` strings. */
export function recordingChain() {
  const entries: string[] = [];
  return {
    entries,
    add: (check: string, result: string, rule?: string) =>
      void entries.push([check, result, rule].filter((x) => x !== undefined).join(":")),
  };
}
