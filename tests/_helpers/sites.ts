/** Site fixtures: a valid site input with overrides, parsed exactly as the API parses it. */
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
