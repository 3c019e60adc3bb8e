/**
 * The key a connection counts under for `max_connections_per_client`: an IPv4 address as it is,
 * an IPv6 address by its /64 (one subscriber or LAN: a host picks any of its 2^64 addresses at
 * will, so the exact address would cap nothing). Addresses are read with the engine's one IP
 * parser.
 */
import { formatCidr, maskWords, parseIp } from "../engine/ip_address.ts";

/** An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as the plain IPv4 it is. */
export function plainAddress(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/**
 * `address`'s per-client key: IPv4 (mapped ones included) as the address, IPv6 as its /64 in
 * canonical form (`2001:db8:0:1:0:0:0:0/64`); anything unparsable as it is.
 */
export function clientKey(address: string): string {
  const plain = plainAddress(address);
  if (!plain.includes(":")) return plain;
  const ip = parseIp(plain);
  if (ip === undefined) return plain;
  if (ip.version === 4) return formatCidr({ ...ip, prefix: 32 }).slice(0, -3);
  return formatCidr({ version: 6, words: maskWords(ip.words, 64), prefix: 64 });
}
