// AI approvals: the changes the assistant proposed (block an address, add a custom rule, change a
// site's mode or level, add an ALAP exception), each with its exact change; approve or reject.
// The API refuses approving one's own request and approving without the change's permission.
// With read:realtime the list follows the `ai.approval` events: new requests and decisions made
// elsewhere appear without a reload.
import { post } from "../api.js";
import { Badge, ErrorBox, Field, Loading, Page, Table, useAction, useApi } from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { watchLive } from "../dashboard_data.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const STATUSES = ["pending", "applied", "rejected", "failed", ""];
const KIND = {
  pending: "warn",
  applying: "warn",
  applied: "good",
  rejected: "plain",
  failed: "bad",
};

function Decide({ approval, reload }) {
  const action = useAction();
  if (approval.status !== "pending" || !can("approve:ai")) return null;
  const act = (verb) =>
    action.run(async () => {
      await post(`/api/ai/approvals/${approval.id}/${verb}`, {});
      reload();
    });
  return html`
    <span class="row-actions">
      <button type="button" class="small approve" disabled=${action.busy}
        onClick=${() => act("approve")}>${t("ai.approve")}</button>
      <button type="button" class="secondary small reject" disabled=${action.busy}
        onClick=${() => act("reject")}>${t("ai.reject")}</button>
      <${ErrorBox} error=${action.error} />
    </span>
  `;
}

function outcome(a) {
  if (!a.result) return "-";
  if (a.result.error) return `${a.result.error.code}: ${a.result.error.message}`;
  if (a.result.target) return a.result.target;
  return a.result.reason ?? "-";
}

export default function AiApprovals() {
  const [status, setStatus] = useState("pending");
  const list = useApi("/api/ai/approvals", { status });
  const reload = list.reload;
  useEffect(() => watchLive(() => reload(), () => {}, ["ai.approval"]), [reload]);
  return html`
    <${Page} title=${t("nav.ai-approvals")}>
      <p class="muted">${t("ai.approvals_intro")}</p>
      <${Field} id="ai-approval-status" label=${t("common.status")}>
        <select id="ai-approval-status" onChange=${(e) => setStatus(e.target.value)}>
          ${STATUSES.map((s) =>
            html`<option value=${s} selected=${s === status}>${
              s ? t("ai.status_" + s) : t("common.all")
            }</option>`
          )}
        </select>
      </${Field}>
      <${Loading} state=${list} />
      ${list.data
        ? html`<${Table} rows=${list.data.items} empty=${t("ai.approvals_empty")} columns=${[
          { label: t("ai.tool"), value: (a) => html`<code>${a.tool}</code>` },
          {
            label: t("ai.change"),
            value: (a) =>
              html`
                <span class="ai-summary">${a.summary}</span>
                <details>
                  <summary>${t("ai.exact_change")}</summary>
                  <pre class="mono wrap">${JSON.stringify(a.change, null, 2)}</pre>
                </details>
              `,
          },
          { label: t("ai.requested_by"), value: (a) => a.requested_by.name },
          { label: t("common.created"), value: (a) => fmtTime(a.requested_at) },
          {
            label: t("common.status"),
            value: (a) =>
              html`<${Badge} kind=${KIND[a.status]}>${t("ai.status_" + a.status)}</${Badge}>`,
          },
          { label: t("ai.decided_by"), value: (a) => a.decided_by?.name ?? "-" },
          { label: t("ai.result"), value: outcome, className: "mono wrap" },
          {
            label: t("common.actions"),
            value: (a) => html`<${Decide} approval=${a} reload=${list.reload} />`,
          },
        ]} />`
        : null}
    </${Page}>
  `;
}
