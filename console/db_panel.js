// The management database and the deployment's controllers, as the System page (GET
// /api/system/storage) and the Storage page (`management` of GET /api/storage) show them: the
// profile, the engine, where the database is (its DSN with the password masked, or the SQLite
// file), the schema version, whether it answers and the latency of one round trip; and per
// controller its address, version, heartbeat and the scheduled tasks whose lease it holds.
import { Badge, Table } from "./components.js";
import { fmtTime, t } from "./i18n.js";
import { html } from "./lib/ui.js";

const STATE_KIND = { ok: "good", unavailable: "bad", starting: "warn" };

export function DatabasePanel({ facts }) {
  const f = facts;
  const db = f.database;
  return html`
    <div class="panel" id="management-db">
      <h2>${t("db.title")}</h2>
      <dl class="facts" id="management-db-facts">
        <dt>${t("db.profile")}</dt>
        <dd id="db-profile"><code>storage.profile: ${f.profile}</code></dd>
        <dt>${t("db.engine")}</dt>
        <dd id="db-engine">${f.engine === "postgresql" ? "PostgreSQL" : "SQLite"}</dd>
        <dt>${t("db.database")}</dt>
        <dd id="db-location"><code>${db.location}</code>${db.schema
          ? ` (${t("db.schema", { schema: db.schema })})`
          : null}</dd>
        <dt>${t("db.schema_version")}</dt>
        <dd id="db-schema-version">${db.schema_version ?? "-"}</dd>
        <dt>${t("db.state")}</dt>
        <dd id="db-state">
          <${Badge} kind=${STATE_KIND[f.state] ?? "plain"}>${t(
            "db.state_" + f.state,
          )}</${Badge}></dd>
          <dt>${t("db.latency")}</dt>
          <dd id="db-latency">${f.latency_ms === null ? "-" : `${f.latency_ms} ms`}</dd>
        </dl>
        ${f.available ? null : html`<p class="notice" id="db-down">${t("db.down")}</p>`}
      </div>
  `;
}

export function ControllersPanel({ controllers }) {
  return html`<div class="panel" id="controllers">
    <h2>${t("db.controllers")}</h2>
    <p class="muted">${t("db.controllers_explain")}</p>
    ${
    controllers === null
      ? html`<p class="notice" id="controllers-unknown">${t("db.controllers_unknown")}</p>`
      : html`<${Table} rowKey=${(c) => c.id} rows=${controllers} columns=${[
        {
          label: t("db.name"),
          value: (c) =>
            html`${c.name || c.id} ${
              c.self ? html`<${Badge} kind="info">${t("db.self")}</${Badge}>` : null
            }`,
        },
        {
          label: t("db.address"),
          value: (c) => html`<code>${c.management_address || "-"}</code>`,
          className: "wrap",
        },
        { label: t("db.version"), key: "version" },
        {
          label: t("db.alive"),
          value: (c) =>
            c.alive
              ? html`<${Badge} kind="good">${t("common.yes")}</${Badge}>`
              : html`<${Badge} kind="bad">${t("common.no")}</${Badge}>`,
        },
        { label: t("db.last_seen"), value: (c) => fmtTime(c.last_seen_at) },
        {
          label: t("db.tasks"),
          value: (c) =>
            c.tasks.length === 0
              ? "-"
              : c.tasks.flatMap((task, i) => [i > 0 ? ", " : null, html`<code>${task}</code>`]),
          className: "wrap",
        },
      ]} />`
  }
  </div>`;
}
