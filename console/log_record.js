// One attack-log record: what decided (the check, and the IP-list entry, rule, feed or policy
// behind it by name), the actions that fit it (log_actions.js), the request with the matched
// payload marked, the finding, timings and the whole evaluation chain.
import { get } from "./api.js";
import { RecordActions } from "./log_actions.js";
import { Badge, Link, Loading, Table, useApi } from "./components.js";
import { fmtNumber, fmtTime, t, tOr } from "./i18n.js";
import { html, useEffect } from "./lib/ui.js";
import { marked, requestSegments } from "./log_match.js";
import { can } from "./session.js";

const ACTION_KIND = { block: "bad", challenge: "warn", log: "info", pass: "good" };

/** `block` answered 429 is a rate limit, and reads so. */
export const actionOf = (r) => r.action === "block" && r.status === 429 ? "rate_limited" : r.action;

export function ActionBadge({ record }) {
  const action = actionOf(record);
  return html`<${Badge} kind=${ACTION_KIND[record.action] ?? "plain"}>${
    t("logs.action_" + action)
  }</${Badge}>`;
}

/** The chain entry that decided the record's action, if one did. */
function deciding(r) {
  if (r.action === "block" || r.action === "challenge") return r.chain.at(-1) ?? null;
  if (r.action === "log") return r.chain.findLast((c) => c.result === "log") ?? null;
  return null;
}

/** Where a deciding check's rule is kept, and who may read it. */
const RULE_SOURCES = {
  ip_list: { path: "/api/protection/ip-lists/", read: "read:protection", page: "ip-lists" },
  acl: { path: "/api/protection/acl-rules/", read: "read:protection", page: "acl-rules" },
  custom_rule: { path: "/api/rules/custom/", read: "read:rules", page: "custom-rules" },
  threat_intel: {
    path: "/api/threat-intel/feeds/",
    read: "read:threat_intel",
    page: "threat-feeds",
  },
  bot: { path: "/api/protection/bot-policies/", read: "read:protection", page: "bot-policies" },
  alap: { path: "/api/alap/decisions/", read: "read:logs", page: "alap" },
};

/** The rule behind the deciding entry, loaded where the user may read it. */
function useRule(entry) {
  const source = entry?.rule ? RULE_SOURCES[entry.check] : undefined;
  const readable = source !== undefined && can(source.read);
  const state = useApi(readable ? source.path + encodeURIComponent(entry.rule) : null);
  return { source, readable, ...state };
}

/** How the deciding rule is named: what an operator recognises, not only its id. */
function ruleName(check, rule) {
  switch (check) {
    case "ip_list":
      return t("logs.ip_entry", {
        cidr: rule.cidr,
        list: t(rule.action === "allow" ? "logs.allow_list" : "logs.block_list"),
      });
    case "bot":
      return t("logs.bot_policy", { prefix: rule.path_prefix ?? "/" });
    case "alap":
      return t("logs.alap_decision", { reason: rule.reason ?? rule.id });
    default:
      return rule.name ?? rule.id;
  }
}

function Decision({ record, entry, rule }) {
  const check = entry.check;
  const by = check !== "engine"
    ? tOr("logs.by_" + check, t("logs.by_check", { check }))
    : record.finding
    ? t("logs.by_engine", { class: record.finding.class, rule: record.finding.rule })
    : t("logs.by_check", { check });
  const r = rule.data;
  return html`<div id="decision" class="notice">
    <p><strong>${t("logs.decided_" + record.action)}</strong> ${by}</p>
    ${
    r
      ? html`
        <dl class="facts" id="decision-rule">
          <dt>${t("logs.rule")}</dt>
          <dd>
            <${Link} href=${`/console/${rule.source.page}?edit=${
              encodeURIComponent(r.id)
            }`}>${ruleName(check, r)}</${Link}></dd>
                ${r.note
                  ? html`
                    <dt>${t("logs.note")}</dt>
                    <dd id="rule-note">${r.note}</dd>
                  `
                  : null}
                ${r.pattern
                  ? html`
                    <dt>${t("logs.pattern")}</dt>
                    <dd><code>${r.pattern}</code></dd>
                  `
                  : null}
                ${check === "ip_list"
                  ? html`
                    <dt>${t("logs.expires")}</dt>
                    <dd>${r.expires_at ? fmtTime(r.expires_at) : t("logs.never")}</dd>
                  `
                  : null}
                <dt>${t("logs.rule_id")}</dt><dd><code>${r.id}</code></dd>
              </dl>
      `
      : entry.rule && check !== "engine"
      ? html`<p class="muted" id="decision-rule-id">${t("logs.rule")}: <code>${entry.rule}</code> ${
        rule.error?.status === 404
          ? t("logs.rule_gone")
          : rule.source && !rule.readable
          ? t("common.readonly", { permission: rule.source.read })
          : ""
      }</p>`
      : check === "engine"
      ? null
      : html`<p class="muted">${t("logs.result")}: <code>${entry.result}</code></p>`
  }
  </div>`;
}

/** Text segments as text nodes, the marked one in `<mark>`. */
const Marked = ({ segments, id }) =>
  html`<code id=${id}>${
    segments.map((s) => s.mark ? html`<mark class="payload">${s.text}</mark>` : s.text)
  }</code>`;

function Facts({ rows }) {
  return html`<dl class="facts">${
    rows.map(([k, v]) =>
      html`
        <dt>${k}</dt>
        <dd>${v ?? "-"}</dd>
      `
    )
  }</dl>`;
}

function Finding({ finding }) {
  return html`
    <div id="finding">
      <${Facts} rows=${[
        [t("logs.class"), finding.class],
        [t("logs.confidence"), finding.confidence],
        [t("logs.score"), finding.score],
        [t("logs.location"), html`<code>${finding.location}</code>`],
        [t("logs.rule"), html`<code>${finding.rule}</code>`],
      ]} />
      <h3>${t("logs.evidence")}</h3>
      <pre id="evidence">${finding.evidence}</pre>
    </div>
  `;
}

function Body({ r }) {
  const entry = deciding(r);
  const rule = useRule(entry);
  const us = (v) => (v === null || v === undefined ? "-" : `${fmtNumber(Math.round(v))} µs`);
  const request = requestSegments(r);
  const header = request.where.startsWith("header:") ? request.where.slice(7) : "";
  const agent = r.user_agent && header === "user-agent"
    ? html`<${Marked} id="agent-line" segments=${marked(r.user_agent, r.finding.evidence)} />`
    : r.user_agent;
  const sent = `${r.method} ${r.proto}://${r.host}${r.path}${r.query ? "?" + r.query : ""}`;
  return html`<div id="record">
    <h2>${t("logs.trace")} <code class="trace-id">${r.trace_id}</code></h2>
    ${
    entry
      ? html`<${Decision} record=${r} entry=${entry} rule=${rule} />`
      : html`<p class="muted" id="decision">${
        r.finding ? t("logs.passed_below") : t("logs.no_finding")
      }</p>`
  }
    <${RecordActions} record=${r} entry=${entry} rule=${rule} />
    <h2>${t("logs.request")}</h2>
    <p class="wrap"><${Marked} id="request-line" segments=${request.segments} /></p>
    ${
    r.finding && request.where === ""
      ? html`<p class="hint" id="payload-elsewhere">${t("logs.payload_not_stored")}</p>`
      : null
  }
    <div class="grid2">
      <div><${Facts} rows=${[
    [t("logs.time"), fmtTime(r.time)],
    [t("logs.site"), r.site],
    [t("logs.client_ip"), r.client_ip],
    [t("logs.peer_ip"), r.peer_ip],
    [t("logs.as_sent"), html`<code id="request-sent">${sent}</code>`],
    [t("logs.user_agent"), agent],
    [t("logs.action"), html`<${ActionBadge} record=${r} />`],
    [t("logs.class"), r.class ?? "-"],
    [t("logs.status"), r.status],
    [t("logs.upstream"), r.upstream],
    ...(r.inspection
      ? [[
        t("logs.inspection"),
        html`<span id="inspection">${t("logs.inspection_" + r.inspection)}</span>`,
      ]]
      : []),
  ]} /></div>
      <div><h2>${t("logs.timings")}</h2><${Facts} rows=${[
    [t("logs.total"), us(r.latency_us?.total)],
    [t("logs.waf"), us(r.latency_us?.waf)],
    [t("logs.upstream_time"), us(r.latency_us?.upstream)],
    [t("logs.bytes_in"), fmtNumber(r.bytes_in)],
    [t("logs.bytes_out"), fmtNumber(r.bytes_out)],
  ]} /></div>
    </div>
    ${
    r.finding
      ? html`
        <h2>${t("logs.finding")}</h2>
        <${Finding} finding=${r.finding} />
      `
      : null
  }
    <h2>${t("logs.chain")}</h2>
    <${Table} rowKey=${(c) => c.i} rows=${r.chain.map((c, i) => ({ ...c, i }))} columns=${[
    { label: "#", value: (c) => c.i + 1 },
    { label: t("logs.check"), key: "check", className: "mono" },
    { label: t("logs.result"), key: "result" },
    { label: t("logs.rule"), key: "rule", className: "mono" },
    { label: t("logs.took"), value: (c) => us(c.us) },
  ]} />
  </div>`;
}

/**
 * The record of `traceId` (as the URL carries it: the API reads a trace id out of any copied
 * form), its address made the canonical one once found.
 */
export function Record({ traceId }) {
  const rec = useApi("/api/logs/" + encodeURIComponent(traceId));
  const r = rec.data;
  useEffect(() => {
    if (r && r.trace_id !== traceId) {
      history.replaceState(null, "", "/console/logs/" + r.trace_id);
    }
  }, [r]);
  return html`
    <p>
      <${Link} href="/console/logs">${t("logs.back")}</${Link}></p>
    <${Loading} state=${rec} />
    ${r ? html`<${Body} r=${r} />` : null}
  `;
}

/** Whether `text` names a record: resolves with its trace id, or "" (and why) when not. */
export async function findTrace(text) {
  try {
    return { id: (await get("/api/logs/" + encodeURIComponent(text.trim()))).trace_id };
  } catch (err) {
    return { id: "", why: err.status === 404 ? "logs.trace_unknown" : "logs.trace_invalid" };
  }
}
