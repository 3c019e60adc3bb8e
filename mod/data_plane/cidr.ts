/**
 * IP addresses and CIDR ranges as numbers, so a trusted-proxy check on the request path is a
 * few integer comparisons instead of string or regex work. IPv4 addresses are matched as
 * IPv4-mapped IPv6 (`::ffff:a.b.c.d`), so `10.0.0.0/8` also matches `::ffff:10.1.2.3`.
 */

/** A parsed range: the 128-bit network as a bigint and its prefix length. */
interface Range {
  readonly network: bigint;
  readonly prefix: number;
}

const V4_MAPPED = 0xffff_0000_0000n;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseV4(text: string): bigint | undefined {
  const m = IPV4.exec(text);
  if (!m) return undefined;
  let n = 0n;
  for (let i = 1; i <= 4; i++) {
    const octet = Number(m[i]);
    if (octet > 255) return undefined;
    n = (n << 8n) | BigInt(octet);
  }
  return n;
}

function parseV6(text: string): bigint | undefined {
  let body = text;
  let tail: bigint | undefined;
  const lastColon = body.lastIndexOf(":");
  if (lastColon >= 0 && body.includes(".", lastColon)) {
    tail = parseV4(body.slice(lastColon + 1));
    if (tail === undefined) return undefined;
    body = body.slice(0, lastColon + 1) + "0:0";
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  let n = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail !== undefined) n = (n & ~0xffff_ffffn) | tail;
  return n;
}

/** An address as a 128-bit number (IPv4 as IPv4-mapped IPv6); undefined when malformed. */
export function parseIp(text: string): bigint | undefined {
  let t = text;
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  const zone = t.indexOf("%");
  if (zone >= 0) t = t.slice(0, zone);
  const v4 = parseV4(t);
  if (v4 !== undefined) return V4_MAPPED | v4;
  return t.includes(":") ? parseV6(t) : undefined;
}

/** Parses `a.b.c.d/n`, `v6/n` or a bare address; undefined when malformed. */
export function parseCidr(text: string): Range | undefined {
  const slash = text.indexOf("/");
  const addr = slash >= 0 ? text.slice(0, slash) : text;
  const isV4 = parseV4(addr) !== undefined;
  const ip = parseIp(addr);
  if (ip === undefined) return undefined;
  const max = isV4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max) return undefined;
    prefix = Number(p);
  }
  const bits = isV4 ? 96 + prefix : prefix;
  const mask = bits === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - bits)) - 1n);
  return { network: ip & mask, prefix: bits };
}

/** A compiled set of ranges answering "is this address inside any of them". */
export interface CidrSet {
  has(ip: string): boolean;
  readonly size: number;
}

/** Compiles ranges once; lookups cache their answers per address text (bounded). */
export function compileCidrs(ranges: readonly string[]): CidrSet {
  const parsed: Array<{ network: bigint; mask: bigint }> = [];
  for (const r of ranges) {
    const range = parseCidr(r);
    if (!range) throw new Error(`Invalid CIDR range: "${r}"`);
    const mask = range.prefix === 0
      ? 0n
      : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - range.prefix)) - 1n);
    parsed.push({ network: range.network, mask });
  }
  // Peers repeat (a proxy in front keeps calling from the same few addresses), so the answer
  // per address text is cached; the cache is cleared when it grows past a bound.
  const cache = new Map<string, boolean>();
  return {
    size: parsed.length,
    has(ip: string): boolean {
      if (parsed.length === 0) return false;
      const known = cache.get(ip);
      if (known !== undefined) return known;
      const n = parseIp(ip);
      const inside = n !== undefined && parsed.some((r) => (n & r.mask) === r.network);
      if (cache.size >= 4096) cache.clear();
      cache.set(ip, inside);
      return inside;
    },
  };
}
