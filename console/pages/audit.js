// Audit log: every change and authentication event, newest first, with filters. The target reads
// by its name where the API knows it (the id beside it), the detail as a list of facts with the
// record's raw JSON behind a toggle.
import { get } from "../api.js";
import { Badge, ErrorBox, Field, Page, Table } from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";

const RESULTS = ["", "success", "failure", "denied"];
const KIND = { success: "good", failure: "bad", denied: "warn" };
const EMPTY = { from: "", to: "", actor: "", action: "", result: "" };

/** A detail value as text: plain values as they are, lists joined, objects as JSON. */
function plain(v) {
  if (v === null || v === undefined) return "-";
  if (Array.isArray(v) && v.every((x) => typeof x !== "object" || x === null)) return v.join(", ");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

function Target({ a }) {
  if (a.target === null || a.target === undefined) return "-";
  if (!a.target_name) return html`<span class="mono">${a.target}</span>`;
  return html`
    <span class="target-name">${a.target_name}</span>
    <span class="muted mono target-id">${a.target}</span>
  `;
}

function Detail({ detail }) {
  if (detail === null || detail === undefined) return "-";
  const facts = typeof detail === "object" && !Array.isArray(detail)
    ? Object.entries(detail)
    : [["", detail]];
  return html`
    <div class="audit-detail">
      <dl class="kv">${facts.map(([k, v]) =>
        html`
          <dt>${k}</dt>
          <dd>${plain(v)}</dd>
        `
      )}</dl>
      <details class="raw">
        <summary>${t("audit.raw")}</summary>
        <pre>${JSON.stringify(detail, null, 2)}</pre>
      </details>
    </div>
  `;
}

export default function Audit() {
  const [form, setForm] = useState(EMPTY);
  const [filters, setFilters] = useState(EMPTY);
  const [state, setState] = useState({ items: [], next: null, error: null });
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const load = (cursor) =>
    get("/api/audit", {
      ...filters,
      from: filters.from && new Date(filters.from).toISOString(),
      to: filters.to && new Date(filters.to).toISOString(),
      limit: 100,
      cursor,
    }).then(
      (r) =>
        setState((s) => ({
          items: cursor ? [...s.items, ...r.items] : r.items,
          next: r.next_cursor ?? null,
          error: null,
        })),
      (error) => setState((s) => ({ ...s, error })),
    );
  useEffect(() => {
    load(undefined);
  }, [filters]);
  const input = (k, type = "text") =>
    html`<${Field} id=${"audit-" + k} label=${t("audit." + k)}>
      <input id=${"audit-" + k} type=${type} value=${form[k]} onInput=${set(k)} /></${Field}>`;
  return html`
    <${Page} title=${t("nav.audit")}>
      <form class="toolbar panel" onSubmit=${(e) => (e.preventDefault(), setFilters(form))}>
          ${input("from", "datetime-local")} ${input("to", "datetime-local")} ${input(
            "actor",
          )} ${input("action")}
          <${Field} id="audit-result" label=${t("audit.result")}>
            <select id="audit-result" onChange=${set("result")}>
              ${RESULTS.map((r) =>
                html`<option value=${r} selected=${form.result === r}>${
                  r ? t("audit.result_" + r) : t("common.all")
                }</option>`
              )}
            </select>
          </${Field}>
          <div><button type="submit">${t("common.apply")}</button></div>
        </form>
        <${ErrorBox} error=${state.error} />
        <${Table} rows=${state.items} empty=${t("audit.empty")} columns=${[
          { label: t("logs.time"), value: (a) => fmtTime(a.time) },
          {
            label: t("audit.actor"),
            value: (a) => `${a.actor.name ?? a.actor.id ?? "-"} (${a.actor.type})`,
          },
          { label: t("audit.action"), key: "action", className: "mono" },
          { label: t("audit.target"), value: (a) => html`<${Target} a=${a} />`, className: "wrap" },
          {
            label: t("audit.result"),
            value: (a) =>
              html`<${Badge} kind=${KIND[a.result]}>${t("audit.result_" + a.result)}</${Badge}>`,
          },
          { label: t("logs.client_ip"), value: (a) => a.client_ip ?? "-" },
          {
            label: t("audit.detail"),
            value: (a) => html`<${Detail} detail=${a.detail} />`,
            className: "wrap",
          },
        ]} />
        ${state.next
          ? html`<button type="button" class="secondary" onClick=${() => load(state.next)}>${
            t("common.more")
          }</button>`
          : null}
      </${Page}>
  `;
}
