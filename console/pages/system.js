// System: the version and runtime, the management database and the deployment's controllers
// (which holds which scheduled task), the data plane's worker threads, time synchronisation
// (servers, offsets, measure now, reselect), where the Prometheus metrics are, and the backup buttons: the backup API answers
// 501 by design (specification 4.3), so the page explains what to run on the host instead.
import { post } from "../api.js";
import {
  Badge,
  Done,
  ErrorBox,
  Loading,
  Page,
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { ControllersPanel, DatabasePanel } from "../db_panel.js";
import { fmtTime, t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const ms = (v) => (v === null || v === undefined ? "-" : `${v} ms`);

function TimeSync() {
  const state = useApi("/api/system/time-sync");
  const [view, setView] = useState(null);
  const action = useAction();
  useEffect(() => setView(state.data ?? null), [state.data]);
  const run = (op) =>
    action.run(async () => setView(await post(`/api/system/time-sync/${op}`)), t("time.done"));
  const writable = can("write:system");
  const v = view;
  return html`<div class="panel" id="time-sync">
    <h2>${t("time.title")}</h2>
    <p class="muted">${t("time.explain")}</p>
    <${Loading} state=${state} />
    ${
    v
      ? html`
        <dl class="facts" id="time-facts">
          <dt>${t("time.active")}</dt>
          <dd id="time-active">${v.active ?? "-"}</dd>
          <dt>${t("time.chosen_at")}</dt>
          <dd>${fmtTime(v.chosen_at)}</dd>
          <dt>${t("time.offset")}</dt>
          <dd id="time-offset">${ms(v.offset_ms)} ${v.offset_exceeded
            ? html`<${Badge} kind="bad">${t("time.exceeded", { max: v.max_offset_ms })}</${Badge}>`
            : null}</dd>
          <dt>${t("time.synced_at")}</dt>
          <dd>${fmtTime(v.synced_at)}</dd>
          <dt>${t("time.apply_offset")}</dt>
          <dd>${v.apply_offset
            ? t("time.applied", { offset: ms(v.applied_offset_ms) })
            : t("time.not_applied")}</dd>
        </dl>
        ${v.servers.length === 0
          ? html`<p class="notice" id="time-none">${t("time.no_servers")}</p>`
          : html`<${Table} rowKey=${(s) => s.server} rows=${v.servers} columns=${[
            {
              label: t("time.server"),
              value: (s) =>
                html`<span class="mono">${s.server}</span> ${
                  s.active ? html`<${Badge} kind="good">${t("time.active_badge")}</${Badge}>` : null
                }`,
            },
            {
              label: t("time.reachable"),
              value: (s) =>
                s.reachable === null
                  ? "-"
                  : s.reachable
                  ? html`<${Badge} kind="good">${t("common.yes")}</${Badge}>`
                  : html`<${Badge} kind="bad">${t("common.no")}</${Badge}>`,
            },
            { label: t("time.offset"), value: (s) => ms(s.offset_ms) },
            { label: t("time.delay"), value: (s) => ms(s.delay_ms) },
            { label: t("time.stratum"), value: (s) => s.stratum ?? "-" },
            { label: t("time.checked_at"), value: (s) => fmtTime(s.checked_at) },
            { label: t("time.error"), key: "error", className: "wrap" },
          ]} />`}
      `
      : null
  }
    ${writable ? null : html`<${ReadOnlyNote} permission="write:system" />`}
    <div class="actions">
      <button type="button" id="time-sync-now" disabled=${!writable || action.busy}
        onClick=${() => run("sync")}>${t("time.sync")}</button>
      <button type="button" id="time-reselect" class="secondary" disabled=${
    !writable || action.busy
  } onClick=${() => run("reselect")}>${t("time.reselect")}</button>
    </div>
    <${ErrorBox} error=${action.error} />
    <${Done} text=${action.done} />
  </div>`;
}

/** The management database and the controllers of the deployment. */
function Deployment() {
  const state = useApi("/api/system/storage");
  const d = state.data;
  return html`
    <${Loading} state=${state} />
    ${d
      ? html`
        <${DatabasePanel} facts=${d} />
        <${ControllersPanel} controllers=${d.controllers} />
      `
      : null}
  `;
}

/** `server.data.workers` and, per worker thread, whether it serves and on which policy. */
function DataPlane() {
  const state = useApi("/api/system/data-plane");
  const d = state.data;
  return html`<div class="panel" id="data-plane">
    <h2>${t("dataplane.title")}</h2>
    <p class="muted">${t("dataplane.explain")}</p>
    <${Loading} state=${state} />
    ${
    d
      ? html`
        <dl class="facts" id="data-plane-facts">
          <dt>${t("dataplane.setting")}</dt>
          <dd id="data-plane-setting"><code>server.data.workers: ${String(d.setting)}</code></dd>
          <dt>${t("dataplane.workers")}</dt>
          <dd id="data-plane-workers">${d.workers === 1
            ? t("dataplane.main_thread")
            : t("dataplane.threads", { n: d.workers, cores: d.cores })}</dd>
          <dt>${t("dataplane.policy")}</dt>
          <dd id="data-plane-policy">${d.policy_version} ${d.current
            ? html`<${Badge} kind="good">${t("dataplane.current")}</${Badge}>`
            : html`<${Badge} kind="bad">${t("dataplane.behind")}</${Badge}>`}</dd>
        </dl>
        ${d.threads.length > 0
          ? html`<${Table} rowKey=${(w) => w.index} rows=${d.threads} columns=${[
            { label: t("dataplane.worker"), key: "index" },
            {
              label: t("dataplane.serving"),
              value: (w) =>
                w.live
                  ? html`<${Badge} kind="good">${t("common.yes")}</${Badge}>`
                  : html`<${Badge} kind="bad">${t("common.no")}</${Badge}>`,
            },
            { label: t("dataplane.version"), key: "version" },
            { label: t("dataplane.requests"), key: "requests" },
            { label: t("dataplane.restarts"), key: "restarts" },
          ]} />`
          : null}
      `
      : null
  }
  </div>`;
}

/** Where the Prometheus exposition is and whether it needs credentials. */
function Metrics() {
  const info = useApi(can("read:monitor") ? "/api/monitor/prometheus" : null);
  const p = info.data;
  if (!can("read:monitor")) return null;
  return html`<div class="panel" id="metrics">
    <h2>${t("metrics.title")}</h2>
    <${Loading} state=${info} />
    ${
    p
      ? p.enabled
        ? html`
          <p id="metrics-where">${t("metrics.where")} <code>${location.origin}${p.path}</code></p>
          <p id="metrics-access">${p.public ? t("metrics.public") : t("metrics.private")}</p>
          <pre>${p.public
            ? `curl -s ${location.origin}${p.path}`
            : `curl -s -H "Authorization: Bearer $TOKEN" ${location.origin}${p.path}`}</pre>
          <p class="muted">${t("metrics.config")}</p>
        `
        : html`<p id="metrics-where">${t("metrics.disabled")}</p>`
      : null
  }
  </div>`;
}

function Backup({ kind }) {
  const action = useAction();
  const run = () => action.run(() => post(`/api/backup/${kind}`));
  return html`<div class="panel" id=${"backup-" + kind}>
    <h2>${t("system." + kind)}</h2>
    <p>${t("system." + kind + "_explain")}</p>
    <pre>${
    kind === "export"
      ? "waf store backup --out /backup/waf-$(date +%F).db\nwaf store check"
      : t("system.restore_steps")
  }</pre>
    <button type="button" class="secondary" disabled=${
    !can("write:system") || action.busy
  } onClick=${run}>
      ${t("system." + kind + "_button")}</button>
    ${
    action.error
      ? html`
        <p class="notice">${t("system.answer_501")}</p>
        <${ErrorBox} error=${action.error} />
      `
      : null
  }
  </div>`;
}

export default function System() {
  const version = useApi("/api/system/version");
  const v = version.data;
  return html`<${Page} title=${t("nav.system")}>
    <${Loading} state=${version} />
    ${
    v
      ? html`
        <dl class="facts" id="version">
          <dt>${t("system.version")}</dt>
          <dd>${v.version}</dd>
          <dt>${t("system.schema")}</dt>
          <dd>${v.schema_version}</dd>
          <dt>Deno</dt>
          <dd>${v.runtime.deno} (V8 ${v.runtime.v8}, TypeScript ${v.runtime.typescript})</dd>
          <dt>${t("system.build")}</dt>
          <dd>${v.build.target}</dd>
        </dl>
      `
      : null
  }
    <${Deployment} />
    <${DataPlane} />
    <${TimeSync} />
    <${Metrics} />
    <${Backup} kind="export" />
    <${Backup} kind="restore" />
  </${Page}>`;
}
