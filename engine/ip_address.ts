/**
 * IPv4/IPv6 address and CIDR parsing into fixed-width words, shared by the IP set, the ACL
 * and the threat-intelligence parsers. An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, which
 * dual-stack listeners report) is folded to IPv4 so one list entry matches both spellings.
 */

/** An address as 32-bit words: one word for IPv4, four (most significant first) for IPv6. */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly words: readonly number[];
}

/** A network: the address with host bits cleared, and its prefix length. */
export interface Cidr {
  readonly version: 4 | 6;
  readonly words: readonly number[];
  readonly prefix: number;
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/**
 * Dotted-quad IPv4 in one pass over the characters: four decimal parts of 0-255, no leading
 * zeros (`010` is octal to some parsers, so it is refused rather than guessed).
 */
function parseV4(text: string): number | undefined {
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || ++dots > 3) return undefined;
      n = n * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits === 1 && part === 0) return undefined;
      part = part * 10 + c - 48;
      if (++digits > 3 || part > 255) return undefined;
    } else return undefined;
  }
  if (digits === 0 || dots !== 3) return undefined;
  return (n * 256 + part) >>> 0;
}

function parseV6Groups(text: string): number[] | undefined {
  if (text.length === 0) return [];
  const groups: number[] = [];
  const parts = text.split(":");
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (i === parts.length - 1 && p.includes(".")) {
      const v4 = parseV4(p);
      if (v4 === undefined) return undefined;
      groups.push(v4 >>> 16, v4 & 0xffff);
    } else if (HEX_GROUP.test(p)) {
      groups.push(parseInt(p, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

function parseV6(text: string): number[] | undefined {
  const zone = text.indexOf("%");
  const body = zone >= 0 ? text.slice(0, zone) : text;
  const gap = body.indexOf("::");
  let groups: number[] | undefined;
  if (gap < 0) {
    groups = parseV6Groups(body);
    if (groups?.length !== 8) return undefined;
  } else {
    if (body.indexOf("::", gap + 1) >= 0) return undefined;
    const head = parseV6Groups(body.slice(0, gap));
    const tail = parseV6Groups(body.slice(gap + 2));
    if (!head || !tail || head.length + tail.length > 7) return undefined;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  const words: number[] = [];
  for (let i = 0; i < 8; i += 2) words.push(((groups[i]! << 16) | groups[i + 1]!) >>> 0);
  return words;
}

/** Parses an IPv4 or IPv6 address (brackets and a zone id are accepted); undefined if invalid. */
export function parseIp(text: string): IpAddress | undefined {
  let t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  if (!t.includes(":")) {
    const v4 = parseV4(t);
    return v4 === undefined ? undefined : { version: 4, words: [v4] };
  }
  const words = parseV6(t);
  if (!words) return undefined;
  if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff) {
    return { version: 4, words: [words[3]!] };
  }
  return { version: 6, words };
}

/** Clears the bits past `prefix` in a copy of `words`. */
export function maskWords(words: readonly number[], prefix: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < words.length; i++) {
    const keep = Math.min(32, Math.max(0, prefix - i * 32));
    const mask = keep === 0 ? 0 : keep === 32 ? 0xffffffff : (0xffffffff << (32 - keep)) >>> 0;
    out.push((words[i]! & mask) >>> 0);
  }
  return out;
}

/**
 * Parses `addr` or `addr/prefix`. Host bits past the prefix are cleared (so `10.1.2.3/8` is
 * `10.0.0.0/8`); a bare address is a /32 or /128.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf("/");
  const addrText = slash < 0 ? text : text.slice(0, slash);
  const ip = parseIp(addrText);
  if (!ip) return undefined;
  const max = ip.version === 4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1).trim();
    if (!/^\d{1,3}$/.test(p)) return undefined;
    prefix = Number(p);
    // A mapped IPv6 prefix such as ::ffff:10.0.0.0/104 counts its 96 leading bits.
    if (ip.version === 4 && addrText.includes(":")) prefix -= 96;
    if (prefix < 0 || prefix > max) return undefined;
  }
  return { version: ip.version, words: maskWords(ip.words, prefix), prefix };
}

/** True when `ip` lies inside `cidr`. */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.version !== ip.version) return false;
  const masked = maskWords(ip.words, cidr.prefix);
  for (let i = 0; i < masked.length; i++) if (masked[i] !== cidr.words[i]) return false;
  return true;
}

/** Canonical text of a network, e.g. `10.0.0.0/8` or `2001:db8:0:0:0:0:0:0/32`. */
export function formatCidr(cidr: Cidr): string {
  if (cidr.version === 4) {
    const n = cidr.words[0]!;
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/${cidr.prefix}`;
  }
  const groups: string[] = [];
  for (const w of cidr.words) groups.push((w >>> 16).toString(16), (w & 0xffff).toString(16));
  return `${groups.join(":")}/${cidr.prefix}`;
}
