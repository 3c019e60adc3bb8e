/**
 * The high-risk tools. Planning one validates the exact change with the same schemas as the
 * management API and describes it for the approver; nothing changes. Applying an approved
 * change calls the same service the API calls (so it is validated again, audited, and swapped
 * into the data plane's policy at once).
 */
import { parseCidr } from "../../engine/ip_address.ts";
import type { AuditEvent } from "../core/audit.ts";
import { AppError } from "../core/errors.ts";
import { siteInputSchema } from "../data_plane/site_schema.ts";
import { KIND } from "../protection/protection_compile.ts";
import { customRuleSchema, ipEntrySchema } from "../protection/protection_schema.ts";
import type { ToolArgs, ToolName } from "./tool_catalog.ts";
import { findSite, parseWith as parse, type ToolServices } from "./tools.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface PlannedChange {
  /** One line for the approver, with any warning. */
  readonly summary: string;
  /** The exact change, as stored in the approval request. */
  readonly change: Record<string, unknown>;
}

export interface AppliedChange {
  /** Id of what was created or changed. */
  readonly target: string;
  readonly object: unknown;
}

/** A warning for networks wide enough to cut off a large part of the Internet. */
function breadth(cidr: string): string {
  const c = parseCidr(cidr);
  if (!c) return "";
  if (c.prefix === 0) {
    return ` WARNING: this covers every IPv${c.version} address and would block all traffic.`;
  }
  const wide = c.version === 4 ? c.prefix < 16 : c.prefix < 32;
  return wide ? ` Warning: /${c.prefix} is a very wide network.` : "";
}

const siteLabel = (s: { name: string } | undefined) => s ? `site "${s.name}"` : "every site";

function planBlockIp(s: ToolServices, a: ToolArgs<"block_ip">): PlannedChange {
  const site = a.site === undefined ? undefined : findSite(s.sites, a.site);
  const entry = parse(ipEntrySchema, {
    action: "block",
    cidr: a.cidr,
    site_id: site?.id ?? null,
    path_prefix: a.path_prefix ?? null,
    note: `AI assistant: ${a.reason}`.slice(0, 500),
  });
  const scope = a.path_prefix ? ` for paths under "${a.path_prefix}"` : "";
  const until = a.expires_in_minutes
    ? `for ${a.expires_in_minutes} minutes after approval`
    : "until removed";
  return {
    summary: `Block ${entry.cidr} on ${siteLabel(site)}${scope}, ${until}: ${a.reason}.${
      breadth(entry.cidr)
    }`,
    change: { entry, expires_in_minutes: a.expires_in_minutes ?? null, reason: a.reason },
  };
}

function planCustomRule(s: ToolServices, a: ToolArgs<"add_custom_rule">): PlannedChange {
  const site = a.site === undefined ? undefined : findSite(s.sites, a.site);
  const rule = parse(customRuleSchema, {
    name: a.name,
    site_id: site?.id ?? null,
    target: a.target,
    pattern: a.pattern,
    ignore_case: a.ignore_case ?? false,
    action: a.action,
  });
  return {
    summary: `Add custom rule "${rule.name}" on ${
      siteLabel(site)
    }: ${rule.action} when ${rule.target.kind} matches /${rule.pattern}/${
      rule.ignore_case ? "i" : ""
    }: ${a.reason}.`,
    change: { rule, reason: a.reason },
  };
}

function planSiteProtection(s: ToolServices, a: ToolArgs<"set_site_protection">): PlannedChange {
  const site = findSite(s.sites, a.site);
  const mode = a.mode !== undefined && a.mode !== site.mode
    ? { from: site.mode, to: a.mode }
    : undefined;
  const level = a.level !== undefined && a.level !== site.level
    ? { from: site.level, to: a.level }
    : undefined;
  if (!mode && !level) {
    throw new AppError(409, "CONFLICT", `Site "${site.name}" already has that mode and level`);
  }
  const parts = [
    mode ? `mode ${mode.from} -> ${mode.to}` : "",
    level ? `level ${level.from} -> ${level.to}` : "",
  ].filter(Boolean).join(", ");
  const off = mode?.to === "off" || mode?.to === "monitor"
    ? ` Warning: in ${mode.to} mode the site blocks no attack.`
    : "";
  return {
    summary: `Change site "${site.name}": ${parts}: ${a.reason}.${off}`,
    change: {
      site_id: site.id,
      site_name: site.name,
      ...(mode ? { mode } : {}),
      ...(level ? { level } : {}),
      reason: a.reason,
    },
  };
}

async function planAlapException(
  s: ToolServices,
  a: ToolArgs<"add_alap_exception">,
): Promise<PlannedChange> {
  const row = await s.accessLog.get(a.trace_id);
  if (!row) throw new AppError(404, "NOT_FOUND", `No access-log record for "${a.trace_id}"`);
  const rec = JSON.parse(row.record) as {
    site_id: string | null;
    site: string | null;
    finding: { rule: string } | null;
  };
  if (!rec.site_id || !rec.finding) {
    throw new AppError(
      409,
      "CONFLICT",
      `Request "${a.trace_id}" has no engine finding to except`,
    );
  }
  const scope = a.path_prefix ? ` for paths under "${a.path_prefix}"` : "";
  return {
    summary: `Add an ALAP exception: rule "${rec.finding.rule}" no longer blocks on site "${
      rec.site ?? rec.site_id
    }"${scope} (false positive ${a.trace_id}): ${a.reason}.`,
    change: {
      trace_id: a.trace_id,
      path_prefix: a.path_prefix ?? null,
      site_id: rec.site_id,
      rule: rec.finding.rule,
      reason: a.reason,
    },
  };
}

/** How each change tool describes its call for the approver (validated, nothing changes). */
const PLANS = {
  block_ip: planBlockIp,
  add_custom_rule: planCustomRule,
  set_site_protection: planSiteProtection,
  add_alap_exception: planAlapException,
};

type Planner = (s: ToolServices, a: unknown) => PlannedChange | Promise<PlannedChange>;
type Applier = (
  s: ToolServices,
  change: Record<string, unknown>,
  ctx: AuditContext,
) => Promise<AppliedChange>;

/** How each change tool applies an approved change, through the API's own service. */
const APPLIERS: Record<string, Applier> = {
  block_ip(s, c, ctx) {
    const minutes = c["expires_in_minutes"] as number | null;
    const entry = parse(ipEntrySchema, {
      ...(c["entry"] as Record<string, unknown>),
      expires_at: minutes ? new Date(s.clock.now() + minutes * 60_000).toISOString() : null,
    });
    const item = s.objects.create({ kind: KIND.ip, audit: "protection.ip_entry" }, entry, ctx);
    return Promise.resolve({ target: item.id, object: item });
  },
  add_custom_rule(s, c, ctx) {
    const rule = parse(customRuleSchema, c["rule"]);
    const item = s.objects.create({ kind: KIND.custom, audit: "rules.custom" }, rule, ctx);
    return Promise.resolve({ target: item.id, object: item });
  },
  set_site_protection(s, c, ctx) {
    const id = String(c["site_id"]);
    const { id: _id, created_at: _c, updated_at: _u, ...current } = s.sites.get(id);
    const mode = c["mode"] as { to: string } | undefined;
    const level = c["level"] as { to: string } | undefined;
    const config = parse(siteInputSchema, {
      ...current,
      mode: mode?.to ?? current.mode,
      level: level?.to ?? current.level,
    });
    const site = s.sites.update(id, config, ctx);
    return Promise.resolve({ target: id, object: { id, mode: site.mode, level: site.level } });
  },
  async add_alap_exception(s, c, ctx) {
    const prefix = c["path_prefix"] as string | null;
    const proposed = await s.alap.falsePositive(String(c["trace_id"]), prefix ?? undefined, ctx);
    const applied = s.alap.review(proposed.id, "approve", ctx);
    return { target: applied.id, object: applied };
  },
};

/** The change tools (what `changeTools` returns). */
export interface ChangeTools {
  /** Validates and describes the change a high-risk tool call asks for; changes nothing. */
  plan(name: ToolName, args: unknown): PlannedChange | Promise<PlannedChange>;
  /** Applies an approved change through the API's own service. */
  apply(
    tool: string,
    change: Record<string, unknown>,
    ctx: AuditContext,
  ): Promise<AppliedChange>;
}

/** The change tools over `s`; their functions need no `this`, so they can be passed along. */
export function changeTools(s: ToolServices): ChangeTools {
  return {
    plan(name, args) {
      const plan = (PLANS as Record<string, Planner>)[name];
      if (!plan) {
        throw new AppError(400, "AI_TOOL_UNAVAILABLE", `Tool "${name}" is not a change tool`);
      }
      return plan(s, args);
    },
    apply(tool, change, ctx) {
      const apply = APPLIERS[tool];
      if (!apply) throw new AppError(409, "CONFLICT", `Unknown change tool "${tool}"`);
      return apply(s, change, ctx);
    },
  };
}
