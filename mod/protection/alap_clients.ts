/**
 * Which clients ALAP may block (docs/protection.md, "Clients ALAP never blocks"). Never:
 * loopback and unspecified addresses (the host itself: blocking 127.0.0.1 locks out local use and
 * every local health check), the management listener's own addresses and its signed-in clients,
 * and any site's trusted proxies (every client behind the proxy would be blocked with it).
 * Private, shared (CGNAT), link-local and unique-local addresses may be proposed for an
 * administrator's review but are never applied on their own: they are usually the operator's
 * own network. Everything else follows the policy.
 */
import type { ClientStanding } from "../../engine/alap.ts";
import { cidrContains, parseCidr, parseIp } from "../../engine/ip_address.ts";

const ranges = (list: readonly string[]) => list.map((c) => parseCidr(c)!);

const NEVER = ranges(["127.0.0.0/8", "0.0.0.0/8", "::1/128", "::/128"]);
const REVIEW_ONLY = ranges([
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10",
  "169.254.0.0/16",
  "fc00::/7",
  "fe80::/10",
]);

export interface ClientRules {
  /** The management listener's own addresses and its recently signed-in clients. */
  readonly management: (ip: string) => boolean;
  /** True when `ip` is a trusted proxy of any site. */
  readonly trustedProxy: (ip: string) => boolean;
}

/** What ALAP may decide about the client `ip`. */
export function clientStanding(ip: string, rules: ClientRules): ClientStanding {
  const addr = parseIp(ip);
  // Not an address: there is nothing a block could match.
  if (!addr) return "exempt";
  if (NEVER.some((c) => cidrContains(c, addr))) return "exempt";
  if (rules.management(ip) || rules.trustedProxy(ip)) return "exempt";
  return REVIEW_ONLY.some((c) => cidrContains(c, addr)) ? "review" : "auto";
}
