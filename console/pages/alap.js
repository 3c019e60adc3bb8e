// ALAP decisions: what the adaptive layer proposes (temporary blocks, bans, signature blocks,
// exceptions), approve, reject or revoke each; and the ALAP policy. `/console/alap/<id>` (where a
// notification links) opens one decision above the list.
import { post } from "../api.js";
import {
  Badge,
  ErrorBox,
  Field,
  Link,
  Loading,
  Page,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { SettingForm } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { decisionReason } from "../notes.js";
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

/** The decision a link names: its facts, its evidence in the attack log and its review buttons. */
function Decision({ id, reload }) {
  const one = useApi(`/api/alap/decisions/${encodeURIComponent(id)}`);
  const again = () => {
    one.reload();
    reload();
  };
  const d = one.data;
  return html`<section class="panel" id="decision" aria-labelledby="decision-title">
    <h2 id="decision-title">${t("alap.decision")} <code>${id}</code></h2>
    <${Loading} state=${one} />
    ${
    d
      ? html`
        <dl class="facts">
          <dt>${t("alap.kind")}</dt>
          <dd>${t("alap.kind_" + d.kind)}</dd>
          <dt>${t("alap.subject")}</dt>
          <dd class="mono">${subject(d)}</dd>
          <dt>${t("common.status")}</dt>
          <dd>
            <${Badge} kind=${KIND[d.status]}>${t("alap.status_" + d.status)}</${Badge}></dd>
          <dt>${t("alap.reason")}</dt><dd>${decisionReason(d.basis, d.reason)}</dd>
          <dt>${t("common.created")}</dt><dd>${fmtTime(d.created ?? d.created_at)}</dd>
          <dt>${t("alap.expires")}</dt>
          <dd>${d.expires_at ? fmtTime(d.expires_at) : t("time.until_revoked")}</dd>
          <dt>${t("alap.evidence")}</dt>
          <dd>${(d.evidence ?? []).map((trace) =>
            html`
              <${Link} href=${"/console/logs/" + trace} className="mono">${trace}</${Link}>
            `
          )}</dd>
        </dl>
        <${Review} decision=${d} reload=${again} />
      `
      : null
  }
  </section>`;
}

export default function Alap({ detail }) {
  const [status, setStatus] = useState("proposed");
  const list = useApi("/api/alap/decisions", { status });
  return html`
    <${Page} title=${t("nav.alap")}>
      <p class="muted">${t("alap.intro")}</p>
      ${detail ? html`<${Decision} id=${detail} reload=${list.reload} />` : null}
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
            {
              label: t("alap.kind"),
              value: (d) =>
                html`<${Link} href=${"/console/alap/" + d.id}>${
                  t("alap.kind_" + d.kind)
                }</${Link}>`,
            },
            { label: t("alap.subject"), value: subject, className: "mono wrap" },
            {
              label: t("common.status"),
              value: (d) =>
                html`<${Badge} kind=${KIND[d.status]}>${t("alap.status_" + d.status)}</${Badge}>`,
            },
            { label: t("alap.reason"), value: (d) => decisionReason(d.basis, d.reason ?? "-") },
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
