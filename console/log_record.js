// One attack-log record: the request with the matched payload marked, what decided (the check,
// and the IP-list entry, rule, feed or policy behind it by name), the finding, timings and the
// whole evaluation chain, and only the actions that fit the record: an ALAP exception for an
// engine finding, editing or disabling a custom rule, blocking an address that is not blocked
// already (with a warning first for a loopback or private one).
import { get, post, put } from "./api.js";
import {
  Badge,
  ConfirmButton,
  Done,
  ErrorBox,
  Link,
  Loading,
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
} from "./components.js";
import { fmtNumber, fmtTime, t, tOr } from "./i18n.js";
import { html, useEffect } from "./lib/ui.js";
import { marked, requestSegments } from "./log_match.js";
import { can } from "./session.js";

const ACTION_KIND = { block: "bad", challenge: "warn", log: "warn", pass: "good" };

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

/** Whether an IP-list entry blocks `r`'s address on its site now, on every path. */
function blocksNow(entry, r) {
  return entry.action === "block" && !entry.path_prefix &&
    (entry.site_id === null || entry.site_id === r.site_id) &&
    (!entry.expires_at || Date.parse(entry.expires_at) > Date.now());
}

function BlockAddress({ record, action }) {
  const lookup = useApi("/api/protection/ip-lists/lookup/" + encodeURIComponent(record.client_ip));
  // Without read:protection the list cannot be asked: the button is offered as before.
  const unknown = lookup.error?.status === 403;
  if (lookup.error && !unknown) return html`<${ErrorBox} error=${lookup.error} />`;
  if (!lookup.data && !unknown) return null;
  const holder = lookup.data?.entries.find((e) => blocksNow(e, record));
  if (holder) {
    return html`
      <p class="muted"
        id="already-blocked">${t("logs.already_blocked", {
          ip: record.client_ip,
          cidr: holder.cidr,
        })} <${Link} href=${`/console/ip-lists?edit=${encodeURIComponent(holder.id)}`}>${t(
          "logs.see_entry",
        )}</${Link}></p>
    `;
  }
  const block = () =>
    action.run(
      async () => {
        await post("/api/protection/ip-lists", {
          action: "block",
          cidr: record.client_ip,
          note: t("logs.block_note", { trace: record.trace_id }),
        });
        lookup.reload();
      },
      t("logs.blocked_done", { ip: record.client_ip }),
    );
  const label = t("logs.block_ip", { ip: record.client_ip });
  const scope = lookup.data?.scope ?? "public";
  if (scope === "public") {
    return html`
      <button type="button" id="block-ip" class="danger" disabled=${action.busy}
        onClick=${block}>${label}</button>
    `;
  }
  const warning = t("logs.local_warning_" + scope, { ip: record.client_ip });
  return html`
    <div class="warn-note notice" id="local-warning">
      <p>${warning}</p>
      <${ConfirmButton} id="block-ip" label=${label} question=${warning}
        disabled=${action.busy} onConfirm=${block} />
    </div>
  `;
}

function RuleActions({ rule, action }) {
  const r = rule.data;
  if (!r || !can("write:rules")) return null;
  const disable = () =>
    action.run(async () => {
      const { id: _id, created_at: _c, updated_at: _u, ...doc } = r;
      await put(`/api/rules/custom/${encodeURIComponent(r.id)}`, { ...doc, enabled: false });
      rule.reload();
    }, t("logs.rule_disabled", { name: r.name }));
  return html`
    <p>
      <${Link} href=${`/console/custom-rules?edit=${encodeURIComponent(r.id)}`}>${t(
        "logs.edit_rule",
      )}</${Link}>
        ${r.enabled
          ? html`
            <button type="button" id="disable-rule" class="secondary" disabled=${action.busy}
              onClick=${disable}>${t("logs.disable_rule")}</button>
          `
          : html`<span class="muted">${t("logs.rule_off")}</span>`}</p>
  `;
}

/** An engine finding decided (blocked or logged): an ALAP exception can stop it next time. */
const engineDecided = (r, entry) =>
  entry?.check === "engine" && r.finding !== null && r.finding.class !== "api_schema";

function RecordActions({ record, entry, rule }) {
  const action = useAction();
  const protect = can("write:protection");
  const ruleEditable = entry?.check === "custom_rule" && can("write:rules");
  if (!protect && !ruleEditable) {
    return html`<${ReadOnlyNote} permission="write:protection" />`;
  }
  const exception = () =>
    action.run(
      () => post("/api/alap/false-positives", { trace_id: record.trace_id }),
      t("logs.exception_done"),
    );
  // An IP-list block is the list's own doing: no exception, and the address is blocked already.
  const offerBlock = protect && entry?.check !== "ip_list";
  const offerException = protect && engineDecided(record, entry);
  if (!offerBlock && !offerException && !ruleEditable) return null;
  return html`
    <div class="panel" id="record-actions">
      ${offerBlock ? html`<${BlockAddress} record=${record} action=${action} />` : null}
      ${protect && engineDecided(record, entry)
        ? html`
          <p><button type="button" id="alap-exception" class="secondary"
                    disabled=${action.busy} onClick=${exception}>${t("logs.exception")}</button></p>
          <p class="hint">${t("logs.exception_hint")}</p>
        `
        : null}
      ${entry?.check === "custom_rule"
        ? html`<${RuleActions} rule=${rule} action=${action} />`
        : null}
      <${ErrorBox} error=${action.error} />
      <${Done} text=${action.done} />
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
