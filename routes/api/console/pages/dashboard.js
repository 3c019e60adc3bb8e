// Dashboard: requests, blocks and block rate over time, blocks by class, top attacked sites,
// paths and clients, upstream health, the access-log pipeline and pending ALAP decisions.
import { Badge, ErrorBox, Field, Link, Page, Table } from "../components.js";
import { watchDashboard } from "../dashboard_data.js";
import { fmtNumber, fmtTime, t } from "../i18n.js";
import { TimeChart } from "../lib/chart.js";
import { html, useEffect, useMemo, useState } from "../lib/ui.js";

const RANGES = [60, 360, 1440];

function Part({ part, children }) {
  if (part.hidden) return null;
  if (part.error) return html`<${ErrorBox} error=${part.error} />`;
  return part.data ? children(part.data) : null;
}

function Cards({ s, stats }) {
  const rate = s.totals.requests ? (100 * s.totals.blocked / s.totals.requests).toFixed(1) : "0.0";
  const cards = [
    ["requests", fmtNumber(s.totals.requests)],
    ["blocked", fmtNumber(s.totals.blocked)],
    ["block_rate", rate + "%"],
    ["challenged", fmtNumber(s.totals.challenged)],
    ...(stats ? [["queued", fmtNumber(stats.queued)], ["dropped", fmtNumber(stats.dropped)]] : []),
  ];
  return html`<div class="cards">${
    cards.map(([k, v]) =>
      html`
        <div class="card" id=${"card-" + k}>
          <div class="value">${v}</div>
          <div class="label">${t("dash." + k)}</div>
        </div>
      `
    )
  }</div>`;
}

function Charts({ s }) {
  const times = useMemo(() => s.series.map((p) => Date.parse(p.time)), [s]);
  const traffic = useMemo(() => [
    { label: t("dash.requests"), values: s.series.map((p) => p.requests) },
    { label: t("dash.blocked"), values: s.series.map((p) => p.blocked) },
  ], [s]);
  const rate = useMemo(() => [{
    label: t("dash.block_rate"),
    format: (v) => v.toFixed(1) + "%",
    values: s.series.map((p) => p.requests ? 100 * p.blocked / p.requests : null),
  }], [s]);
  return html`
    <div class="grid2">
      <div>
        <h2>${t("dash.traffic")}</h2>
        <${TimeChart} times=${times} series=${traffic} label=${t("dash.traffic")} timeLabel=${t(
          "logs.time",
        )} />
      </div>
      <div>
        <h2>${t("dash.block_rate")}</h2>
        <${TimeChart} times=${times} series=${rate} label=${t("dash.block_rate")} timeLabel=${t(
          "logs.time",
        )}
          percent />
      </div>
    </div>
  `;
}

function Tops({ s, siteName }) {
  const count = { label: t("dash.count"), value: (r) => fmtNumber(r.count) };
  return html`
    <div class="grid2">
      <div>
        <h2>${t("dash.by_class")}</h2>
        <${Table} rowKey=${(r) => r.class} rows=${s.blocked_by_class} columns=${[
          { label: t("logs.class"), value: (r) => r.class ?? t("dash.class_other") },
          count,
        ]} />
      </div>
      <div>
        <h2>${t("dash.top_sites")}</h2>
        <${Table} rowKey=${(r) => r.site_id} rows=${s.top_sites} columns=${[
          { label: t("logs.site"), value: (r) => siteName(r.site_id) },
          count,
        ]} />
      </div>
      <div>
        <h2>${t("dash.top_paths")}</h2>
        <${Table} rowKey=${(r) => r.path} rows=${s.top_paths} columns=${[
          { label: t("logs.path"), key: "path", className: "mono wrap" },
          count,
        ]} />
      </div>
      <div>
        <h2>${t("dash.top_clients")}</h2>
        <${Table} rowKey=${(r) => r.client_ip} rows=${s.top_clients} columns=${[
          {
            label: t("logs.client_ip"),
            value: (r) =>
              html`<${Link} href=${
                "/console/logs?client_ip=" + encodeURIComponent(r.client_ip)
              }>${r.client_ip}</${Link}>`,
          },
          count,
        ]} />
      </div>
    </div>
  `;
}

function Upstreams({ items }) {
  const rows = items.flatMap((s) =>
    s.upstreams.map((u) => ({ ...u, site: s.name, id: s.site_id + u.origin }))
  );
  return html`<${Table} rows=${rows} empty=${t("dash.no_sites")} columns=${[
    { label: t("logs.site"), key: "site" },
    { label: t("sites.upstreams"), key: "origin", className: "mono" },
    {
      label: t("dash.health"),
      value: (u) =>
        u.healthy
          ? html`<${Badge} kind="good">${t("dash.up")}</${Badge}>`
          : html`<${Badge} kind="bad">${t("dash.down")}</${Badge}>`,
    },
    { label: t("dash.failures"), key: "failures" },
    { label: t("dash.last_ok"), value: (u) => fmtTime(u.last_ok_at) },
  ]} />`;
}

export default function Dashboard() {
  const [minutes, setMinutes] = useState(60);
  const [data, setData] = useState(null);
  useEffect(() => watchDashboard(minutes, setData), [minutes]);
  const range = html`<${Field} id="dash-range" label=${t("dash.range")}>
    <select id="dash-range" onChange=${(e) => setMinutes(Number(e.target.value))}>
      ${
    RANGES.map((m) =>
      html`<option value=${m} selected=${m === minutes}>${t("dash.range_" + m)}</option>`
    )
  }
    </select></${Field}>`;
  return html`<${Page} title=${t("nav.dashboard")} actions=${range}>
    ${
    data === null ? html`<p class="muted" role="status">${t("common.loading")}</p>` : html`
      <${Part} part=${data.summary}>${(s) =>
        html`
          <${Cards} s=${s} stats=${data.stats.data} />
          <${Charts} s=${s} />
          <${Tops} s=${s} siteName=${data.siteName} />
        `}</${Part}>
      <${Part} part=${data.alap}>${(a) =>
        html`
          <h2>${t("dash.pending_alap")}</h2>
          <p id="pending-alap">${t("dash.pending_count", { n: a.items.length })}
            ${a.items.length > 0
              ? html`
                <${Link} href="/console/alap">${t("dash.review")}</${Link}>
              `
              : null}</p>
        `}
      </${Part}>
      <${Part} part=${data.health}>${(h) =>
        html`
          <h2>${t("dash.upstreams")}</h2>
          <${Upstreams} items=${h.items} />
        `}</${Part}>
      <${Part} part=${data.stats}>${(st) =>
        html`
          <h2>${t("dash.pipeline")}</h2>
          <dl class="facts" id="pipeline">
            <dt>${t("dash.queued")}</dt>
            <dd>${fmtNumber(st.queued)}</dd>
            <dt>${t("dash.written")}</dt>
            <dd>${fmtNumber(st.written)}</dd>
            <dt>${t("dash.dropped")}</dt>
            <dd>${fmtNumber(st.dropped)}</dd>
            <dt>${t("dash.pruned")}</dt>
            <dd>${fmtNumber(st.pruned)}</dd>
          </dl>
        `}</${Part}>
      <p class="muted">${t("dash.polling", { s: 10 })}</p>
    `
  }
  </${Page}>`;
}
