/**
 * What a site is: the zod schema the API validates against and the stored shape. A bad site is
 * refused at the edge with the failing field named; the service and the compiler trust it.
 */
import { z } from "zod";
import { DEFAULT_UPSTREAM_KIND, UPSTREAM_KINDS } from "../../engine/path_normalize.ts";
import { isCidr } from "./trusted_proxies.ts";

/** A DNS name: lower-case labels of letters, digits and hyphens. */
const HOST_NAME =
  /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** `example.com`, `*.example.com`, or an IP literal (`127.0.0.1`, `[::1]`). */
function validHost(value: string): boolean {
  const name = value.startsWith("*.") ? value.slice(2) : value;
  if (value.startsWith("*.") && !name.includes(".") && name !== "localhost") return false;
  return HOST_NAME.test(name) || (value.startsWith("[") && value.endsWith("]"));
}

const host = z.string().transform((v) => v.toLowerCase().replace(/\.$/, "")).refine(validHost, {
  message: 'expected a host name such as "example.com" or a wildcard such as "*.example.com"',
});

const upstream = z.string().refine((v) => {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.username === "" &&
      u.password === "" && (u.pathname === "/" || u.pathname === "") && u.search === "" &&
      u.hash === "" && !v.endsWith("?") && !v.endsWith("#");
  } catch {
    return false;
  }
}, { message: 'expected an http(s) origin such as "http://10.0.0.5:8080" (no path or query)' })
  .transform((v) => new URL(v).origin);

/** One origin as a site's `upstreams` accepts it (the console's upstream check takes the same). */
export const siteUpstream = upstream;

const cidr = z.string().refine(isCidr, {
  message: 'expected an IP address or CIDR range such as "10.0.0.0/8" or "2001:db8::/32"',
});

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/;
const PEM_KEY =
  /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]+-----END (?:[A-Z]+ )?PRIVATE KEY-----/;

const MIB = 1024 * 1024;

/** The request body of `POST /api/sites` and `PUT /api/sites/{id}`. */
export const siteInputSchema = z.strictObject({
  name: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/,
    "expected 1-64 characters: letters, digits, space, '.', '_' or '-', starting with a letter or digit",
  ),
  hosts: z.array(host).min(1, "expected at least one host name").max(100),
  upstreams: z.array(upstream).min(1, "expected at least one upstream URL").max(32),
  mode: z.enum(["block", "monitor", "off"]).default("block"),
  level: z.enum(["low", "balanced", "strict"]).default("balanced"),
  /**
   * How the site's upstream reads a path, so the path controls judge the path it will serve
   * (`engine/path_normalize.ts`); `generic` is the union of every kind's reading.
   */
  upstream_kind: z.enum(UPSTREAM_KINDS).default(DEFAULT_UPSTREAM_KIND),
  tls: z.strictObject({
    cert: z.string().regex(PEM_CERT, "expected a PEM certificate (chain)"),
    /** Omitted on update: keep the stored key. */
    key: z.string().regex(PEM_KEY, "expected a PEM private key").optional(),
  }).nullable().default(null),
  /** Largest request body accepted; larger ones get 413 before reaching the upstream. */
  max_body_bytes: z.number().int().min(0).max(4096 * MIB).default(10 * MIB),
  /**
   * How much of the body the engine reads whole, as one document (held in memory); the rest is
   * judged in windows as it streams to the upstream (docs/protection.md, "Request bodies").
   */
  inspect_body_bytes: z.number().int().min(0).max(16 * MIB).default(MIB),
  /**
   * What happens to a body past what the engine judges (32 MiB, or its decoded text past
   * `max_body_bytes`): `block` (413), `log` (a finding, passed), `pass`; null for the level's
   * default (strict: block; balanced: block a decoded body, log a plain one; low: log).
   */
  oversize_action: z.enum(["block", "log", "pass"]).nullable().default(null),
  timeouts: z.strictObject({
    /** Deadline for opening a TCP connection to an upstream that has no pooled connection. */
    connect_ms: z.number().int().min(1).max(600_000).default(5_000),
    /** Deadline for the upstream's response headers once the request is sent. */
    response_ms: z.number().int().min(1).max(3_600_000).default(60_000),
  }).prefault({}),
  /** Peers whose X-Forwarded-For / Forwarded headers are believed for the client address. */
  trusted_proxies: z.array(cidr).max(256).default([]),
});

export type SiteInput = z.input<typeof siteInputSchema>;
export type SiteConfig = z.output<typeof siteInputSchema>;

/** A stored site with its key always present (after an update merge). */
export interface Site extends Omit<SiteConfig, "tls"> {
  readonly id: string;
  readonly tls: { readonly cert: string; readonly key: string } | null;
  readonly created_at: number;
  readonly updated_at: number;
}

/** The stored row's shape, as `db/sites_repo.ts` returns it. */
export interface StoredSiteRow {
  readonly id: string;
  readonly name: string;
  readonly config: string;
  readonly created_at: number;
  readonly updated_at: number;
}

/** Rebuilds a site from its row; fields added later get their defaults from the schema. */
export function siteFromRow(row: StoredSiteRow): Site {
  const stored = JSON.parse(row.config) as Record<string, unknown>;
  const parsed = siteInputSchema.parse({ ...stored, name: row.name });
  const tls = stored["tls"] as { cert: string; key: string } | null | undefined;
  return {
    ...parsed,
    id: row.id,
    tls: tls ?? null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
