// Storage: the store's files and the disk, rows and the oldest record per table, the access-log
// pipeline and its PostgreSQL sink, usage by kind, and the Redis connectivity test (write:storage).
import { post } from "../api.js";
import { Badge, ErrorBox, Loading, Page, Table, useAction, useApi } from "../components.js";
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

export default function Storage() {
  const state = useApi("/api/storage");
  const s = state.data;
  return html`<${Page} title=${t("nav.storage")}>
    <${Loading} state=${state} />
    ${
    s
      ? html`
        <dl class="facts" id="store">
          <dt>${t("storage.store")}</dt>
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
      `
      : null
  }
  </${Page}>`;
}
