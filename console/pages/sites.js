// Sites: list, create, edit (hosts, upstreams, mode, level, upstream kind, TLS certificate, limits,
// timeouts, trusted proxies), delete with confirmation, each site's certificate state, and its certificate
// panel: issuer, names, expiry, the ACME state and (write:sites) an ACME order. `/console/sites/first`
// is the guided first site (first_site.js).
import { post } from "../api.js";
import { Badge, ErrorBox, Field, Page, useAction, useApi } from "../components.js";
import { Crud } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";
import { FirstSite } from "./first_site.js";

const opts = (prefix, values) => values.map((v) => ({ value: v, label: prefix + v }));

const FIELDS = [
  {
    name: "name",
    label: "sites.name",
    type: "text",
    required: true,
    invalid: "sites.name_invalid",
  },
  {
    name: "hosts",
    label: "sites.hosts",
    type: "lines",
    hint: "sites.hosts_hint",
    required: true,
    invalid: "sites.hosts_invalid",
  },
  {
    name: "upstreams",
    label: "sites.upstreams",
    type: "lines",
    hint: "sites.upstreams_hint",
    required: true,
    invalid: "sites.upstreams_invalid",
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
    // "" sends no level: the API gives the level chosen at setup (balanced unless changed there).
    options: [
      { value: "", label: "sites.level_default" },
      ...opts("sites.level_", ["low", "balanced", "strict"]),
    ],
  },
  {
    name: "upstream_kind",
    label: "sites.upstream_kind",
    type: "select",
    hint: "sites.upstream_kind_hint",
    options: opts("sites.upstream_kind_", ["generic", "nginx", "apache", "iis", "java", "node"]),
  },
  {
    name: "tls.cert",
    label: "sites.tls_cert",
    type: "textarea",
    upload: true,
    hint: "sites.tls_cert_hint",
    invalid: "sites.tls_cert_invalid",
    // "tls": the certificate and key do not load as a pair.
    paths: ["tls"],
  },
  {
    name: "tls.key",
    label: "sites.tls_key",
    type: "textarea",
    upload: true,
    hint: "sites.tls_key_hint",
    invalid: "sites.tls_key_invalid",
  },
  { name: "max_body_bytes", label: "sites.max_body", type: "number" },
  { name: "inspect_body_bytes", label: "sites.inspect_body", type: "number" },
  {
    // What happens past what the engine judges; "" sends none: the level's default.
    name: "oversize_action",
    label: "sites.oversize",
    type: "select",
    hint: "sites.oversize_hint",
    options: [
      { value: "", label: "sites.oversize_default" },
      ...opts("sites.oversize_", ["block", "log", "pass"]),
    ],
  },
  { name: "timeouts.connect_ms", label: "sites.connect_ms", type: "number" },
  { name: "timeouts.response_ms", label: "sites.response_ms", type: "number" },
  {
    name: "trusted_proxies",
    label: "sites.trusted_proxies",
    type: "lines",
    hint: "sites.trusted_hint",
    invalid: "sites.trusted_invalid",
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

const ACME_STATUS = { valid: "good", pending: "warn", failed: "bad" };

function AcmeState({ acme }) {
  if (!acme) return html`<p class="muted" id="acme-state">${t("sites.acme_never")}</p>`;
  return html`
    <dl class="facts" id="acme-state">
      <dt>${t("sites.acme_status")}</dt>
      <dd>
        <${Badge} kind=${ACME_STATUS[acme.status]}>${t("sites.acme_" + acme.status)}</${Badge}></dd>
        <dt>${t("sites.acme_directory")}</dt><dd><code>${acme.directory}</code></dd>
        <dt>${t("sites.acme_renew_after")}</dt><dd>${fmtTime(acme.renew_after)}</dd>
        <dt>${t("sites.acme_last_attempt")}</dt><dd>${fmtTime(acme.last_attempt_at)}</dd>
        ${acme.last_error
          ? html`
            <dt>${t("sites.acme_last_error")}</dt>
            <dd id="acme-error" class="wrap">${acme
              .last_error}</dd>
          `
          : null}
      </dl>
  `;
}

function AcmeOrder({ site, reload }) {
  const action = useAction();
  const [directory, setDirectory] = useState("production");
  const [custom, setCustom] = useState("");
  const [email, setEmail] = useState("");
  const [ca, setCa] = useState("");
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const body = { directory: directory === "custom" ? custom : directory };
      if (email) body.email = email;
      if (directory === "custom" && ca) body.directory_ca = ca;
      await post(`/api/sites/${site.id}/certificate/acme`, body);
    }, t("sites.acme_done")).finally(reload);
  };
  return html`
    <form id="acme-form" onSubmit=${submit}>
      <${Field} id="acme-directory" label=${t("sites.acme_directory")}>
          <select id="acme-directory" value=${directory}
            onChange=${(e) => setDirectory(e.target.value)}>
            <option value="production">${t("sites.acme_production")}</option>
            <option value="staging">${t("sites.acme_staging")}</option>
            <option value="custom">${t("sites.acme_custom")}</option>
          </select>
        </${Field}>
        ${directory === "custom"
          ? html`
            <${Field} id="acme-url" label=${t("sites.acme_url")}>
              <input type="url" id="acme-url" value=${custom} required
                onInput=${(e) => setCustom(e.target.value)} />
              </${Field}>
              <${Field} id="acme-ca" label=${t("sites.acme_ca")} hint=${t("sites.acme_ca_hint")}>
                <textarea id="acme-ca" rows="4" aria-describedby="acme-ca-hint" value=${ca}
                  onInput=${(e) => setCa(e.target.value)}></textarea>
                </${Field}>
          `
          : null}
        <${Field} id="acme-email" label=${t("sites.acme_email")}>
          <input type="email" id="acme-email" value=${email}
            onInput=${(e) => setEmail(e.target.value)} />
        </${Field}>
        <p class="hint">${t("sites.acme_hint", { hosts: site.hosts.join(", ") })}</p>
        <button type="submit" id="acme-request" disabled=${action.busy}>${action.busy
          ? t("sites.acme_busy")
          : t("sites.acme_request")}</button>
        <${ErrorBox} error=${action.error} />
      </form>
  `;
}

/** A site's certificate: what it says, its ACME state, and an ACME order. */
function CertificatePanel({ site, close, reloadList }) {
  const state = useApi(`/api/sites/${site.id}/certificate/acme`);
  const view = useApi(`/api/sites/${site.id}`);
  const c = (view.data?.item ?? view.data)?.tls?.certificate;
  const reload = () => {
    state.reload();
    view.reload();
    reloadList();
  };
  return html`<div class="panel" id="certificate-panel">
    <h2>${t("sites.cert_title", { name: site.name })}</h2>
    ${
    c
      ? html`
        <dl class="facts" id="cert-facts">
          <dt>${t("sites.cert_issuer")}</dt>
          <dd>${c.issuer}</dd>
          <dt>${t("sites.cert_names")}</dt>
          <dd>${c.names.join(", ")}</dd>
          <dt>${t("sites.cert_expiry")}</dt>
          <dd>${fmtTime(c.not_after)}</dd>
        </dl>
      `
      : html`<p class="muted" id="cert-facts">${t("sites.no_tls")}</p>`
  }
    <h3>ACME</h3>
    ${state.data ? html`<${AcmeState} acme=${state.data.acme} />` : null}
    ${can("write:sites") ? html`<${AcmeOrder} site=${site} reload=${reload} />` : null}
    <button type="button" class="secondary" id="certificate-close" onClick=${close}>${
    t("common.close")
  }</button>
  </div>`;
}

export default function Sites({ detail }) {
  return detail === "first" ? html`<${FirstSite} />` : html`<${SiteList} />`;
}

function SiteList() {
  const [open, setOpen] = useState(null);
  const guided = can("write:sites")
    ? html`
      <a href="/console/sites/first" class="button-link" id="sites-guided">${t("sites.guided")}</a>
    `
    : null;
  return html`
    <${Page} title=${t("nav.sites")} actions=${guided}>
      <${Crud} empty=${t(
        "sites.empty",
      )} base="/api/sites" write="write:sites" fields=${FIELDS} prepare=${prepare}
        name=${(s) => s.name} newLabel=${t("sites.new")} rowActions=${(s, reload) =>
          html`
            <button type="button" class="secondary small" id=${"certificate-" + s.id}
              onClick=${() => setOpen({ site: s, reload })}>${t("sites.certificate")}</button>
          `} columns=${[
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
      ${open
        ? html`
          <${CertificatePanel} key=${open.site.id} site=${open.site}
            close=${() => setOpen(null)} reloadList=${open.reload} />
        `
        : null}
      </${Page}>
  `;
}
