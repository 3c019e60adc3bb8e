/**
 * Compiles the protection controls' stored documents into the immutable structures the data
 * plane evaluates: IP sets, ACL and custom rules (RE2 compiled once), bot policies, threat
 * indicators, applied ALAP decisions, edge and block-page settings. Built on every change and
 * swapped with the rest of the policy.
 */
import { createHash } from "node:crypto";
import type { PolicyObjectRow } from "../../db/policy_objects_repo.ts";
import {
  type AclRule,
  compileAcl,
  type CompiledAclRules,
  type GeoLookup,
} from "../../engine/acl.ts";
import {
  compileCustomRules,
  type CompiledCustomRules,
  type CustomRule,
} from "../../engine/custom_rules.ts";
import { type Cidr, parseCidr } from "../../engine/ip_address.ts";
import type { RuleSetHolder } from "../../engine/re2.ts";
import { buildIpSet, type IpSet } from "../../engine/ip_set.ts";
import {
  buildIpList,
  type IpList,
  type IpListItem,
  ipListOf,
  type IpListState,
} from "../../engine/ip_list.ts";
import { type IpListFolder, type IpListUpdater, ipListUpdater } from "./ip_list_updater.ts";
import {
  type AclRuleDoc,
  alapPolicySchema,
  blockPageSchema,
  type BotPolicyDoc,
  type CustomRuleDoc,
  edgeSettingsSchema,
  type HeaderRuleDoc,
  type IpEntryDoc,
  parseStored,
  rateLimitSchema,
  type ThreatFeedDoc,
} from "./protection_schema.ts";
import type {
  AlapPolicyDoc,
  BlockPageDoc,
  EdgeSettingsDoc,
  RateLimitDoc,
} from "./protection_schema.ts";

/** Document kinds in `policy_objects`. */
export const KIND = {
  ip: "ip_entry",
  acl: "acl_rule",
  custom: "custom_rule",
  rateLimit: "rate_limit",
  bot: "bot_policy",
  feed: "threat_feed",
  indicators: "threat_indicators",
  alapPolicy: "alap_policy",
  decision: "alap_decision",
  headerRule: "edge_header_rule",
  edge: "edge_settings",
  blockPage: "block_page",
} as const;

export interface ThreatHit {
  readonly feedId: string;
  readonly feedName: string;
  readonly action: "block" | "challenge" | "log";
}

/** An applied ALAP decision as the data plane enforces it. */
export interface AppliedDecision {
  readonly id: string;
  readonly kind: "temp_block" | "ip_ban" | "signature_block" | "exception";
  readonly siteId: string | null;
  readonly clientIp?: string;
  readonly ruleId?: string;
  readonly pathPrefix?: string;
  readonly expiresAt: number | null;
}

export interface CompiledBotPolicy extends BotPolicyDoc {
  readonly id: string;
}

export interface CompiledProtection {
  readonly ipList: IpList;
  readonly acl: CompiledAclRules;
  readonly threat: IpSet<ThreatHit>;
  /** Most specific first: site policies before global ones, longer path prefixes first. */
  readonly bot: readonly CompiledBotPolicy[];
  readonly rateLimit: RateLimitDoc;
  readonly custom: CompiledCustomRules;
  readonly alapBlocks: IpSet<AppliedDecision>;
  readonly alapSignatures: readonly AppliedDecision[];
  readonly alapExceptions: readonly AppliedDecision[];
  readonly alapPolicy: AlapPolicyDoc;
  readonly headerRules: ReadonlyArray<HeaderRuleDoc & { readonly id: string }>;
  readonly edge: EdgeSettingsDoc;
  readonly blockPage: BlockPageDoc;
  /**
   * Drops this policy's hold on its compiled rule sets (their RE2 expressions are freed once
   * no policy or cache holds them); called when a newer policy has replaced it.
   */
  release(): void;
}

export interface ProtectionSource {
  rows(kind: string): PolicyObjectRow[];
  singleton(kind: string): string | undefined;
  /**
   * The IP list compiled already (by the main thread, for a data-plane worker): used as it is
   * instead of compiling `rows(KIND.ip)`.
   */
  ipList?(): IpListState | undefined;
  /**
   * The ids of the IP entries changed since the last call, or "many" past `limit` (the first
   * call's answer does not matter: the first build reads every row). With {@link ipEntry}, the
   * compiled list is updated by the changed entries instead of compiled again from `rows`.
   */
  ipChanges?(limit: number): readonly string[] | "many";
  /** An IP entry as stored now; undefined when there is none. */
  ipEntry?(id: string): PolicyObjectRow | undefined;
}

function docs<T>(source: ProtectionSource, kind: string): Array<T & { id: string }> {
  return source.rows(kind).map((r) => ({ ...JSON.parse(r.config) as T, id: r.id }));
}

/** A stored IP entry as the list compiles it; undefined for a network that does not parse. */
function ipItem(r: PolicyObjectRow): IpListItem | undefined {
  const d = JSON.parse(r.config) as IpEntryDoc;
  const cidr = parseCidr(d.cidr);
  if (!cidr) return undefined;
  return [cidr, {
    id: r.id,
    action: d.action,
    cidr: d.cidr,
    siteId: d.site_id,
    pathPrefix: d.path_prefix,
    expiresAt: d.expires_at === null ? null : Date.parse(d.expires_at),
  }, { position: r.position, createdAt: r.created_at }];
}

function ipEntries(source: ProtectionSource): IpListItem[] {
  const out: IpListItem[] = [];
  // Not `docs()`: a list can hold 100,000 entries, and its copy of each document adds up.
  for (const r of source.rows(KIND.ip)) {
    const item = ipItem(r);
    if (item) out.push(item);
  }
  return out;
}

/**
 * Changed entries past this share of the list are read with the whole list: one query and no
 * lookup per id (a cluster node's policy replaced, a seeded store).
 */
const RELOAD_SHARE = 4;

interface IndicatorsDoc {
  readonly networks: readonly string[];
}

function threatEntries(source: ProtectionSource): Array<readonly [Cidr, ThreatHit]> {
  const out: Array<readonly [Cidr, ThreatHit]> = [];
  // Indicator rows are `<feed id>:indicators` (ids are unique across kinds).
  const indicators = new Map(
    source.rows(KIND.indicators).map((r) => [r.id.slice(0, r.id.lastIndexOf(":")), r.config]),
  );
  for (const feed of docs<ThreatFeedDoc>(source, KIND.feed)) {
    if (!feed.enabled) continue;
    const stored = indicators.get(feed.id);
    if (!stored) continue;
    const hit: ThreatHit = { feedId: feed.id, feedName: feed.name, action: feed.action };
    for (const text of (JSON.parse(stored) as IndicatorsDoc).networks) {
      const cidr = parseCidr(text);
      if (cidr) out.push([cidr, hit]);
    }
  }
  return out;
}

interface DecisionDoc {
  readonly kind: AppliedDecision["kind"];
  readonly status: string;
  readonly scope: { readonly site_id: string | null };
  readonly target: {
    readonly client_ip?: string;
    readonly rule_id?: string;
    readonly path_prefix?: string;
  };
  readonly expires_at: string | null;
}

function appliedDecisions(source: ProtectionSource): AppliedDecision[] {
  return docs<DecisionDoc>(source, KIND.decision)
    .filter((d) => d.status === "applied")
    .map((d) => ({
      id: d.id,
      kind: d.kind,
      siteId: d.scope.site_id,
      clientIp: d.target.client_ip,
      ruleId: d.target.rule_id,
      pathPrefix: d.target.path_prefix,
      expiresAt: d.expires_at === null ? null : Date.parse(d.expires_at),
    }));
}

/**
 * Part caches: compiling 100,000 indicators or a few hundred RE2 rules again for an unrelated
 * change would waste a rebuild, so each part is reused while its documents are unchanged. A
 * part with RE2 expressions is held by the cache (from its compilation) and by every policy
 * that embeds it; the cache lets go when it replaces the part.
 */
function cached<T>(build: (key: string) => T, drop?: (part: T) => void): (key: string) => T {
  let lastKey: string | undefined;
  let last: T | undefined;
  return (key) => {
    if (key !== lastKey || last === undefined) {
      if (last !== undefined) drop?.(last);
      last = build(key);
      lastKey = key;
    }
    return last;
  };
}

const drop = (part: RuleSetHolder): void => part.release();

/**
 * The documents themselves are the key (timestamps can repeat under a fake or coarse clock),
 * kept as their SHA-256: a big IP list joined is a string of megabytes that would otherwise stay
 * on the heap between builds and bring the next major garbage collection forward.
 */
const keyOf = (source: ProtectionSource, ...kinds: string[]): string => {
  const hash = createHash("sha256");
  for (const k of kinds) {
    // Fed in chunks of about 64 KiB: a call per row (100,000 of them) took up to twice as long.
    let chunk = "";
    for (const r of source.rows(k)) {
      chunk += `${r.id}=${r.position}:${r.config}\n`;
      if (chunk.length >= 65_536) {
        hash.update(chunk);
        chunk = "";
      }
    }
    hash.update(chunk + "\f");
  }
  return hash.digest("hex");
};

const NO_SOURCE: ProtectionSource = { rows: () => [], singleton: () => undefined };

/**
 * A compiler keeping its part caches between builds. `ipFold` folds the IP list's changes into a
 * new base (the server's: off the event loop, `ip_list_fold_thread.ts`; default: in the build).
 */
export function createProtectionCompiler(geo?: GeoLookup, ipFold?: IpListFolder) {
  let source: ProtectionSource = NO_SOURCE;
  const threat = cached(() => buildIpSet(threatEntries(source)));
  const ipList = cached(() => buildIpList(ipEntries(source)));
  let received: { state: IpListState; list: IpList } | undefined;
  let updater: IpListUpdater | undefined;
  const ipListOfSource = (src: ProtectionSource): IpList => {
    const state = src.ipList?.();
    if (state !== undefined) {
      if (received?.state !== state) received = { state, list: ipListOf(state) };
      return received.list;
    }
    const { ipChanges, ipEntry } = src;
    // Without a change feed (tests, benchmarks): compiled again when the rows' digest changes.
    if (ipChanges === undefined || ipEntry === undefined) return ipList(keyOf(src, KIND.ip));
    const changed = ipChanges(Math.max(1024, (updater?.list.size ?? 0) / RELOAD_SHARE));
    // The taken ids are gone from the log: a build that fails half-way (a row that does not
    // parse) must not leave a half-updated list behind, so the next one reads every row.
    const current = updater;
    updater = undefined;
    if (current === undefined || changed === "many") {
      updater = ipListUpdater(ipEntries(src), ipFold);
    } else {
      if (changed.length > 0) {
        current.apply(changed, (id) => {
          const row = ipEntry(id);
          return row && ipItem(row);
        });
      }
      updater = current;
    }
    return updater.list;
  };
  const acl = cached(() =>
    compileAcl(
      docs<AclRuleDoc>(source, KIND.acl).map((d): AclRule => ({
        id: d.id,
        name: d.name,
        siteId: d.site_id,
        enabled: d.enabled,
        action: d.action,
        conditions: d.conditions,
      })),
      geo,
    ), drop);
  const custom = cached(() =>
    compileCustomRules(
      docs<CustomRuleDoc>(source, KIND.custom).map((d): CustomRule => ({
        id: d.id,
        name: d.name,
        siteId: d.site_id,
        target: d.target,
        pattern: d.pattern,
        ignoreCase: d.ignore_case,
        action: d.action,
        priority: d.priority,
        enabled: d.enabled,
      })),
    ), drop);

  return (given: ProtectionSource): CompiledProtection => {
    // Each kind is read once per build: the part keys and the part compilers both read it (a
    // changed list of 100,000 IP entries was read from the store twice). Not kept afterwards.
    const read = new Map<string, PolicyObjectRow[]>();
    const src: ProtectionSource = {
      rows(kind) {
        let rows = read.get(kind);
        if (rows === undefined) read.set(kind, rows = given.rows(kind));
        return rows;
      },
      singleton: (kind) => given.singleton(kind),
      ipList: () => given.ipList?.(),
      ipChanges: given.ipChanges && ((limit) => given.ipChanges!(limit)),
      ipEntry: given.ipEntry && ((id) => given.ipEntry!(id)),
    };
    source = src;
    const decisions = appliedDecisions(src);
    const blocks: Array<readonly [Cidr, AppliedDecision]> = [];
    for (const d of decisions) {
      if ((d.kind === "temp_block" || d.kind === "ip_ban") && d.clientIp) {
        const cidr = parseCidr(d.clientIp);
        if (cidr) blocks.push([cidr, d]);
      }
    }
    const bot = docs<BotPolicyDoc>(src, KIND.bot).sort((a, b) =>
      Number(b.site_id !== null) - Number(a.site_id !== null) ||
      b.path_prefix.length - a.path_prefix.length
    );
    const rules = { acl: acl(keyOf(src, KIND.acl)), custom: custom(keyOf(src, KIND.custom)) };
    rules.acl.retain();
    rules.custom.retain();
    let released = false;
    const ipListPart = ipListOfSource(src);
    const threatPart = threat(keyOf(src, KIND.feed, KIND.indicators));
    source = NO_SOURCE;
    return {
      ipList: ipListPart,
      acl: rules.acl,
      threat: threatPart,
      bot,
      rateLimit: parseStored(rateLimitSchema, src.singleton(KIND.rateLimit)),
      custom: rules.custom,
      alapBlocks: buildIpSet(blocks),
      alapSignatures: decisions.filter((d) => d.kind === "signature_block"),
      alapExceptions: decisions.filter((d) => d.kind === "exception"),
      alapPolicy: parseStored(alapPolicySchema, src.singleton(KIND.alapPolicy)),
      headerRules: docs<HeaderRuleDoc>(src, KIND.headerRule),
      edge: parseStored(edgeSettingsSchema, src.singleton(KIND.edge)),
      blockPage: parseStored(blockPageSchema, src.singleton(KIND.blockPage)),
      release() {
        if (released) return;
        released = true;
        rules.acl.release();
        rules.custom.release();
      },
    };
  };
}
