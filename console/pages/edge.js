// Edge settings: response header rules, the static cache (with its statistics and purge) and
// response compression.
import { post } from "../api.js";
import { ErrorBox, Page, useAction, useApi } from "../components.js";
import { Crud, SettingForm } from "../crud.js";
import { fmtNumber, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

const OPS = ["set", "add", "remove"];

const HEADER_FIELDS = [
  { name: "site_id", label: "common.site", type: "site" },
  { name: "path_prefix", label: "common.path_prefix", type: "text", default: "/" },
  {
    name: "op",
    label: "edge.op",
    type: "select",
    options: OPS.map((o) => ({ value: o, label: "edge.op_" + o })),
  },
  { name: "name", label: "edge.header", type: "text", required: true },
  { name: "value", label: "edge.value", type: "text", empty: "empty" },
];

const SETTINGS_FIELDS = [
  { name: "cache.enabled", label: "edge.cache_enabled", type: "checkbox" },
  { name: "cache.max_bytes", label: "edge.cache_max", type: "number" },
  { name: "cache.max_object_bytes", label: "edge.cache_object", type: "number" },
  {
    name: "cache.paths",
    label: "edge.cache_paths",
    type: "lines",
    empty: "empty",
    hint: "edge.cache_paths_hint",
  },
  { name: "compression.gzip", label: "edge.gzip", type: "checkbox" },
  { name: "compression.brotli", label: "edge.brotli", type: "checkbox" },
  { name: "compression.min_bytes", label: "edge.min_bytes", type: "number" },
  {
    name: "compression.types",
    label: "edge.types",
    type: "lines",
    empty: "empty",
    hint: "edge.types_hint",
  },
];

/** Cache paths as lines: "/prefix" for every site, or "<site id> /prefix". */
function load(doc) {
  const paths = doc.cache.paths.map((
    p,
  ) => (p.site_id ? `${p.site_id} ${p.path_prefix}` : p.path_prefix));
  return { ...doc, cache: { ...doc.cache, paths } };
}

function prepare(doc) {
  const paths = doc.cache.paths.map((line) => {
    const [a, b] = line.split(/\s+/);
    return b === undefined ? { site_id: null, path_prefix: a } : { site_id: a, path_prefix: b };
  });
  return { ...doc, cache: { ...doc.cache, paths } };
}

function CacheStats() {
  const stats = useApi("/api/edge/cache");
  const action = useAction();
  // The purge's answer: `complete: false` when some data-plane workers did not answer within
  // the API's second (they still purge, uncounted), which is not shown as a success.
  const [answer, setAnswer] = useState(null);
  const purge = async () => {
    setAnswer(null);
    const done = await action.run(async () => {
      const body = await post("/api/edge/cache/purge", { site_id: null, path_prefix: null });
      stats.reload();
      return body;
    });
    if (done) setAnswer(done);
  };
  const status = answer === null
    ? null
    : answer.complete === false
    ? html`<p class="notice warn-note" role="status" id="cache-purge-status">${
      t("edge.purged_partial", { n: answer.unanswered_workers })
    }</p>`
    : html`<p class="done" role="status" id="cache-purge-status">${t("edge.purged")}</p>`;
  return html`<div class="panel">
    <h2>${t("edge.cache_stats")}</h2>
    ${
    stats.data
      ? html`<dl class="facts">${
        Object.entries(stats.data).map(([k, v]) =>
          html`
            <dt>${k}</dt>
            <dd>${typeof v === "number" ? fmtNumber(v) : String(v)}</dd>
          `
        )
      }</dl>`
      : null
  }
    <${ErrorBox} error=${stats.error ?? action.error} />${status}
    ${
    can("write:edge")
      ? html`<button type="button" class="secondary" onClick=${purge}>${t("edge.purge")}</button>`
      : null
  }
  </div>`;
}

export default function Edge() {
  return html`
    <${Page} title=${t("nav.edge")}>
      <h2>${t("edge.headers")}</h2>
      <${Crud} empty=${t(
        "edge.empty",
      )} base="/api/edge/header-rules" write="write:edge" fields=${HEADER_FIELDS}
        headAction=${false}
        name=${(r) => r.name} newLabel=${t("edge.new_header")} columns=${[
          { label: t("common.path_prefix"), key: "path_prefix", className: "mono" },
          { label: t("edge.op"), value: (r) => t("edge.op_" + r.op) },
          { label: t("edge.header"), key: "name", className: "mono" },
          { label: t("edge.value"), key: "value", className: "mono wrap" },
        ]} />
      <h2>${t("edge.settings")}</h2>
      <${SettingForm} path="/api/edge/settings" write="write:edge" fields=${SETTINGS_FIELDS}
        load=${load} prepare=${prepare} idPrefix="edge" />
      <${CacheStats} />
      </${Page}>
  `;
}
