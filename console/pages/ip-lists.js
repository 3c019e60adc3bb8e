// IP allow and block lists: addresses or CIDR ranges, optionally per site, path and expiry (a
// date-time picker in the browser's time zone; the API gets ISO 8601 UTC).
import { Badge, Page } from "../components.js";
import { Crud } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { html } from "../lib/ui.js";

const FIELDS = [
  {
    name: "action",
    label: "ip.action",
    type: "select",
    options: [{ value: "block", label: "ip.block" }, { value: "allow", label: "ip.allow" }],
  },
  {
    name: "cidr",
    label: "ip.cidr",
    type: "text",
    required: true,
    hint: "ip.cidr_hint",
    invalid: "ip.cidr_invalid",
  },
  { name: "site_id", label: "common.site", type: "site" },
  {
    name: "path_prefix",
    label: "common.path_prefix",
    type: "text",
    empty: "null",
    invalid: "common.path_prefix_invalid",
  },
  {
    name: "expires_at",
    label: "ip.expires_at",
    type: "datetime",
    empty: "null",
    hint: "ip.expires_hint",
    invalid: "ip.expires_invalid",
  },
  { name: "note", label: "common.note", type: "text", empty: "empty" },
];

export default function IpLists() {
  return html`
    <${Page} title=${t("nav.ip-lists")}>
      <p class="muted">${t("ip.intro")}</p>
      <${Crud} empty=${t("ip.empty")} base="/api/protection/ip-lists" write="write:protection"
        fields=${FIELDS}
        name=${(e) => e.cidr} newLabel=${t("ip.new")} columns=${[
          {
            label: t("ip.action"),
            value: (e) =>
              html`<${Badge} kind=${e.action === "block" ? "bad" : "good"}>${
                t("ip." + e.action)
              }</${Badge}>`,
          },
          { label: t("ip.cidr"), key: "cidr", className: "mono" },
          { label: t("common.path_prefix"), key: "path_prefix" },
          { label: t("ip.expires_at"), value: (e) => fmtTime(e.expires_at) },
          { label: t("common.note"), key: "note" },
        ]} />
      </${Page}>
  `;
}
