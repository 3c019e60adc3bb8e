// Attack log: the requests the WAF stopped by default (blocked, challenged, rate-limited and
// logged; "all traffic" shows the passed ones too), each with its request line and query and the
// class the dashboard counts it by. Filters are pickers (time, site, action, class) plus the
// client address, the status and free text over the request; a trace id in any copied form opens
// one record (log_record.js) with what decided, the payload marked and the actions that fit.
import { get } from "../api.js";
import { ErrorBox, Field, Link, Page, Table, useApi } from "../components.js";
import { fmtTime, t, tOr } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { ActionBadge, findTrace, Record } from "../log_record.js";
import { can } from "../session.js";

/** The action picker: "" is the default view (everything but passed traffic). */
const ACTIONS = ["", "block", "challenge", "rate_limited", "log", "pass", "all"];
/** What each choice asks the API for (`all`: no action filter). */
const ACTION_QUERY = {
  "": "block,challenge,log",
  all: undefined,
};
const FILTERS = ["from", "to", "site", "client_ip", "action", "class", "status", "q"];
/** A request line is cut here in the list; the record shows it whole. */
const LINE_LIMIT = 160;

/** The filters as the URL carries them (so links from the dashboard land filtered). */
function filtersFromUrl() {
  const q = new URLSearchParams(location.search);
  const filters = Object.fromEntries(FILTERS.map((k) => [k, q.get(k) ?? ""]));
  // As the picker names it (a link may say `SQLi`; the API takes any case too).
  return { ...filters, class: filters.class.trim().toLowerCase() };
}

const toIso = (local) => (local ? new Date(local).toISOString() : "");
const NONE = Object.fromEntries(FILTERS.map((k) => [k, ""]));

/** A class as a picker names it: engine classes as they are, checks by name too. */
const className = (c) =>
  c.kind === "check" ? `${tOr("logs.class_" + c.class, c.class)} (${c.class})` : c.class;

function ClassPicker({ value, onChange }) {
  const classes = useApi("/api/logs/classes").data?.items ?? [];
  const group = (kind) =>
    html`<optgroup label=${t("logs.classes_" + kind)}>${
      classes.filter((c) => c.kind === kind).map((c) =>
        html`<option value=${c.class} selected=${value === c.class}>${className(c)}</option>`
      )
    }</optgroup>`;
  return html`<select id="filter-class" onChange=${onChange}>
    <option value="" selected=${value === ""}>${t("logs.all_classes")}</option>
    ${group("engine")} ${group("check")}
  </select>`;
}

function Filters({ value, onApply, sites }) {
  const [v, setV] = useState(value);
  const set = (k) => (e) => setV({ ...v, [k]: e.target.value });
  const submit = (e) => {
    e.preventDefault();
    onApply(v);
  };
  // Reset clears the fields too, so the form never shows filters that are not applied.
  const reset = () => {
    setV(NONE);
    onApply(NONE);
  };
  const input = (k, type = "text", hint) =>
    html`
      <${Field} id=${"filter-" + k} label=${t("logs.filter_" + k)} hint=${hint}>
        <input id=${"filter-" + k} type=${type} value=${v[k]} onInput=${set(k)} />
        </${Field}>
    `;
  return html`<form class="toolbar panel" onSubmit=${submit} aria-label=${t("logs.filters")}>
    ${input("q", "search", t("logs.q_hint"))}
    ${input("from", "datetime-local")} ${input("to", "datetime-local")}
    <${Field} id="filter-site" label=${t("logs.filter_site")}>
      <select id="filter-site" onChange=${set("site")}>
        <option value="" selected=${v.site === ""}>${t("common.all_sites")}</option>
        ${
    sites.map((s) => html`<option value=${s.id} selected=${v.site === s.id}>${s.name}</option>`)
  }
      </select>
    </${Field}>
    <${Field} id="filter-action" label=${t("logs.filter_action")}>
      <select id="filter-action" onChange=${set("action")}>
        ${
    ACTIONS.map((a) =>
      html`<option value=${a} selected=${v.action === a}>${
        t("logs.show_" + (a || "attacks"))
      }</option>`
    )
  }
      </select>
    </${Field}>
    <${Field} id="filter-class" label=${t("logs.filter_class")}>
      <${ClassPicker} value=${v.class} onChange=${set("class")} />
    </${Field}>
    ${input("client_ip")} ${input("status")}
    <div><button type="submit" id="apply-filters">${t("common.apply")}</button>
      <button type="button" class="secondary" onClick=${reset}>
        ${t("common.reset")}</button></div>
  </form>`;
}

/** Opens the record of a pasted trace id, whatever it was pasted with (the API reads it out). */
function TraceSearch({ navigate }) {
  const [value, setValue] = useState("");
  const [problem, setProblem] = useState("");
  const submit = async (e) => {
    e.preventDefault();
    if (value.trim() === "") return setProblem("logs.trace_invalid");
    const found = await findTrace(value);
    if (found.id) navigate("/console/logs/" + found.id);
    else setProblem(found.why);
  };
  return html`
    <form class="toolbar" role="search" onSubmit=${submit}>
      <${Field} id="trace-search" label=${t("logs.trace_search")}
        hint=${t(problem || "logs.trace_hint")}>
        <input id="trace-search" value=${value} spellcheck=${false} autocomplete="off"
          aria-invalid=${problem !== ""} aria-describedby="trace-search-hint"
          onInput=${(e) => (setValue(e.target.value), setProblem(""))} />
        </${Field}>
        <div><button type="submit" id="trace-open">${t("logs.open")}</button></div>
        </form>
  `;
}

/**
 * The request as sent on one line, cut with an ellipsis where the column ends (the whole of it
 * on hover and in the record); a very long one is cut before it reaches the page too.
 */
function requestLine(r) {
  const line = `${r.method} ${r.host}${r.path}${r.query ? "?" + r.query : ""}`;
  const shown = line.length > LINE_LIMIT ? `${line.slice(0, LINE_LIMIT)}…` : line;
  return html`<span class="clip" title=${line}>${shown}</span>`;
}

function List({ navigate }) {
  const [filters, setFilters] = useState(filtersFromUrl);
  const [pages, setPages] = useState({ items: [], next: null, error: null, loading: true });
  const sites = useApi(can("read:sites") ? "/api/sites" : null);
  const siteList = sites.data?.items ?? [];
  const siteName = (id) => siteList.find((s) => s.id === id)?.name ?? id ?? "-";
  const query = (cursor) => ({
    ...filters,
    action: filters.action in ACTION_QUERY ? ACTION_QUERY[filters.action] : filters.action,
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
          stopped: r.search_stopped === true,
          partial: r.partial === true,
          error: null,
          loading: false,
        })),
      (error) => setPages((p) => ({ ...p, error, loading: false })),
    );
  useEffect(() => {
    // A link that carries a trace id (`?trace=`, `?trace_id=`) opens its record.
    const q = new URLSearchParams(location.search);
    const trace = q.get("trace") ?? q.get("trace_id");
    if (trace) {
      findTrace(trace).then((f) => f.id && navigate("/console/logs/" + f.id));
    }
  }, []);
  useEffect(() => {
    load(undefined);
  }, [filters]);
  const apply = (v) => {
    const q = new URLSearchParams(Object.entries(v).filter(([, x]) => x !== ""));
    history.replaceState(null, "", "/console/logs" + (q.toString() ? "?" + q : ""));
    setFilters(v);
  };
  const empty = pages.loading
    ? t("common.loading")
    : filters.action === ""
    ? t("logs.empty_attacks")
    : t("logs.empty");
  // The default view is empty: passed traffic may still be there.
  const emptyAction = !pages.loading && filters.action === ""
    ? html`
      <button type="button" class="secondary" id="show-all-traffic"
        onClick=${() => apply({ ...filters, action: "all" })}>${t("logs.show_all_traffic")}</button>
    `
    : null;
  return html`
    <${TraceSearch} navigate=${navigate} />
    <${Filters} key=${JSON.stringify(filters)} value=${filters} onApply=${apply}
      sites=${siteList} />
    <${ErrorBox} error=${pages.error} />
    ${pages.partial ? html`<p class="hint" id="logs-partial">${t("logs.partial")}</p>` : null}
    <${Table} rowKey=${(r) => r.trace_id} rows=${pages.items} empty=${empty}
      emptyAction=${emptyAction}
      columns=${[
        { label: t("logs.time"), value: (r) => fmtTime(r.time), className: "nowrap" },
        { label: t("logs.site"), value: (r) => r.site ?? siteName(r.site_id) },
        { label: t("logs.request"), value: requestLine, className: "mono request-line" },
        { label: t("logs.client_ip"), key: "client_ip", className: "mono" },
        { label: t("logs.action"), value: (r) => html`<${ActionBadge} record=${r} />` },
        { label: t("logs.class"), value: (r) => r.class ?? "-" },
        { label: t("logs.status"), key: "status" },
        {
          label: t("logs.trace"),
          className: "nowrap",
          // The end: a trace id starts with its time, the same for requests of one moment.
          value: (r) =>
            html`
              <${Link} href=${"/console/logs/" + r.trace_id} className="mono"
                title=${r.trace_id}>…${r.trace_id.slice(-12)}</${Link}>
            `,
        },
      ]} />
    ${pages.stopped
      ? html`<p class="hint" id="search-stopped">${t("logs.search_stopped")}</p>`
      : null}
    ${pages.next
      ? html`<button type="button" class="secondary" id="more" onClick=${() => load(pages.next)}>${
        t("common.more")
      }</button>`
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
