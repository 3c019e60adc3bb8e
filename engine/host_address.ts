/**
 * Classification of URL hosts for the SSRF and open-redirect detectors.
 *
 * URL parsers accept far more spellings of an IPv4 address than dotted decimal: one to four
 * parts, each decimal, octal (`0177`) or hex (`0x7f`), with the last part filling the
 * remaining bytes (`127.1`, `2130706433`). Attackers use these spellings to slip internal
 * addresses past deny lists, so hosts are parsed the way `inet_aton` does before judging them.
 */

/** What a host points at, as far as a request forgery is concerned. */
export type HostKind = "metadata" | "loopback" | "private" | "public" | "name";

export interface HostInfo {
  readonly kind: HostKind;
  /** True when a numeric host was not written as plain dotted decimal. */
  readonly obfuscated: boolean;
}

const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata.google.internal",
  "metadata",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.com",
  "metadata.packet.net",
  "metadata.platformequinix.com",
  "metadata.tencentyun.com",
]);
/**
 * The Kubernetes API's in-cluster names, which a pod reaches with its service-account token.
 * Private, not metadata: Argo CD's in-cluster destination is `https://kubernetes.default.svc`,
 * in the body of every application it creates. The detector reads the API's paths behind them.
 */
const KUBERNETES_API_NAMES: ReadonlySet<string> = new Set([
  "kubernetes.default",
  "kubernetes.default.svc",
  "kubernetes.default.svc.cluster.local",
]);
const LOOPBACK_NAMES: ReadonlySet<string> = new Set([
  "localhost",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
  "loopback",
  "0",
  // CRS ssrf-no-scheme.data: distribution aliases and public names that resolve to 127.0.0.1.
  "localhost4",
  "localhost4.localdomain4",
  "ipv6-localhost",
  "localtest.me",
  "lvh.me",
  // Docker Desktop's and Podman's names for the host machine, seen from a container.
  "host.docker.internal",
  "gateway.docker.internal",
  "kubernetes.docker.internal",
  "host.containers.internal",
]);
/** Wildcard DNS services that resolve `10.0.0.1.nip.io` to the embedded address. */
const WILDCARD_DNS =
  /^(?:.*[.-])?(\d{1,3}(?:[.-]\d{1,3}){3})\.(?:nip\.io|xip\.io|sslip\.io|nip\.direct|localtest\.me)$/;
const NUMERIC_PART = /^(?:0x[0-9a-f]*|\d+)$/;

function parsePart(part: string): number {
  if (part.startsWith("0x")) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
  if (part.length > 1 && part.startsWith("0")) {
    return /^[0-7]+$/.test(part) ? parseInt(part, 8) : NaN;
  }
  return parseInt(part, 10);
}

/** Parses an IPv4 host the way `inet_aton` does; undefined when it is not numeric. */
export function parseIpv4(host: string): { value: number; obfuscated: boolean } | undefined {
  const parts = host.split(".");
  if (parts.length > 4) return undefined;
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  for (const p of parts) if (!NUMERIC_PART.test(p)) return undefined;
  const nums = parts.map(parsePart);
  if (nums.some((n) => !Number.isFinite(n))) return undefined;
  let value = 0;
  for (let i = 0; i < nums.length - 1; i++) value = value * 256 + (nums[i]! & 0xff);
  const last = nums[nums.length - 1]!;
  const tailBytes = 5 - nums.length;
  value = value * 256 ** tailBytes + (last % 256 ** tailBytes);
  const plain = parts.length === 4 && parts.every((p) => p === "0" || !p.startsWith("0")) &&
    nums.every((n) => n < 256);
  return { value: value >>> 0, obfuscated: !plain };
}

function classifyV4(v: number): HostKind {
  const a = v >>> 24;
  const b = (v >>> 16) & 0xff;
  // 169.254.169.254 (most clouds), 100.100.100.200 (Alibaba), 192.0.0.192 (Oracle)
  if (v === 0xa9fea9fe || v === 0x646464c8 || v === 0xc00000c0) return "metadata";
  if (a === 127 || v === 0) return "loopback";
  if (a === 10 || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168)) return "private";
  // 169.254.169.0/24 and 169.254.170.0/24 hold the instance services of the clouds (AWS's
  // time and DNS servers, ECS task credentials at 169.254.170.2); the rest is link-local.
  if (a === 169 && b === 254) {
    const c = (v >>> 8) & 0xff;
    return c === 169 || c === 170 ? "metadata" : "private";
  }
  if (a === 100 && b >= 64 && b < 128) return "private";
  return "public";
}

function classifyV6(host: string): HostInfo {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  const zone = h.indexOf("%");
  const addr = zone >= 0 ? h.slice(0, zone) : h;
  const mapped = /^(?:0{0,4}:){0,5}(?::|0{0,4}:)?ffff:(.+)$/.exec(addr) ?? /^::(\d.+)$/.exec(addr);
  if (mapped !== null) {
    const tail = mapped[1]!;
    if (tail.indexOf(".") >= 0) {
      const v4 = parseIpv4(tail);
      if (v4 !== undefined) return { kind: classifyV4(v4.value), obfuscated: true };
    }
    const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(tail);
    if (hex !== null) {
      const v = (parseInt(hex[1]!, 16) << 16 | parseInt(hex[2]!, 16)) >>> 0;
      return { kind: classifyV4(v), obfuscated: true };
    }
  }
  const groups = addr.split(":").filter((g) => g.length > 0);
  if (groups.every((g) => /^0+$/.test(g))) return { kind: "loopback", obfuscated: false };
  if (
    groups.length >= 1 && /^0*1$/.test(groups[groups.length - 1]!) &&
    groups.slice(0, -1).every((g) => /^0+$/.test(g))
  ) {
    return { kind: "loopback", obfuscated: groups.length > 1 };
  }
  if (addr.startsWith("fd00:ec2::254")) return { kind: "metadata", obfuscated: false };
  if (/^f[cd][0-9a-f]{2}:|^fe[89ab][0-9a-f]:/.test(addr)) {
    return { kind: "private", obfuscated: false };
  }
  return { kind: "public", obfuscated: false };
}

/**
 * Classifies a URL host (lower-case, without port and userinfo).
 *
 * @param host the host as written in the URL, IPv6 in brackets
 * @returns what the host points at and whether its spelling is obfuscated
 */
export function classifyHost(host: string): HostInfo {
  if (host.length === 0) return { kind: "name", obfuscated: false };
  if (host.charCodeAt(0) === 91 /* [ */ || host.indexOf(":") >= 0) return classifyV6(host);
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  if (METADATA_NAMES.has(name)) return { kind: "metadata", obfuscated: false };
  if (KUBERNETES_API_NAMES.has(name)) return { kind: "private", obfuscated: false };
  if (LOOPBACK_NAMES.has(name) || name.endsWith(".localhost")) {
    return { kind: "loopback", obfuscated: false };
  }
  const c0 = name.charCodeAt(0);
  if (c0 >= 48 && c0 <= 57) {
    const v4 = parseIpv4(name);
    if (v4 !== undefined) return { kind: classifyV4(v4.value), obfuscated: v4.obfuscated };
    const dns = WILDCARD_DNS.exec(name);
    if (dns !== null) {
      const inner = parseIpv4(dns[1]!.replaceAll("-", "."));
      if (inner !== undefined) return { kind: classifyV4(inner.value), obfuscated: true };
    }
  }
  const dns = name.indexOf(".io") >= 0 || name.indexOf(".me") >= 0 ? WILDCARD_DNS.exec(name) : null;
  if (dns !== null) {
    const inner = parseIpv4(dns[1]!.replaceAll("-", "."));
    if (inner !== undefined) return { kind: classifyV4(inner.value), obfuscated: true };
  }
  return { kind: "name", obfuscated: false };
}

/**
 * True when a URL host (lower-case, without port) is one of the Kubernetes API's in-cluster names.
 *
 * @param host the host as `classifyHost` takes it
 */
export function isKubernetesApi(host: string): boolean {
  return KUBERNETES_API_NAMES.has(host.endsWith(".") ? host.slice(0, -1) : host);
}
