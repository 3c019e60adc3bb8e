// Storage: the management database (engine, where it is, state and latency), the local store
// file (the whole store on the temporary profile, this controller's access log on production)
// and the disk, rows and the oldest record per table, the access-log
// pipeline and its PostgreSQL sink, usage by kind, and (write:storage) the Redis connectivity
// test, the sink's run-time configuration (the DSN is write-only) and the disk clean-up.
import { post, put } from "../api.js";
import {
  Badge,
  ConfirmButton,
  Done,
  ErrorBox,
  Field,
  Loading,
  Page,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { DatabasePanel } from "../db_panel.js";
import { fmtNumber, fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

function bytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

function RedisResult({ result }) {
  if (!result) return html`<p class="muted">${t("storage.redis_never")}</p>`;
  return html`
    <p role="status" id="redis-result">
      <${Badge}
        kind=${result.ok ? "good" : "bad"}>${result.ok
          ? t("storage.redis_ok")
          : t("storage.redis_failed")}</${Badge}> ${result.endpoint}${result.ok
          ? ` - ${
            t("storage.redis_version", { version: result.version ?? "?" })
          }, ${result.latency_ms} ms`
          : ` - ${result.error}`} <small>(${fmtTime(result.tested_at)})</small></p>
  `;
}

function Redis({ redis, reload }) {
  const action = useAction();
  const [result, setResult] = useState(redis.last_test);
  const test = () =>
    action.run(async () => {
      setResult(await post("/api/storage/redis/test"));
      reload();
    });
  return html`<div class="panel" id="redis">
    <h2>Redis</h2>
    ${
    redis.configured
      ? html`<p>${t("storage.redis_endpoint")}: <code>${redis.endpoint}</code></p>
        <${RedisResult} result=${result} />
        ${
        can("write:storage")
          ? html`
            <button type="button" id="redis-test" class="secondary" disabled=${action.busy}
              onClick=${test}>${t("storage.redis_test")}</button>
          `
          : null
      }`
      : html`<p class="muted">${t("storage.redis_none")}</p>`
  }
    <${ErrorBox} error=${action.error} />
  </div>`;
}

function SinkForm({ sink, reload }) {
  const action = useAction();
  const [enabled, setEnabled] = useState(sink.enabled);
  const [dsn, setDsn] = useState("");
  const [batch, setBatch] = useState(String(sink.batch_size));
  const save = (e) => {
    e.preventDefault();
    action.run(async () => {
      const body = { enabled, batch_size: Number(batch) };
      if (dsn !== "") body.dsn = dsn;
      const r = await put("/api/storage/sink", body);
      setDsn("");
      reload();
      return r;
    }, t("storage.sink_saved"));
  };
  const reset = () =>
    action.run(async () => {
      await put("/api/storage/sink", { reset: true });
      reload();
    }, t("storage.sink_saved"));
  return html`
    <form class="panel" id="sink-form" onSubmit=${save}>
      <h2>${t("storage.sink_title")}</h2>
      <p id="sink-source">${t("storage.sink_source_" + sink.source)}${sink.dsn
        ? html`: <code>${sink.dsn}</code>`
        : null}</p>
      <${Field} id="sink-enabled" label=${t("storage.sink_enabled")} inline>
        <input type="checkbox" id="sink-enabled" checked=${enabled}
          onChange=${(e) => setEnabled(e.target.checked)} />
        </${Field}>
        <${Field} id="sink-dsn" label=${t("storage.sink_dsn")} hint=${t("storage.sink_dsn_hint")}>
          <input type="password" id="sink-dsn" autocomplete="off" value=${dsn}
            aria-describedby="sink-dsn-hint" placeholder=${sink.dsn ??
              "postgres://user:password@host:5432/db"}
            onInput=${(e) => setDsn(e.target.value)} />
          </${Field}>
          <${Field} id="sink-batch" label=${t("storage.sink_batch")}>
            <input type="number" id="sink-batch" min="1" max="10000" value=${batch}
              onInput=${(e) => setBatch(e.target.value)} />
            </${Field}>
            <div class="actions">
          <button type="submit" id="sink-save" disabled=${action.busy}>${t(
            "storage.sink_save",
          )}</button>
          ${sink.source === "api"
            ? html`
              <button type="button" id="sink-reset" class="secondary" disabled=${action.busy}
                onClick=${reset}>${t("storage.sink_reset")}</button>
            `
            : null}
        </div>
            <${ErrorBox} error=${action.error} />
            <${Done} text=${action.done} />
            </form>
  `;
}

function CleanupReport({ result }) {
  const files = (k) => result[k] ? result[k].files.length : null;
  return html`<p role="status" id="cleanup-result">${
    t(
      result.dry_run ? "storage.cleanup_would" : "storage.cleanup_did",
      {
        rows: fmtNumber(result.access_logs?.rows ?? 0),
        files: fmtNumber(
          (files("runtime_logs") ?? 0) + (files("backups") ?? 0) + (files("support_packs") ?? 0),
        ),
        bytes: bytes(result.freed_bytes),
      },
    )
  }</p>`;
}

function Cleanup({ reload }) {
  const action = useAction();
  const [values, setValues] = useState({
    before: "",
    logs: "30",
    backups: "",
    packs: "30",
  });
  const [result, setResult] = useState(null);
  const set = (k) => (e) => setValues({ ...values, [k]: e.target.value });
  const body = (dryRun) => {
    const b = { dry_run: dryRun };
    if (values.before) b.access_logs_before = values.before;
    if (values.logs) b.runtime_logs_older_than_days = Number(values.logs);
    if (values.backups) b.backups_older_than_days = Number(values.backups);
    if (values.packs) b.support_packs_older_than_days = Number(values.packs);
    return b;
  };
  const run = (dryRun) =>
    action.run(async () => {
      setResult(await post("/api/storage/cleanup", body(dryRun)));
      if (!dryRun) reload();
    });
  const days = (k, id, label) =>
    html`
      <${Field} id=${id} label=${label} hint=${t("storage.cleanup_days_hint")}>
        <input type="number" id=${id} min="0" value=${values[k]} onInput=${set(k)}
          aria-describedby=${id + "-hint"} />
        </${Field}>
    `;
  return html`
    <div class="panel" id="cleanup">
      <h2>${t("storage.cleanup_title")}</h2>
      <${Field} id="cleanup-before" label=${t("storage.cleanup_before")}>
          <input type="date" id="cleanup-before" value=${values.before} onInput=${set("before")} />
        </${Field}>
        ${days("logs", "cleanup-logs", t("storage.cleanup_logs"))}
        ${days("backups", "cleanup-backups", t("storage.cleanup_backups"))}
        ${days("packs", "cleanup-packs", t("storage.cleanup_packs"))}
        <div class="actions">
          <button type="button" id="cleanup-dry" class="secondary" disabled=${action.busy}
            onClick=${() => run(true)}>${t("storage.cleanup_dry")}</button>
          <${ConfirmButton} id="cleanup-run" label=${t("storage.cleanup_run")}
            question=${t("storage.cleanup_confirm")} disabled=${action.busy}
            onConfirm=${() => run(false)} />
        </div>
        ${result ? html`<${CleanupReport} result=${result} />` : null}
        <${ErrorBox} error=${action.error} />
      </div>
  `;
}

export default function Storage() {
  const state = useApi("/api/storage");
  const s = state.data;
  return html`<${Page} title=${t("nav.storage")}>
    <${Loading} state=${state} />
    ${
    s
      ? html`
        <${DatabasePanel} facts=${s.management} />
        <dl class="facts" id="store">
          <dt>${t(s.store.contents === "access_log" ? "storage.local_log" : "storage.store")}</dt>
          <dd><code>${s.store.path}</code>: ${bytes(s.store.bytes)} (WAL ${bytes(
            s.store.wal_bytes,
          )})</dd>
          <dt>${t("storage.disk")}</dt>
          <dd>${s.disk
            ? t("storage.disk_free", {
              free: bytes(s.disk.free_bytes),
              total: bytes(s.disk.total_bytes),
            })
            : "-"}</dd>
          <dt>${t("storage.access_log")}</dt>
          <dd>${t("storage.access_log_counts", {
            queued: fmtNumber(s.access_log.queued),
            written: fmtNumber(s.access_log.written),
            dropped: fmtNumber(s.access_log.dropped),
          })}</dd>
          <dt>PostgreSQL</dt>
          <dd id="pg-sink">${s.postgresql
            ? html`<${Badge} kind=${s.postgresql.up ? "good" : "bad"}>${
              s.postgresql.up ? t("storage.pg_up") : t("storage.pg_down")
            }</${Badge}> ${
              t("storage.pg_figures", {
                lag: fmtNumber(s.postgresql.lag_rows),
                seconds: Math.round(s.postgresql.lag_seconds),
                shipped: fmtNumber(s.postgresql.shipped_rows),
              })
            }${
              s.postgresql.last_error ? html`<br /><small>${s.postgresql.last_error}</small>` : null
            }`
            : t("storage.pg_none")}</dd>
        </dl>
        <${Table} caption=${t("storage.tables")} rowKey=${(r) => r.table} rows=${s
          .tables} columns=${[
          { label: t("storage.table"), value: (r) => html`<code>${r.table}</code>` },
          { label: t("storage.rows"), value: (r) => fmtNumber(r.rows) },
          { label: t("storage.oldest"), value: (r) => fmtTime(r.oldest) },
        ]} />
        <${Table} caption=${t("storage.usage")} rowKey=${(r) => r.kind} rows=${Object.entries(
          s.usage,
        ).map(([kind, u]) => ({ kind, ...u }))} columns=${[
          { label: t("storage.kind"), value: (r) => t("storage.kind_" + r.kind) },
          {
            label: t("storage.folder"),
            value: (r) => html`<code>${r.folder}</code>`,
            className: "wrap",
          },
          { label: t("storage.files"), value: (r) => fmtNumber(r.files) },
          { label: t("storage.size"), value: (r) => bytes(r.bytes) },
        ]} />
        <${Redis} redis=${s.redis} reload=${state.reload} />
        ${can("write:storage")
          ? html`
            <${SinkForm} key=${JSON.stringify(s.sink)} sink=${s.sink} reload=${state.reload} />
            <${Cleanup} reload=${state.reload} />
          `
          : html`<p id="sink-source">${t("storage.sink_source_" + s.sink.source)}${
            s.sink.dsn ? html`: <code>${s.sink.dsn}</code>` : null
          }</p>`}
      `
      : null
  }
  </${Page}>`;
}
