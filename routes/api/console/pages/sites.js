// Sites: list, create, edit (hosts, upstreams, mode, level, TLS certificate, limits, timeouts,
// trusted proxies), delete with confirmation, and each site's certificate state.
import { Badge, Page } from "../components.js";
import { Crud } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { html } from "../lib/ui.js";

const opts = (prefix, values) => values.map((v) => ({ value: v, label: prefix + v }));

const FIELDS = [
  { name: "name", label: "sites.name", type: "text", required: true },
  { name: "hosts", label: "sites.hosts", type: "lines", hint: "sites.hosts_hint", required: true },
  {
    name: "upstreams",
    label: "sites.upstreams",
    type: "lines",
    hint: "sites.upstreams_hint",
    required: true,
  },
  {
    name: "mode",
    label: "sites.mode",
    type: "select",
    options: opts("sites.mode_", ["block", "monitor", "off"]),
  },
  {
    name: "level",
    label: "sites.level",
    type: "select",
    options: opts("sites.level_", ["low", "balanced", "strict"]),
  },
  {
    name: "tls.cert",
    label: "sites.tls_cert",
    type: "textarea",
    upload: true,
    hint: "sites.tls_cert_hint",
  },
  {
    name: "tls.key",
    label: "sites.tls_key",
    type: "textarea",
    upload: true,
    hint: "sites.tls_key_hint",
  },
  { name: "max_body_bytes", label: "sites.max_body", type: "number" },
  { name: "inspect_body_bytes", label: "sites.inspect_body", type: "number" },
  { name: "timeouts.connect_ms", label: "sites.connect_ms", type: "number" },
  { name: "timeouts.response_ms", label: "sites.response_ms", type: "number" },
  {
    name: "trusted_proxies",
    label: "sites.trusted_proxies",
    type: "lines",
    hint: "sites.trusted_hint",
  },
];

/** No certificate means no TLS; a certificate without a key keeps the stored key. */
function prepare(doc) {
  if (!doc.tls?.cert) return { ...doc, tls: null };
  return doc;
}

const STATE = { valid: "good", expiring: "warn", expired: "bad", not_yet_valid: "warn" };

function Certificate({ site }) {
  const c = site.tls?.certificate;
  if (!c) return html`<span class="muted">${t("sites.no_tls")}</span>`;
  return html`<${Badge} kind=${STATE[c.state]}>${t("sites.cert_" + c.state)}</${Badge}>
    <span class="muted"> ${t("sites.until", { time: fmtTime(c.not_after) })}</span>`;
}

export default function Sites() {
  return html`
    <${Page} title=${t("nav.sites")}>
      <${Crud} base="/api/sites" write="write:sites" fields=${FIELDS} prepare=${prepare}
        name=${(s) => s.name} newLabel=${t("sites.new")} columns=${[
          { label: t("sites.name"), key: "name" },
          { label: t("sites.hosts"), value: (s) => s.hosts.join(", "), className: "wrap" },
          {
            label: t("sites.upstreams"),
            value: (s) => s.upstreams.join(", "),
            className: "mono wrap",
          },
          { label: t("sites.mode"), value: (s) => t("sites.mode_" + s.mode) },
          { label: t("sites.level"), value: (s) => t("sites.level_" + s.level) },
          { label: t("sites.certificate"), value: (s) => html`<${Certificate} site=${s} />` },
        ]} />
      </${Page}>
  `;
}
