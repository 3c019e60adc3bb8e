// Threat-intelligence feeds (by URL or uploaded), their last sync, "sync now", and a lookup of
// one address against the indicators the data plane enforces now.
import { post } from "../api.js";
import { Badge, ErrorBox, Field, Page, useAction } from "../components.js";
import { Crud } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

const FORMATS = ["plain", "csv", "json"];
const ACTIONS = ["block", "challenge", "log"];

const FIELDS = [
  { name: "name", label: "common.name", type: "text", required: true },
  { name: "url", label: "feeds.url", type: "text", empty: "null", hint: "feeds.url_hint" },
  {
    name: "content",
    label: "feeds.content",
    type: "textarea",
    upload: true,
    empty: "null",
    hint: "feeds.content_hint",
  },
  {
    name: "format.kind",
    label: "feeds.format",
    type: "select",
    options: FORMATS.map((f) => ({ value: f, label: "feeds.format_" + f })),
  },
  { name: "format.column", label: "feeds.column", type: "text", hint: "feeds.column_hint" },
  { name: "format.delimiter", label: "feeds.delimiter", type: "text" },
  { name: "format.field", label: "feeds.field", type: "text", hint: "feeds.field_hint" },
  {
    name: "action",
    label: "feeds.action",
    type: "select",
    options: ACTIONS.map((a) => ({ value: a, label: "action." + a })),
  },
  { name: "refresh_minutes", label: "feeds.refresh", type: "number" },
  { name: "enabled", label: "common.enabled", type: "checkbox", default: true },
];

/** Only the format's own keys are sent; a numeric CSV column is a column number. */
function prepare(doc) {
  const f = doc.format ?? { kind: "plain" };
  const format = f.kind === "csv"
    ? {
      kind: "csv",
      column: /^\d+$/.test(f.column ?? "") ? Number(f.column) : (f.column ?? 0),
      ...(f.delimiter ? { delimiter: f.delimiter } : {}),
    }
    : f.kind === "json"
    ? { kind: "json", ...(f.field ? { field: f.field } : {}) }
    : { kind: "plain" };
  return { ...doc, format };
}

const RESULT = { ok: "good", error: "bad", never: "plain" };

function SyncNow({ feed, reload }) {
  const action = useAction();
  if (!can("write:threat_intel")) return null;
  const sync = () =>
    action.run(async () => {
      await post(`/api/threat-intel/feeds/${feed.id}/sync`);
      reload();
    });
  return html`<button type="button" class="secondary small" disabled=${action.busy} onClick=${sync}>
    ${t("feeds.sync")}</button><${ErrorBox} error=${action.error} />`;
}

function Lookup() {
  const [ip, setIp] = useState("");
  const [answer, setAnswer] = useState(null);
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => setAnswer(await post("/api/threat-intel/lookup", { ip: ip.trim() })));
  };
  return html`
    <form class="panel" onSubmit=${submit}>
      <h2>${t("feeds.lookup")}</h2>
      <${Field} id="lookup-ip" label=${t("logs.client_ip")}>
          <input id="lookup-ip" value=${ip} onInput=${(e) => setIp(e.target.value)} />
        </${Field}>
        <button type="submit" disabled=${action.busy || ip === ""}>${t("feeds.check")}</button>
        <${ErrorBox} error=${action.error} />
        ${answer
          ? html`<p role="status">${
            answer.listed
              ? t("feeds.listed", {
                ip: answer.ip,
                feeds: answer.feeds.map((f) => f.name).join(", "),
              })
              : t("feeds.not_listed", { ip: answer.ip })
          }</p>`
          : null}
      </form>
  `;
}

export default function ThreatFeeds() {
  return html`
    <${Page} title=${t("nav.threat-feeds")}>
      <p class="muted">${t("feeds.intro")}</p>
      <${Crud} empty=${t("feeds.empty")} base="/api/threat-intel/feeds" write="write:threat_intel"
        fields=${FIELDS}
        prepare=${prepare} name=${(f) => f.name} newLabel=${t("feeds.new")}
        rowActions=${(f, reload) => html`<${SyncNow} feed=${f} reload=${reload} />`} columns=${[
          { label: t("common.name"), key: "name" },
          {
            label: t("feeds.source"),
            value: (f) => f.url ?? t("feeds.uploaded"),
            className: "wrap",
          },
          { label: t("feeds.action"), value: (f) => t("action." + f.action) },
          {
            label: t("feeds.last_sync"),
            value: (f) =>
              html`<${Badge} kind=${RESULT[f.status.last_result]}>${
                t("feeds.result_" + f.status.last_result)
              }</${Badge}>
        ${" "}${fmtTime(f.status.last_sync_at)}${
                f.status.error ? html`<br /><small>${f.status.error}</small>` : null
              }`,
          },
          { label: t("feeds.count"), value: (f) => f.status.count },
        ]} />
      <${Lookup} />
      </${Page}>
  `;
}
