/**
 * One address against the IP list, for an operator about to block it: the entries whose network
 * holds it, and what kind of address it is (loopback, private, link-local or public), so the
 * console offers "block this address" only where it is not blocked already and warns before
 * blocking an address of its own network (docs/access-logs.md#acting-on-a-record).
 */
import { type Cidr, cidrContains, parseCidr, parseIp } from "../../engine/ip_address.ts";
import type { StoredObject } from "./policy_objects.ts";

export type AddressScope = "loopback" | "private" | "link_local" | "public";

const SCOPES: ReadonlyArray<readonly [AddressScope, Cidr]> = ([
  ["loopback", "127.0.0.0/8"],
  ["loopback", "::1/128"],
  ["private", "10.0.0.0/8"],
  ["private", "172.16.0.0/12"],
  ["private", "192.168.0.0/16"],
  ["private", "100.64.0.0/10"],
  ["private", "fc00::/7"],
  ["link_local", "169.254.0.0/16"],
  ["link_local", "fe80::/10"],
] as const).map(([scope, text]) => [scope, parseCidr(text)!] as const);

export interface IpLookup {
  /** The address as asked. */
  readonly ip: string;
  readonly scope: AddressScope;
  /** The IP-list entries whose network holds the address, as the list answers them. */
  readonly entries: StoredObject[];
}

/** Looks `text` up in `entries`; undefined when it is not an IP address. */
export function lookUpAddress(
  text: string,
  entries: readonly StoredObject[],
): IpLookup | undefined {
  const ip = parseIp(text);
  if (ip === undefined) return undefined;
  const scope = SCOPES.find(([, net]) => cidrContains(net, ip))?.[0] ?? "public";
  const holding = entries.filter((e) => {
    const net = typeof e["cidr"] === "string" ? parseCidr(e["cidr"]) : undefined;
    return net !== undefined && cidrContains(net, ip);
  });
  return { ip: text.trim(), scope, entries: holding };
}
