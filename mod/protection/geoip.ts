/**
 * The GeoIP lookup behind the ACL country condition: a CSV file of `network,country_code`
 * lines loaded into an IP set at start. Without a configured file there is no lookup, and the
 * management API refuses country conditions (a rule that could never match would look like
 * protection without being any).
 */
import type { GeoLookup } from "../../engine/acl.ts";
import { type Cidr, parseCidr } from "../../engine/ip_address.ts";
import { buildIpSet } from "../../engine/ip_set.ts";

const CODE = /^[A-Za-z]{2}$/;

/** Parses the CSV text; lines that are not `network,CC` are skipped and counted. */
export function parseGeoCsv(text: string): { lookup: GeoLookup; entries: number; skipped: number } {
  const entries: Array<readonly [Cidr, string]> = [];
  let skipped = 0;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const [net, cc] = line.split(",").map((s) => s.trim());
    const cidr = net === undefined ? undefined : parseCidr(net);
    if (!cidr || cc === undefined || !CODE.test(cc)) {
      skipped++;
      continue;
    }
    entries.push([cidr, cc.toUpperCase()]);
  }
  const set = buildIpSet(entries);
  return { lookup: { country: (ip) => set.lookup(ip)[0] }, entries: entries.length, skipped };
}

/** Loads the configured file at start-up; throws with the path when it cannot be read. */
export function loadGeoIp(path: string): GeoLookup {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (err) {
    throw new Error(`Cannot read protection.geoip.file "${path}": ${(err as Error).message}`);
  }
  return parseGeoCsv(text).lookup;
}
