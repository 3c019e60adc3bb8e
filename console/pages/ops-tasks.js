// Scheduled tasks: every maintenance routine with its schedule, next and last run; "run now",
// a schedule/jitter/enabled/settings editor (write:ops), and one task's run history
// (`/console/ops-tasks/<id>`).
import { post, put } from "../api.js";
import {
  Badge,
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
import { fmtTime, t, tOr } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const RESULT = { ok: "good", error: "bad", running: "warn" };

/** A task's text in the console's language (the API's English for a task the catalogue lacks). */
const taskText = (task, field) => tOr(`tasks.${field}_${task.id}`, task[field]);

const UNITS = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]];

/** A schedule as the API's `schedule_text` says it, in the console's language. */
function scheduleText(task) {
  const cron = task.schedule.cron;
  if (typeof cron === "string") return t("tasks.cron_text", { cron });
  const ms = task.schedule.every_ms;
  if (typeof ms !== "number") return task.schedule_text;
  const [unit, n] = UNITS.find(([, n]) => ms % n === 0) ?? ["ms", 1];
  return t("tasks.every_text", { d: `${ms / n}${unit}` });
}

/** While a run is in progress, `api` is read again every second, so its result shows up. */
function useReloadWhileRunning(api, running) {
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(api.reload, 1000);
    return () => clearTimeout(timer);
  }, [api.data, running]);
}

function Result({ run }) {
  if (!run) return html`<span class="muted">${t("tasks.never")}</span>`;
  return html`<${Badge} kind=${RESULT[run.result] ?? "plain"}>${
    t("tasks.result_" + run.result)
  }</${Badge}> ${fmtTime(run.started_at)}${
    run.duration_ms === null ? null : html`
      <small>(${run.duration_ms} ms)</small>
    `
  }${run.error ? html`<br /><small class="error-text">${run.error}</small>` : null}`;
}

function RunNow({ task, reload }) {
  const action = useAction();
  if (!can("write:ops")) return null;
  const run = () =>
    action.run(async () => {
      const r = await post(`/api/ops/tasks/${task.id}/run`);
      reload();
      return r;
    }, t("tasks.started"));
  return html`
    <button type="button" class="secondary small" id=${"run-" + task.id}
      disabled=${action.busy || task.running} onClick=${run}>${t("tasks.run_now")}</button>
    <${ErrorBox} error=${action.error} />
  `;
}

/** The settings as fields: text for strings, number for numbers, a checkbox for booleans. */
function SettingsFields({ id, settings, onChange }) {
  return Object.entries(settings).map(([key, value]) => {
    const fid = `setting-${id}-${key}`;
    const set = (v) => onChange({ ...settings, [key]: v });
    const label = t("tasks.setting_" + key);
    if (typeof value === "boolean") {
      return html`<${Field} id=${fid} label=${label} inline>
        <input id=${fid} type="checkbox" checked=${value} onChange=${(e) =>
        set(e.target.checked)} /></${Field}>`;
    }
    return html`<${Field} id=${fid} label=${label}>
      <input id=${fid} type=${typeof value === "number" ? "number" : "text"} step="any"
        value=${value} onInput=${(e) =>
      set(typeof value === "number" ? Number(e.target.value) : e.target.value)} /></${Field}>`;
  });
}

function Editor({ task, done }) {
  const cron = "cron" in task.schedule;
  const [kind, setKind] = useState(cron ? "cron" : "every");
  const [value, setValue] = useState(
    cron ? task.schedule.cron : `${Math.round(task.schedule.every_ms / 1000)}s`,
  );
  const [jitter, setJitter] = useState(String(Math.round(task.jitter_ms / 1000)));
  const [enabled, setEnabled] = useState(task.enabled);
  const [settings, setSettings] = useState(task.settings);
  const action = useAction();
  const id = task.id;
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      await put(`/api/ops/tasks/${id}`, {
        schedule: kind === "cron" ? { cron: value.trim() } : { every: value.trim() },
        jitter_ms: Number(jitter) * 1000,
        enabled,
        ...(Object.keys(settings).length > 0 ? { settings } : {}),
      });
      done();
    });
  };
  return html`
    <form class="panel" id=${"edit-" + id} onSubmit=${submit}>
      <h2>${t("tasks.edit", { task: taskText(task, "title") })}</h2>
      <${Field} id=${"kind-" + id} label=${t("tasks.schedule_kind")}>
          <select id=${"kind-" + id} value=${kind} onChange=${(e) => setKind(e.target.value)}>
            <option value="cron">${t("tasks.kind_cron")}</option>
            <option value="every">${t("tasks.kind_every")}</option>
          </select></${Field}>
        <${Field} id=${"value-" + id} label=${t(kind === "cron" ? "tasks.cron" : "tasks.every")}
          hint=${t(kind === "cron" ? "tasks.cron_hint" : "tasks.every_hint")}>
          <input id=${"value-" + id} value=${value} onInput=${(e) => setValue(e.target.value)} />
        </${Field}>
        <${Field} id=${"jitter-" + id} label=${t("tasks.jitter")} hint=${t("tasks.jitter_hint")}>
          <input id=${"jitter-" + id} type="number" min="0" value=${jitter} onInput=${(e) =>
            setJitter(e.target.value)} /></${Field}>
        <${Field} id=${"enabled-" + id} label=${t("common.enabled")} inline>
          <input id=${"enabled-" + id} type="checkbox" checked=${enabled} onChange=${(e) =>
            setEnabled(e.target.checked)} /></${Field}>
        <${SettingsFields} id=${id} settings=${settings} onChange=${setSettings} />
        <div class="actions">
          <button type="submit" disabled=${action.busy}>${t("common.save")}</button>
          <button type="button" class="secondary" onClick=${done}>${t("common.cancel")}</button>
        </div>
        <${ErrorBox} error=${action.error} />
      </form>
  `;
}

function History({ id }) {
  const task = useApi(`/api/ops/tasks/${id}`);
  const runs = useApi(`/api/ops/tasks/${id}/runs`, { limit: 100 });
  useReloadWhileRunning(
    runs,
    (runs.data?.items ?? []).some((r) => r.result === "running"),
  );
  return html`
    <${Page} title=${task.data ? taskText(task.data.item, "title") : id}
      actions=${html`<${Link} href="/console/ops-tasks">${t("tasks.back")}</${Link}>`}>
        <${Loading} state=${task} />
        ${task.data ? html`<p class="muted">${taskText(task.data.item, "description")}</p>` : null}
        <${Loading} state=${runs} />
        ${runs.data
          ? html`<${Table} caption=${t("tasks.history")} rows=${runs.data.items} empty=${
            t("tasks.no_runs")
          } columns=${[
            { label: t("tasks.started_at"), value: (r) => fmtTime(r.started_at) },
            { label: t("tasks.trigger"), value: (r) => t("tasks.trigger_" + r.trigger) },
            { label: t("tasks.actor"), value: (r) => r.actor ?? "-" },
            { label: t("tasks.result"), value: (r) => html`<${Result} run=${r} />` },
            {
              label: t("tasks.detail"),
              value: (r) => r.detail ? html`<code>${JSON.stringify(r.detail)}</code>` : "-",
              className: "wrap",
            },
          ]} />`
          : null}
      </${Page}>
  `;
}

export default function OpsTasks({ detail }) {
  const tasks = useApi(detail ? null : "/api/ops/tasks");
  const [editing, setEditing] = useState(null);
  const items = tasks.data?.items ?? [];
  useReloadWhileRunning(tasks, items.some((x) => x.running));
  if (detail) return html`<${History} id=${detail} />`;
  const current = items.find((x) => x.id === editing);
  return html`<${Page} title=${t("nav.ops-tasks")}>
    <p class="muted">${t("tasks.intro")}</p>
    ${can("write:ops") ? null : html`<${ReadOnlyNote} permission="write:ops" />`}
    <${Loading} state=${tasks} />
    ${
    current
      ? html`<${Editor} key=${current.id} task=${current} done=${() => {
        setEditing(null);
        tasks.reload();
      }} />`
      : null
  }
    ${
    tasks.data
      ? html`<${Table} rows=${items} columns=${[
        {
          label: t("tasks.task"),
          value: (x) =>
            html`<${Link} href=${"/console/ops-tasks/" + x.id}>${
              taskText(x, "title")
            }</${Link}><br /><small><code>${x.id}</code></small>`,
        },
        {
          label: t("tasks.schedule"),
          value: (x) =>
            html`<span id=${"task-schedule-" + x.id}>${scheduleText(x)}</span>${
              x.jitter_ms > 0
                ? html`<br /><small>${
                  t("tasks.jitter_of", { s: Math.round(x.jitter_ms / 1000) })
                }</small>`
                : null
            }`,
        },
        {
          label: t("common.enabled"),
          value: (x) =>
            html`<${Badge} kind=${x.enabled ? "good" : "plain"}>${
              x.enabled ? t("common.yes") : t("common.no")
            }</${Badge}>`,
        },
        { label: t("tasks.next"), value: (x) => x.next_run_at ? fmtTime(x.next_run_at) : "-" },
        {
          label: t("tasks.last"),
          value: (x) =>
            x.running
              ? html`<${Badge} kind="warn">${t("tasks.result_running")}</${Badge}>`
              : html`<${Result} run=${x.last_run} />`,
          className: "wrap",
        },
        {
          label: t("common.actions"),
          value: (x) =>
            html`<${RunNow} task=${x} reload=${tasks.reload} />${
              can("write:ops")
                ? html`
                  <button type="button" class="secondary small" id=${"edit-button-" + x.id}
                    onClick=${() => setEditing(x.id)}>${t("common.edit")}</button>
                `
                : null
            }`,
        },
      ]} />`
      : null
  }
  </${Page}>`;
}
