/**
 * The one normalised form of a request path that every path control judges (ACL and custom
 * rules, API-security routes and schemas, route limits, bot and IP-list prefixes, ALAP
 * exceptions, the edge's cache selection and header rules, API discovery): the path the site's
 * upstream will serve, not the bytes the client sent. nginx, Apache, IIS, Tomcat/Spring, Express
 * and Go serve `/x/../admin`, `//admin`, `/./admin`, `/%2e/admin` and `/%2fadmin` as `/admin`;
 * IIS also reads `\` as `/` and `/ADMIN` as `/admin`, Tomcat drops `;params` (`/..;/admin`), and
 * an upstream that decodes twice serves `/%2561dmin` as `/admin`. How the site's upstream reads
 * a path is its `upstream_kind` ({@link READINGS}); `generic`, the default, is the union of them
 * all, so no reading of any kind escapes a rule written for the plain path.
 *
 * A path no reading can make unambiguous carries a {@link PathProblem}: a NUL, an overlong UTF-8
 * form, or an encoded slash together with a dot segment (upstreams that split at `%2f` and those
 * that keep it reach different resources). The data plane refuses those at `balanced`.
 *
 * Percent escapes are decoded by the engine's own decoder ({@link percentDecode}); the fast path
 * (no `%`, `\`, `;`, `//`, `/.`, and nothing to fold) returns the path as it came. Pure: no I/O.
 */
import { hexAt, percentDecode } from "./normalize.ts";
import type { Matcher } from "./re2.ts";

/** How the site's upstream reads paths; see docs/protection.md, "The path the controls judge". */
export const UPSTREAM_KINDS = ["generic", "nginx", "apache", "iis", "java", "node"] as const;
export type UpstreamKind = (typeof UPSTREAM_KINDS)[number];
/** The union of every kind's reading, for a site that names none. */
export const DEFAULT_UPSTREAM_KIND: UpstreamKind = "generic";

/** What one kind of upstream does to a path besides decoding it once and resolving dots. */
export interface PathReading {
  /** Escapes are decoded a second time (`%2561` is `a`). */
  readonly decodeTwice: boolean;
  /** A raw `\` separates segments. */
  readonly backslash: boolean;
  /** An encoded `\` (`%5c`) separates segments too. */
  readonly encodedBackslash: boolean;
  /** A `;` ends a segment's name (`/admin;jsessionid=1`, `/..;/`). */
  readonly pathParams: boolean;
  /** Paths compare case-insensitively. */
  readonly foldCase: boolean;
  /** Compatibility forms fold to their plain letters (NFKC: fullwidth `ａ` is `a`, `／` is `/`). */
  readonly compatibility: boolean;
  /** Trailing dots and spaces of a segment are dropped, as Windows does with file names. */
  readonly trimDots: boolean;
  /** `/p/` is served like `/p`. */
  readonly trailingSlash: boolean;
}

const reading = (on: Partial<PathReading>): PathReading => ({
  decodeTwice: false,
  backslash: false,
  encodedBackslash: false,
  pathParams: false,
  foldCase: false,
  compatibility: false,
  trimDots: false,
  trailingSlash: true,
  ...on,
});

/** Each kind's reading (the table of docs/protection.md). */
export const READINGS: Readonly<Record<UpstreamKind, PathReading>> = {
  generic: reading({
    decodeTwice: true,
    backslash: true,
    encodedBackslash: true,
    pathParams: true,
    foldCase: true,
    compatibility: true,
    trimDots: true,
  }),
  // `proxy_pass` with a URI hands on the decoded path, which the application decodes again.
  nginx: reading({ decodeTwice: true }),
  apache: reading({}),
  iis: reading({
    decodeTwice: true,
    backslash: true,
    encodedBackslash: true,
    foldCase: true,
    compatibility: true,
    trimDots: true,
  }),
  // Tomcat strips `;params`; Spring decodes the servlet path Tomcat decoded.
  java: reading({ decodeTwice: true, pathParams: true }),
  // Express routes case-insensitively; WHATWG URL parsing reads a raw `\` as `/`.
  node: reading({ backslash: true, foldCase: true }),
};

/** Why a path cannot be made unambiguous. */
export type PathProblem = "nul" | "overlong_utf8" | "encoded_slash";

/** One request's path as the site's upstream reads it. */
export class NormalPath {
  #alt: string | null | undefined = undefined;

  constructor(
    /** The normalised path, in the case it was sent. */
    readonly text: string,
    /** What the controls compare: {@link text}, lower-cased where the upstream folds case. */
    readonly key: string,
    /** Whether comparisons fold case (patterns and prefixes compare case-insensitively). */
    readonly fold: boolean,
    /** Whether `/p/` is served like `/p`. */
    readonly trailingSlash: boolean,
    /**
     * True when the path was already in this form but for plain percent-escapes: nothing was
     * resolved, merged, split, stripped or folded. Only such a path may use the edge cache.
     */
    readonly canonical: boolean,
    readonly problem: PathProblem | undefined,
  ) {}

  /** {@link key} without its trailing slash, where the upstream ignores it; else undefined. */
  get alt(): string | undefined {
    if (this.#alt === undefined) {
      const k = this.key;
      this.#alt = this.trailingSlash && k.length > 1 && k.endsWith("/") ? k.slice(0, -1) : null;
    }
    return this.#alt ?? undefined;
  }
}

/**
 * Normalises a raw request path (still percent-encoded, without the query) the way an upstream
 * of `kind` reads it.
 *
 * @example
 * ```ts
 * import { normalizePath } from "./path_normalize.ts";
 * normalizePath("/x/..;/ADMIN/", "java").text; // "/ADMIN/"
 * normalizePath("/%5cAdmin", "iis").key; // "/admin"
 * normalizePath("/x/..%2fadmin", "generic").problem; // "encoded_slash"
 * ```
 */
export function normalizePath(raw: string, kind: UpstreamKind): NormalPath {
  const r = READINGS[kind];
  return plain(raw, r) ? fast(raw, r) : slow(raw, r);
}

/** `s` holds an upper-case letter or a non-ASCII character (which may have a lower case). */
function foldable(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 65 && c <= 90) || c >= 128) return true;
  }
  return false;
}

function fast(raw: string, r: PathReading): NormalPath {
  const key = r.foldCase && foldable(raw) ? raw.toLowerCase() : raw;
  return new NormalPath(raw, key, r.foldCase, r.trailingSlash, true, undefined);
}

/**
 * True when the path has nothing any step would change: no escape, backslash, `;`, NUL, empty
 * or dot segment, and (for kinds that fold compatibility forms or trim dots) no non-ASCII
 * character, trailing dot or space.
 */
function plain(raw: string, r: PathReading): boolean {
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === 37 /* % */ || c === 92 /* \ */ || c === 59 /* ; */ || c === 0) return false;
    if (c === 47 /* / */) {
      const next = raw.charCodeAt(i + 1);
      if (next === 47 || next === 46 /* . */) return false;
    } else if (r.trimDots && (c === 46 || c === 32)) {
      const next = i + 1 < n ? raw.charCodeAt(i + 1) : 47;
      if (next === 47) return false;
    } else if (c >= 128 && r.compatibility) return false;
  }
  return true;
}

/** Counts `/` in `s`. */
function slashes(s: string): number {
  let n = 0;
  for (let i = s.indexOf("/"); i >= 0; i = s.indexOf("/", i + 1)) n++;
  return n;
}

/**
 * True when `s` spells a character in more bytes than UTF-8 allows (`%c0%ae` for `.`,
 * `%e0%80%af` for `/`): a decoder that tolerates it (old IIS, some Java) reads a dot or slash
 * that a strict one does not.
 */
export function hasOverlongUtf8(s: string): boolean {
  for (let i = s.indexOf("%"); i >= 0; i = s.indexOf("%", i + 1)) {
    const b = hexAt(s, i + 1, 2);
    if (b < 0xc0 || s.charCodeAt(i + 3) !== 37) continue;
    const next = hexAt(s, i + 4, 2);
    if (next < 0x80 || next > 0xbf) continue;
    if (b <= 0xc1 || (b === 0xe0 && next <= 0x9f) || (b === 0xf0 && next <= 0x8f)) return true;
  }
  return false;
}

const TRAILING_DOTS = /[. ]+$/;

function slow(raw: string, r: PathReading): NormalPath {
  let problem: PathProblem | undefined;
  let changed = false;
  let s = raw;
  if (r.backslash && s.includes("\\")) {
    s = s.replaceAll("\\", "/");
    changed = true;
  }
  const sentSlashes = slashes(s);
  if (hasOverlongUtf8(s)) problem = "overlong_utf8";
  let text = percentDecode(s);
  if (r.decodeTwice && text.includes("%")) {
    if (hasOverlongUtf8(text)) problem ??= "overlong_utf8";
    const again = percentDecode(text);
    if (again !== text) changed = true;
    text = again;
  }
  if (r.compatibility && foldable(text)) {
    const folded = text.normalize("NFKC");
    if (folded !== text) changed = true;
    text = folded;
  }
  if (r.encodedBackslash && text.includes("\\")) text = text.replaceAll("\\", "/");
  if (text.includes("\0")) problem ??= "nul";
  // A slash that was not one on the wire: upstreams that split there and those that do not
  // reach different paths once a dot segment climbs across it.
  const encodedSlash = slashes(text) > sentSlashes;
  if (encodedSlash) changed = true;

  const parts = text.split("/");
  const out: string[] = [];
  let dots = false;
  let trailing = false;
  for (let i = 0; i < parts.length; i++) {
    let seg = parts[i]!;
    const last = i === parts.length - 1;
    if (r.pathParams) {
      const semi = seg.indexOf(";");
      if (semi >= 0) {
        seg = seg.slice(0, semi);
        changed = true;
      }
    }
    if (r.trimDots && seg !== "." && seg !== ".." && TRAILING_DOTS.test(seg)) {
      const trimmed = seg.replace(TRAILING_DOTS, "");
      if (trimmed !== "") {
        seg = trimmed;
        changed = true;
      }
    }
    if (seg === "" || seg === "." || seg === "..") {
      if (seg === "..") out.pop();
      if (seg !== "") dots = true;
      // The leading empty part is the root, a final one the trailing slash; any other is a
      // merged slash or a resolved dot.
      if (seg !== "" || (i > 0 && !last)) changed = true;
      trailing = i > 0 && last;
      continue;
    }
    out.push(seg);
    trailing = false;
  }
  if (encodedSlash && dots) problem ??= "encoded_slash";
  const joined = "/" + out.join("/");
  const path = trailing && out.length > 0 ? joined + "/" : joined;
  const key = r.foldCase && foldable(path) ? path.toLowerCase() : path;
  return new NormalPath(path, key, r.foldCase, r.trailingSlash, !changed, problem);
}

/** Lower-cases one UTF-16 unit of ASCII; anything else as it is. */
const lowerAscii = (c: number): number => c >= 65 && c <= 90 ? c + 32 : c;

/** `key` (already lower-case) starts with `prefix` compared case-insensitively. */
function startsFolded(key: string, prefix: string): boolean {
  if (prefix.length > key.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    const c = prefix.charCodeAt(i);
    if (c >= 128) return key.startsWith(prefix.toLowerCase());
    if (key.charCodeAt(i) !== lowerAscii(c)) return false;
  }
  return true;
}

/**
 * Whether the path lies under `prefix`: it starts with it, or, where the upstream ignores a
 * trailing slash, it is the prefix without its final `/` (`/admin` under `/admin/`).
 */
export function underPrefix(p: NormalPath, prefix: string): boolean {
  const key = p.key;
  if (p.fold ? startsFolded(key, prefix) : key.startsWith(prefix)) return true;
  if (!p.trailingSlash || prefix.length !== key.length + 1 || !prefix.endsWith("/")) return false;
  return p.fold ? startsFolded(key + "/", prefix) : prefix.startsWith(key);
}

/** `key` is `literal`, compared case-insensitively when `fold`. */
const same = (key: string, literal: string, fold: boolean): boolean =>
  key.length === literal.length && (fold ? startsFolded(key, literal) : key === literal);

/** Whether the path is `literal`, but for a trailing slash the upstream ignores. */
export function pathIs(p: NormalPath, literal: string): boolean {
  const { key, fold } = p;
  if (same(key, literal, fold)) return true;
  if (!p.trailingSlash) return false;
  const alt = p.alt;
  if (alt !== undefined) return same(alt, literal, fold);
  return literal.length === key.length + 1 && literal.endsWith("/") &&
    same(key, literal.slice(0, -1), fold);
}

/**
 * Whether `cased` (or, on a case-folding site, its twin `folded`) matches the path or its form
 * without a trailing slash.
 */
export function testPath(p: NormalPath, cased: Matcher, folded?: Matcher): boolean {
  const m = p.fold && folded !== undefined ? folded : cased;
  if (m.test(p.key)) return true;
  const alt = p.alt;
  return alt !== undefined && m.test(alt);
}
