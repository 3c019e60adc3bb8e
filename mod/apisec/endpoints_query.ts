/**
 * The inventory as `GET /api/apisec/endpoints` answers it: filtered, paged, busiest first, each
 * endpoint with its coverage under the settings in force (the schema entry and the token route
 * that apply to its example path) and the shadow-API flag (settings document some endpoints, and
 * no schema entry, enabled or not, matches this one).
 */
import { compileRe2 } from "../../engine/re2.ts";
import { type CompiledApiSec, inScope } from "./apisec_compile.ts";
import type { SchemaEntry } from "./apisec_schema.ts";
import type { Endpoint, Inventory } from "./inventory.ts";

export interface EndpointFilter {
  readonly siteId?: string;
  readonly method?: string;
  /** Substring of the template. */
  readonly q?: string;
  readonly shadow?: boolean;
  readonly covered?: boolean;
  readonly limit: number;
  readonly offset: number;
}

export interface EndpointItem extends Omit<Endpoint, "methods"> {
  readonly methods: Record<string, number>;
  readonly covered: { readonly schema: string | null; readonly auth: string | null };
  readonly shadow: boolean;
}

function coveredBy<T extends Parameters<typeof inScope>[0]>(
  list: readonly T[],
  e: Endpoint,
): T | undefined {
  for (const m of Object.keys(e.methods)) {
    for (const x of list) if (inScope(x, e.site_id, m, e.example_path)) return x;
  }
  return undefined;
}

/** True when any documented schema entry (enabled or not) matches the endpoint. */
function documented(entries: readonly SchemaEntry[], e: Endpoint): boolean {
  for (const s of entries) {
    if (s.site_id !== null && s.site_id !== e.site_id) continue;
    if (s.method !== "*" && e.methods[s.method] === undefined) continue;
    const r = compileRe2(s.path_pattern);
    if (!r.ok) continue;
    try {
      if (r.matcher.test(e.example_path)) return true;
    } finally {
      r.matcher.release();
    }
  }
  return false;
}

export function queryEndpoints(
  all: readonly Endpoint[],
  compiled: CompiledApiSec,
  schemas: readonly SchemaEntry[],
  f: EndpointFilter,
): { items: EndpointItem[]; total: number } {
  const q = f.q?.toLowerCase();
  const items: EndpointItem[] = [];
  for (const e of all) {
    if (f.siteId !== undefined && e.site_id !== f.siteId) continue;
    if (f.method !== undefined && e.methods[f.method] === undefined) continue;
    if (q !== undefined && !e.template.toLowerCase().includes(q)) continue;
    const schema = coveredBy(compiled.schemas, e)?.id ?? null;
    const auth = coveredBy(compiled.auth.routes, e)?.id ?? null;
    const shadow = schemas.length > 0 && !documented(schemas, e);
    if (f.shadow !== undefined && shadow !== f.shadow) continue;
    if (f.covered !== undefined && (schema !== null || auth !== null) !== f.covered) continue;
    items.push({ ...e, methods: { ...e.methods }, covered: { schema, auth }, shadow });
  }
  items.sort((a, b) => b.hits - a.hits || a.template.localeCompare(b.template));
  return { items: items.slice(f.offset, f.offset + f.limit), total: items.length };
}

/** Where the inventory and the settings it is judged against come from. */
export interface InventorySource {
  readonly inventory: Pick<Inventory, "endpoints" | "stats">;
  /** The settings in force in the data plane. */
  readonly compiled: () => CompiledApiSec;
  /** Every stored schema entry, enabled or not (what counts as documented). */
  readonly schemas: () => readonly SchemaEntry[];
}

/** The inventory page as the API and the assistant answer it, with the inventory's counters. */
export function listEndpoints(src: InventorySource, f: EndpointFilter) {
  const compiled = src.compiled();
  return {
    ...queryEndpoints(src.inventory.endpoints(), compiled, src.schemas(), f),
    stats: src.inventory.stats(),
    discovery_enabled: compiled.discovery.enabled,
  };
}
