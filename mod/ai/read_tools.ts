/**
 * The read tools: each answers from the same services the management API reads, and only
 * with what the asking user may see (a section needing a permission they lack is left out and
 * named in `withheld`). They run at once and change nothing.
 */
import type { TopEntry } from "../../db/access_log_queries.ts";
import { listEndpoints } from "../apisec/endpoints_query.ts";
import { cidrContains, parseCidr, parseIp } from "../../engine/ip_address.ts";
import { AppError, badRequest } from "../core/errors.ts";
import { grants } from "../identity/permissions.ts";
import { KIND } from "../protection/protection_compile.ts";
import type { StoredObject } from "../protection/policy_objects.ts";
import type { ToolArgs } from "./tool_catalog.ts";
import { type Asker, findSite, type ToolServices } from "./tools.ts";

const HOUR = 3_600_000;
/** Items per list in a tool result; the total says how many there were. */
const LIST_LIMIT = 50;

function period(s: ToolServices, a: { hours?: number; from?: string; to?: string }) {
  const to = a.to === undefined ? s.clock.now() : Date.parse(a.to);
  const from = a.from === undefined ? to - (a.hours ?? 24) * HOUR : Date.parse(a.from);
  if (from > to) throw badRequest('Invalid field "from": after "to"');
  return { from, to };
}

function siteFilter(s: ToolServices, site: string | undefined) {
  return site === undefined ? undefined : findSite(s.sites, site);
}

const iso = (ms: number) => new Date(ms).toISOString();

function capped(items: readonly StoredObject[]) {
  return { total: items.length, items: items.slice(0, LIST_LIMIT) };
}

export function readTools(s: ToolServices) {
  return {
    async explain_access_log(a: ToolArgs<"explain_access_log">) {
      const { row, source, partial } = await s.accessLog.lookup(a.trace_id);
      if (!row) {
        throw new AppError(404, "NOT_FOUND", `No access-log record for "${a.trace_id}"`, {
          details: { source, partial },
        });
      }
      return { record: { ...JSON.parse(row.record), time: iso(row.time) }, source, partial };
    },

    async summarize_attacks(a: ToolArgs<"summarize_attacks">) {
      const { from, to } = period(s, a);
      const site = siteFilter(s, a.site);
      const counts = await s.accessLog.counts({ from, to, site: site?.id });
      return {
        from: iso(from),
        to: iso(to),
        site: site ? { id: site.id, name: site.name } : null,
        total_requests: counts.total,
        by_action: counts.by_action,
        by_attack_class: counts.by_class,
        source: counts.source,
        partial: counts.partial,
      };
    },

    async top_attackers(a: ToolArgs<"top_attackers">) {
      const { from, to } = period(s, a);
      const site = siteFilter(s, a.site);
      const f = { from, to, site: site?.id };
      const limit = a.limit ?? 10;
      const shape = (rows: TopEntry[], key: string) =>
        rows.map((r) => ({
          [key]: r.key,
          requests: r.requests,
          blocked: r.blocked,
          attack_classes: r.classes ? r.classes.split(",") : [],
          first_seen: iso(r.first_seen),
          last_seen: iso(r.last_seen),
        }));
      const addresses = await s.accessLog.top("client_ip", f, limit);
      const paths = await s.accessLog.top("path", f, limit);
      return {
        from: iso(from),
        to: iso(to),
        site: site ? { id: site.id, name: site.name } : null,
        addresses: shape(addresses.items, "client_ip"),
        paths: shape(paths.items, "path"),
        // Local when either list was read from this controller's records only.
        ...(addresses.source === "local" || paths.source === "local"
          ? { source: "local", partial: addresses.partial || paths.partial }
          : { source: "deployment", partial: false }),
      };
    },

    describe_site_protection(a: ToolArgs<"describe_site_protection">, asker: Asker) {
      const site = findSite(s.sites, a.site);
      const applies = (o: StoredObject) => o["site_id"] === null || o["site_id"] === site.id;
      const out: Record<string, unknown> = {
        site: {
          id: site.id,
          name: site.name,
          hosts: site.hosts,
          mode: site.mode,
          level: site.level,
          upstreams: site.upstreams,
          https: site.tls !== null,
          trusted_proxies: site.trusted_proxies,
        },
      };
      const withheld: string[] = [];
      const section = (name: string, permission: string, kind: string) => {
        if (grants(asker.permissions, permission)) {
          out[name] = capped(s.objects.list(kind).filter(applies));
        } else withheld.push(`${name} (needs ${permission})`);
      };
      section("ip_lists", "read:protection", KIND.ip);
      section("acl_rules", "read:protection", KIND.acl);
      section("bot_policies", "read:protection", KIND.bot);
      section("custom_rules", "read:rules", KIND.custom);
      if (withheld.length > 0) out["withheld"] = withheld;
      return out;
    },

    lookup_ip(a: ToolArgs<"lookup_ip">, asker: Asker) {
      const ip = parseIp(a.ip);
      if (!ip) {
        throw new AppError(
          400,
          "BAD_REQUEST",
          'Invalid field "ip": expected an IPv4 or IPv6 address',
        );
      }
      const hits = s.protection()?.threat.lookupText(a.ip) ?? [];
      const feeds = [...new Map(hits.map((h) => [h.feedId, h])).values()]
        .map((h) => ({ id: h.feedId, name: h.feedName, action: h.action }));
      const out: Record<string, unknown> = { ip: a.ip, threat_feeds: feeds };
      if (grants(asker.permissions, "read:protection")) {
        out["ip_list_entries"] = s.objects.list(KIND.ip).filter((e) => {
          const cidr = parseCidr(String(e["cidr"]));
          return cidr !== undefined && cidrContains(cidr, ip);
        }).slice(0, LIST_LIMIT);
      } else out["withheld"] = ["ip_list_entries (needs read:protection)"];
      return out;
    },

    list_api_inventory(a: ToolArgs<"list_api_inventory">) {
      const site = siteFilter(s, a.site);
      const page = listEndpoints(s.apisec, {
        siteId: site?.id,
        method: a.method?.toUpperCase(),
        q: a.q,
        shadow: a.shadow,
        covered: a.covered,
        limit: a.limit ?? 20,
        offset: 0,
      });
      const names = new Map(s.sites.list().map((x) => [x.id, x.name]));
      return {
        discovery_enabled: page.discovery_enabled,
        note: "hits count sampled requests (discovery samples up to sample_limit per minute)",
        total: page.total,
        endpoints: page.items.map(({ first_seen, last_seen, ...e }) => ({
          ...e,
          site: names.get(e.site_id) ?? e.site_id,
          first_seen: iso(first_seen),
          last_seen: iso(last_seen),
        })),
      };
    },
  };
}
