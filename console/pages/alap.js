// ALAP decisions: what the adaptive layer proposes (temporary blocks, bans, signature blocks,
// exceptions), approve, reject or revoke each; and the ALAP policy.
import { post } from "../api.js";
import { Badge, ErrorBox, Field, Loading, Page, Table, useAction, useApi } from "../components.js";
import { SettingForm } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

const STATUSES = ["proposed", "applied", "rejected", "revoked", "expired", ""];
const KIND = {
  proposed: "warn",
  applied: "good",
  rejected: "plain",
  revoked: "plain",
  expired: "plain",
};

const POLICY = [
  { name: "enabled", label: "common.enabled", type: "checkbox" },
  { name: "auto_apply", label: "alap.auto_apply", type: "checkbox" },
  { name: "client_window_seconds", label: "alap.client_window", type: "number" },
  { name: "client_score_threshold", label: "alap.client_threshold", type: "number" },
  { name: "temp_block_minutes", label: "alap.temp_block", type: "number" },
  { name: "global_sites", label: "alap.global_sites", type: "number" },
  { name: "ban_days", label: "alap.ban_days", type: "number" },
  { name: "signature_window_minutes", label: "alap.sig_window", type: "number" },
  { name: "signature_threshold", label: "alap.sig_threshold", type: "number" },
  { name: "signature_block_days", label: "alap.sig_block_days", type: "number" },
];

/** What a decision is about, in one line. */
function subject(d) {
  const x = d.target ?? {};
  return [x.client_ip, x.rule_id, x.path_prefix].filter(Boolean).join(" · ") || "-";
}

function Review({ decision, reload }) {
  const action = useAction();
  if (!can("write:protection")) return null;
  const act = (verb) =>
    action.run(async () => {
      await post(`/api/alap/decisions/${decision.id}/${verb}`);
      reload();
    });
  return html`<span class="row-actions">
    ${
    decision.status === "proposed"
      ? html`
        <button type="button" class="small approve" disabled=${action.busy}
          onClick=${() => act("approve")}>${t("alap.approve")}</button>
        <button type="button" class="secondary small reject" disabled=${action.busy}
          onClick=${() => act("reject")}>${t("alap.reject")}</button>
      `
      : null
  }
    ${
    decision.status === "applied"
      ? html`
        <button type="button" class="secondary small" disabled=${action.busy}
          onClick=${() => act("revoke")}>${t("alap.revoke")}</button>
      `
      : null
  }
    <${ErrorBox} error=${action.error} />
  </span>`;
}

export default function Alap() {
  const [status, setStatus] = useState("proposed");
  const list = useApi("/api/alap/decisions", { status });
  return html`
    <${Page} title=${t("nav.alap")}>
      <p class="muted">${t("alap.intro")}</p>
      <${Field} id="alap-status" label=${t("common.status")}>
          <select id="alap-status" onChange=${(e) => setStatus(e.target.value)}>
            ${STATUSES.map((s) =>
              html`<option value=${s} selected=${s === status}>${
                s ? t("alap.status_" + s) : t("common.all")
              }</option>`
            )}
          </select>
        </${Field}>
        <${Loading} state=${list} />
        ${list.data
          ? html`<${Table} rows=${list.data.items} empty=${t("alap.empty")} columns=${[
            { label: t("alap.kind"), value: (d) => t("alap.kind_" + d.kind) },
            { label: t("alap.subject"), value: subject, className: "mono wrap" },
            {
              label: t("common.status"),
              value: (d) =>
                html`<${Badge} kind=${KIND[d.status]}>${t("alap.status_" + d.status)}</${Badge}>`,
            },
            { label: t("alap.reason"), value: (d) => d.reason ?? "-" },
            { label: t("common.created"), value: (d) => fmtTime(d.created ?? d.created_at) },
            { label: t("alap.expires"), value: (d) => fmtTime(d.expires_at) },
            {
              label: t("common.actions"),
              value: (d) => html`<${Review} decision=${d} reload=${list.reload} />`,
            },
          ]} />`
          : null}
        <h2>${t("alap.policy")}</h2>
        <${SettingForm} path="/api/alap/policy" write="write:protection" fields=${POLICY} idPrefix="alap" />
      </${Page}>
  `;
}
