// Dashboard: requests, blocks, block rate and latency over time (the monitoring rollups), blocks
// by class, top attacked sites, paths and clients, blocked requests live as they happen (the
// realtime feed), upstream health, the access-log pipeline, pending ALAP decisions and, on a
// controller with nodes, the traffic through each node since it joined (from its heartbeats); on
// top, until done or dismissed, the getting-started checklist (dashboard_checklist.js).
import { Badge, ErrorBox, Field, Link, Page, Table } from "../components.js";
import { watchDashboard, watchLive } from "../dashboard_data.js";
import { fmtNumber, fmtTime, t } from "../i18n.js";
import { TimeChart } from "../lib/chart.js";
import { html, useEffect, useMemo, useRef, useState } from "../lib/ui.js";
import { can } from "../session.js";
import { NodeState } from "./cluster.js";
import { Checklist } from "./dashboard_checklist.js";

const RANGES = [60, 360, 1440, 10080, 43200];
/** How many live events the list keeps. */
const LIVE_MAX = 20;
const LIVE_STATE = { live: "good", connecting: "warn", closed: "bad" };

function Part({ part, children }) {
  if (part.hidden) return null;
  if (part.error) return html`<${ErrorBox} error=${part.error} />`;
  return part.data ? children(part.data) : null;
}

const fmtMs = (v) => (v === null || v === undefined ? "-" : `${v} ms`);

function Cards({ s, stats }) {
  const rate = s.requests ? (100 * s.blocked / s.requests).toFixed(1) : "0.0";
  const cards = [
    ["requests", fmtNumber(s.requests)],
    ["blocked", fmtNumber(s.blocked)],
    ["block_rate", rate + "%"],
    ["challenged", fmtNumber(s.challenged)],
    ["latency_p95", fmtMs(s.latency_ms.p95)],
    ...(stats ? [["queued", fmtNumber(stats.queued)], ["dropped", fmtNumber(stats.dropped)]] : []),
  ];
  return html`
    <div class="cards-box">
      <div class="cards" data-n=${cards.length}>${cards.map(([k, v]) =>
        html`
          <div class="card" id=${"card-" + k}>
            <div class="value">${v}</div>
            <div class="label">${t("dash." + k)}</div>
          </div>
        `
      )}</div>
    </div>
  `;
}

/**
 * Passed requests' records the access log left out while its writer was behind, per site (the
 * records of blocked requests are never among them); nothing while none were.
 */
function SampledSites({ sites }) {
  const rows = Object.entries(sites).sort((a, b) => b[1] - a[1]);
  if (rows.length === 0) return null;
  return html`
    <div id="sampled-sites">
      <${Table} rowKey=${(r) => r[0]} rows=${rows} caption=${t("dash.sampled_sites")} columns=${[
        { label: t("logs.site"), value: (r) => r[0] === "" ? t("dash.unmatched") : r[0] },
        { label: t("dash.sampled"), value: (r) => fmtNumber(r[1]) },
      ]} />
    </div>
  `;
}

/**
 * Access-log records lost for good, per site and verdict (the spill file full or failing): a
 * blocked request's record among them is what the pipeline exists to prevent; nothing while none
 * were.
 */
function DroppedSites({ sites }) {
  const rows = Object.entries(sites).flatMap(([site, by]) =>
    Object.entries(by).map(([verdict, n]) => [site, verdict, n])
  ).sort((a, b) => b[2] - a[2]);
  if (rows.length === 0) return null;
  return html`
    <div id="dropped-sites">
      <${Table} rowKey=${(r) => r[0] + "/" + r[1]} rows=${rows} caption=${t("dash.dropped_sites")}
        columns=${[
          { label: t("logs.site"), value: (r) => r[0] === "" ? t("dash.unmatched") : r[0] },
          { label: t("dash.verdict"), value: (r) => r[1] },
          { label: t("dash.dropped"), value: (r) => fmtNumber(r[2]) },
        ]} />
    </div>
  `;
}

/** The passed records' sampling now (`sample_every`: 1 all, 0 none, N one in N). */
function sampleEvery(n) {
  if (n === undefined || n === 1) return t("dash.sample_all");
  return n === 0 ? t("dash.sample_none") : t("dash.sample_one_in", { n: fmtNumber(n) });
}

/** How many ALAP decisions wait, and a link to review them. */
function PendingAlap({ count }) {
  // The space is a value of its own: the template drops whitespace that spans lines.
  const review = count > 0
    ? [" ", html`<${Link} href="/console/alap">${t("dash.review")}</${Link}>`]
    : null;
  return html`<p id="pending-alap">${t("dash.pending_count", { n: count })}${review}</p>`;
}

function Charts({ points }) {
  const times = useMemo(() => points.map((p) => Date.parse(p.time)), [points]);
  const traffic = useMemo(() => [
    { label: t("dash.requests"), values: points.map((p) => p.requests) },
    { label: t("dash.blocked"), values: points.map((p) => p.blocked) },
  ], [points]);
  const rate = useMemo(() => [{
    label: t("dash.block_rate"),
    format: (v) => v.toFixed(1) + "%",
    values: points.map((p) => p.requests ? 100 * p.blocked / p.requests : null),
  }], [points]);
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

function Tops({ s }) {
  const count = { label: t("dash.count"), value: (r) => fmtNumber(r.blocked) };
  const classes = Object.entries(s.blocked_classes).map(([k, n]) => ({ class: k, blocked: n }));
  return html`
    <div class="grid2">
      <div>
        <h2>${t("dash.by_class")}</h2>
        <${Table} rowKey=${(r) => r.class} rows=${classes} columns=${[
          { label: t("logs.class"), key: "class" },
          count,
        ]} />
      </div>
      <div>
        <h2>${t("dash.top_sites")}</h2>
        <${Table} rowKey=${(r) => r.site_id} rows=${s.top_sites} columns=${[
          { label: t("logs.site"), value: (r) => r.site ?? t("dash.unmatched") },
          count,
          { label: t("dash.challenged"), value: (r) => fmtNumber(r.challenged) },
        ]} />
      </div>
      <div>
        <h2>${t("dash.top_paths")}</h2>
        <${Table} rowKey=${(r) => r.site_id + r.path} rows=${s.top_paths} columns=${[
          { label: t("logs.site"), value: (r) => r.site ?? t("dash.unmatched") },
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

/** The nodes' own counters since each joined, and their sum: traffic this controller never sees. */
function ClusterNodes({ c }) {
  if (c.items.length === 0) return null;
  const n = (o, k) => fmtNumber(o?.[k] ?? 0);
  return html`
    <h2>${t("dash.cluster")}</h2>
    <p class="muted">${t("dash.cluster_note")}</p>
    <dl class="facts" id="cluster-totals">
      <dt>${t("dash.requests")}</dt>
      <dd>${n(c.totals, "requests")}</dd>
      <dt>${t("dash.blocked")}</dt>
      <dd>${n(c.totals, "block")}</dd>
      <dt>${t("dash.challenged")}</dt>
      <dd>${n(c.totals, "challenge")}</dd>
    </dl>
    <div id="cluster-nodes">
      <${Table} rows=${c.items} columns=${[
        {
          label: t("common.name"),
          value: (x) => html`<${Link} href="/console/cluster">${x.name}</${Link}>`,
        },
        {
          label: t("common.status"),
          value: (x) => html`<${NodeState} state=${x.state} />`,
        },
        { label: t("dash.requests"), value: (x) => n(x.totals, "requests") },
        { label: t("dash.blocked"), value: (x) => n(x.totals, "block") },
        { label: t("dash.challenged"), value: (x) => n(x.totals, "challenge") },
        {
          label: t("cluster.last_heartbeat"),
          value: (x) => x.last_heartbeat_at ? fmtTime(x.last_heartbeat_at) : "-",
        },
      ]} />
    </div>
  `;
}

/** Blocked and challenged requests as the realtime feed delivers them, newest first. */
function Live({ events, state }) {
  return html`
    <div id="live">
      <h2>${t("dash.live")} <${Badge} kind=${LIVE_STATE[state] ??
        "plain"}><span id="live-state">${t("dash.live_" + state)}</span></${Badge}></h2>
        <${Table} rows=${events} empty=${t("dash.live_empty")} columns=${[
          { label: t("logs.time"), value: (e) => fmtTime(e.time) },
          {
            label: t("common.status"),
            value: (e) =>
              html`<${Badge} kind=${
                e.kind === "access.blocked" ? "bad" : "warn"
              }>${e.data.status} ${e.data.action}</${Badge}>`,
          },
          { label: t("logs.site"), value: (e) => e.site ?? "-" },
          { label: t("logs.client_ip"), value: (e) => e.data.client_ip, className: "mono" },
          {
            label: t("logs.path"),
            value: (e) => `${e.data.method} ${e.data.path}`,
            className: "mono wrap",
          },
          { label: t("logs.class"), value: (e) => e.data.class ?? e.data.check ?? "-" },
          {
            label: t("dash.trace"),
            value: (e) =>
              e.data.trace_id && can("read:logs")
                ? html`<${Link} href=${
                  "/console/logs/" + e.data.trace_id
                } className="mono live-trace">${e.data.trace_id}</${Link}>`
                : html`<span class="mono">${e.data.trace_id ?? "-"}</span>`,
          },
        ]} />
      </div>
  `;
}

export default function Dashboard() {
  const [minutes, setMinutes] = useState(60);
  const [data, setData] = useState(null);
  const [live, setLive] = useState({ events: [], state: "connecting" });
  const watcher = useRef(null);
  useEffect(() => {
    const w = watchDashboard(minutes, setData);
    watcher.current = w;
    return () => w.stop();
  }, [minutes]);
  useEffect(() =>
    watchLive(
      (e) => {
        setLive((l) => ({ ...l, events: [e, ...l.events].slice(0, LIVE_MAX) }));
        watcher.current?.refresh();
      },
      (state) => setLive((l) => ({ ...l, state })),
    ), []);
  const range = html`<${Field} id="dash-range" label=${t("dash.range")}>
    <select id="dash-range" onChange=${(e) => setMinutes(Number(e.target.value))}>
      ${
    RANGES.map((m) =>
      html`<option value=${m} selected=${m === minutes}>${t("dash.range_" + m)}</option>`
    )
  }
    </select></${Field}>`;
  return html`<${Page} title=${t("nav.dashboard")} actions=${range}>
    <${Checklist} />
    ${
    data === null ? html`<p class="muted" role="status">${t("common.loading")}</p>` : html`
      <${Part} part=${data.summary}>${(s) =>
        html`
          <${Cards} s=${s} stats=${data.stats.data} />
        `}</${Part}>
      <${Part} part=${data.series}>${(series) =>
        html`
          <${Charts} points=${series.points} />
        `}</${Part}>
      ${can("read:realtime") ? html`<${Live} events=${live.events} state=${live.state} />` : null}
      <${Part} part=${data.summary}>${(s) =>
        html`
          <${Tops} s=${s} />
        `}</${Part}>
      <${Part} part=${data.alap}>${(a) =>
        html`
          <h2>${t("dash.pending_alap")}</h2>
          <${PendingAlap} count=${a.items.length} />
        `}
      </${Part}>
      <${Part} part=${data.health}>${(h) =>
        html`
          <h2>${t("dash.upstreams")}</h2>
          <${Upstreams} items=${h.items} />
        `}</${Part}>
      <${Part} part=${data.cluster}>${(c) =>
        html`
          <${ClusterNodes} c=${c} />
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
            <dt>${t("dash.dropped_verdicts")}</dt>
            <dd>${fmtNumber(st.dropped_verdicts ?? 0)}</dd>
            <dt>${t("dash.sampled")}</dt>
            <dd>${fmtNumber(st.sampled ?? 0)}</dd>
            <dt>${t("dash.sample_every")}</dt>
            <dd>${sampleEvery(st.sample_every)}</dd>
            <dt>${t("dash.spilled")}</dt>
            <dd>${fmtNumber(st.spilled ?? 0)}</dd>
            <dt>${t("dash.spill_rows")}</dt>
            <dd>${fmtNumber(st.spill_rows ?? 0)}</dd>
            <dt>${t("dash.pruned")}</dt>
            <dd>${fmtNumber(st.pruned)}</dd>
          </dl>
          <${SampledSites} sites=${st.sampled_sites ?? {}} />
          <${DroppedSites} sites=${st.dropped_sites ?? {}} />
        `}</${Part}>
      <p class="muted">${t("dash.polling", { s: 10 })}</p>
    `
  }
  </${Page}>`;
}
