// Attack log: filters (time, site, client address, action, class, status), a trace-id search
// that opens one record with its whole evaluation chain, finding, evidence and timings, and one
// click to block the client address or to create an ALAP exception from a record.
import { get, post } from "../api.js";
import {
  Badge,
  Done,
  ErrorBox,
  Field,
  Link,
  Loading,
  Page,
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { fmtNumber, fmtTime, t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const TRACE = /^[0-9a-f]{32}$/;
const ACTIONS = ["", "block", "challenge", "log", "pass"];
const FILTERS = ["from", "to", "site", "client_ip", "action", "class", "status"];
const ACTION_KIND = { block: "bad", challenge: "warn", log: "warn", pass: "good" };

export function ActionBadge({ action }) {
  return html`<${Badge} kind=${ACTION_KIND[action] ?? "plain"}>${
    t("logs.action_" + action)
  }</${Badge}>`;
}

/** The filters as the URL carries them (so links from the dashboard land filtered). */
function filtersFromUrl() {
  const q = new URLSearchParams(location.search);
  return Object.fromEntries(FILTERS.map((k) => [k, q.get(k) ?? ""]));
}

const toIso = (local) => (local ? new Date(local).toISOString() : "");

function Filters({ value, onApply, sites }) {
  const [v, setV] = useState(value);
  const set = (k) => (e) => setV({ ...v, [k]: e.target.value });
  const submit = (e) => {
    e.preventDefault();
    onApply(v);
  };
  // Reset clears the fields too, so the form never shows filters that are not applied.
  const reset = () => {
    const none = Object.fromEntries(FILTERS.map((k) => [k, ""]));
    setV(none);
    onApply(none);
  };
  const input = (k, type = "text") =>
    html`
      <${Field} id=${"filter-" + k} label=${t("logs.filter_" + k)}>
        <input id=${"filter-" + k} type=${type} value=${v[k]} onInput=${set(k)} />
        </${Field}>
    `;
  return html`<form class="toolbar panel" onSubmit=${submit} aria-label=${t("logs.filters")}>
    ${input("from", "datetime-local")} ${input("to", "datetime-local")}
    <${Field} id="filter-site" label=${t("logs.filter_site")}>
      <select id="filter-site" onChange=${set("site")}>
        <option value="" selected=${v.site === ""}>${t("common.all_sites")}</option>
        ${
    sites.map((s) => html`<option value=${s.id} selected=${v.site === s.id}>${s.name}</option>`)
  }
      </select>
    </${Field}>
    ${input("client_ip")}
    <${Field} id="filter-action" label=${t("logs.filter_action")}>
      <select id="filter-action" onChange=${set("action")}>
        ${
    ACTIONS.map((a) =>
      html`<option value=${a} selected=${v.action === a}>${
        a ? t("logs.action_" + a) : t("common.all")
      }</option>`
    )
  }
      </select>
    </${Field}>
    ${input("class")} ${input("status")}
    <div><button type="submit" id="apply-filters">${t("common.apply")}</button>
      <button type="button" class="secondary" onClick=${reset}>
        ${t("common.reset")}</button></div>
  </form>`;
}

function TraceSearch({ navigate }) {
  const [value, setValue] = useState("");
  const [bad, setBad] = useState(false);
  const submit = (e) => {
    e.preventDefault();
    const id = value.trim().toLowerCase();
    if (!TRACE.test(id)) return setBad(true);
    navigate("/console/logs/" + id);
  };
  return html`
    <form class="toolbar" role="search" onSubmit=${submit}>
      <${Field} id="trace-search" label=${t("logs.trace_search")}
        hint=${bad ? t("logs.trace_invalid") : t("logs.trace_hint")}>
        <input id="trace-search" value=${value} spellcheck=${false} autocomplete="off"
          aria-invalid=${bad} onInput=${(e) => (setValue(e.target.value), setBad(false))} />
        </${Field}>
        <div><button type="submit" id="trace-open">${t("logs.open")}</button></div>
        </form>
  `;
}

function List({ navigate }) {
  const [filters, setFilters] = useState(filtersFromUrl);
  const [pages, setPages] = useState({ items: [], next: null, error: null, loading: true });
  const sites = useApi(can("read:sites") ? "/api/sites" : null);
  const siteList = sites.data?.items ?? [];
  const siteName = (id) => siteList.find((s) => s.id === id)?.name ?? id ?? "-";
  const query = (cursor) => ({
    ...filters,
    from: toIso(filters.from),
    to: toIso(filters.to),
    limit: 50,
    cursor,
  });
  const load = (cursor) =>
    get("/api/logs", query(cursor)).then(
      (r) =>
        setPages((p) => ({
          items: cursor ? [...p.items, ...r.items] : r.items,
          next: r.next_cursor,
          error: null,
          loading: false,
        })),
      (error) => setPages((p) => ({ ...p, error, loading: false })),
    );
  useEffect(() => {
    load(undefined);
  }, [filters]);
  const apply = (v) => {
    const q = new URLSearchParams(Object.entries(v).filter(([, x]) => x !== ""));
    history.replaceState(null, "", "/console/logs" + (q.toString() ? "?" + q : ""));
    setFilters(v);
  };
  return html`
    <${TraceSearch} navigate=${navigate} />
    <${Filters} value=${filters} onApply=${apply} sites=${siteList} />
    <${ErrorBox} error=${pages.error} />
    <${Table} rowKey=${(r) => r.trace_id} rows=${pages.items} empty=${pages.loading
      ? t("common.loading")
      : t("logs.empty")}
      columns=${[
        { label: t("logs.time"), value: (r) => fmtTime(r.time) },
        { label: t("logs.site"), value: (r) => r.site ?? siteName(r.site_id) },
        {
          label: t("logs.request"),
          value: (r) => `${r.method} ${r.host}${r.path}`,
          className: "mono wrap",
        },
        { label: t("logs.client_ip"), key: "client_ip", className: "mono" },
        { label: t("logs.action"), value: (r) => html`<${ActionBadge} action=${r.action} />` },
        { label: t("logs.class"), value: (r) => r.finding?.class ?? "-" },
        { label: t("logs.status"), key: "status" },
        {
          label: t("logs.trace"),
          value: (r) =>
            html`<${Link} href=${"/console/logs/" + r.trace_id} className="mono">${
              r.trace_id.slice(0, 12)
            }…</${Link}>`,
        },
      ]} />
    ${pages.next
      ? html`<button type="button" class="secondary" onClick=${() => load(pages.next)}>${
        t("common.more")
      }</button>`
      : null}
  `;
}

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

function RecordActions({ record }) {
  const action = useAction();
  if (!can("write:protection")) return html`<${ReadOnlyNote} permission="write:protection" />`;
  const block = () =>
    action.run(
      () =>
        post("/api/protection/ip-lists", {
          action: "block",
          cidr: record.client_ip,
          note: t("logs.block_note", { trace: record.trace_id }),
        }),
      t("logs.blocked_done", { ip: record.client_ip }),
    );
  const exception = () =>
    action.run(
      () => post("/api/alap/false-positives", { trace_id: record.trace_id }),
      t("logs.exception_done"),
    );
  return html`
    <div class="panel">
      <button type="button" id="block-ip" class="danger" disabled=${action.busy} onClick=${block}>
          ${t("logs.block_ip", { ip: record.client_ip })}</button>
      <button type="button" id="alap-exception" class="secondary" disabled=${action.busy ||
        !record.finding}
        onClick=${exception}>${t("logs.exception")}</button>
      <p class="hint">${t("logs.exception_hint")}</p>
      <${ErrorBox} error=${action.error} />
      <${Done} text=${action.done} />
    </div>
  `;
}

function Record({ traceId }) {
  const rec = useApi("/api/logs/" + encodeURIComponent(traceId));
  const r = rec.data;
  const us = (v) => (v === null || v === undefined ? "-" : `${fmtNumber(Math.round(v))} µs`);
  return html`
    <p>
      <${Link} href="/console/logs">${t("logs.back")}</${Link}></p>
        <${Loading} state=${rec} />
        ${r
          ? html`<div id="record">
      <h2>${t("logs.trace")} <code class="trace-id">${r.trace_id}</code></h2>
      <${RecordActions} record=${r} />
      <div class="grid2">
        <div><h2>${t("logs.request")}</h2><${Facts} rows=${[
            [t("logs.time"), fmtTime(r.time)],
            [t("logs.site"), r.site],
            [t("logs.client_ip"), r.client_ip],
            [t("logs.peer_ip"), r.peer_ip],
            [
              t("logs.request"),
              html`<code>${r.method} ${r.proto}://${r.host}${r.path}${
                r.query ? "?" + r.query : ""
              }</code>`,
            ],
            [t("logs.user_agent"), r.user_agent],
            [t("logs.action"), html`<${ActionBadge} action=${r.action} />`],
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
      <h2>${t("logs.finding")}</h2>
      ${
            r.finding
              ? html`
                <div id="finding">
                  <${Facts} rows=${[
                    [t("logs.class"), r.finding.class],
                    [t("logs.confidence"), r.finding.confidence],
                    [t("logs.score"), r.finding.score],
                    [t("logs.location"), html`<code>${r.finding.location}</code>`],
                    [t("logs.rule"), html`<code>${r.finding.rule}</code>`],
                  ]} />
                  <h3>${t("logs.evidence")}</h3>
                  <pre id="evidence">${r.finding.evidence}</pre>
                </div>
              `
              : html`<p class="muted">${t("logs.no_finding")}</p>`
          }
      <h2>${t("logs.chain")}</h2>
      <${Table} rowKey=${(c) => c.check} rows=${r.chain.map((c, i) => ({ ...c, i }))} columns=${[
            { label: "#", value: (c) => c.i + 1 },
            { label: t("logs.check"), key: "check", className: "mono" },
            { label: t("logs.result"), key: "result" },
            { label: t("logs.rule"), key: "rule", className: "mono" },
            { label: t("logs.took"), value: (c) => us(c.us) },
          ]} />
    </div>`
          : null}
  `;
}

export default function Logs({ detail, navigate }) {
  return html`<${Page} title=${t("nav.logs")}>
    ${
    detail
      ? html`<${Record} key=${detail} traceId=${detail} />`
      : html`<${List} navigate=${navigate} />`
  }
  </${Page}>`;
}
