// ACL rules: allow, block, challenge or log requests matching every given condition, in order.
import { Badge, Page } from "../components.js";
import { Crud } from "../crud.js";
import { t } from "../i18n.js";
import { html } from "../lib/ui.js";

const ACTIONS = ["block", "allow", "challenge", "log"];

const FIELDS = [
  { name: "name", label: "common.name", type: "text", required: true },
  { name: "site_id", label: "common.site", type: "site" },
  { name: "enabled", label: "common.enabled", type: "checkbox", default: true },
  {
    name: "action",
    label: "acl.action",
    type: "select",
    options: ACTIONS.map((a) => ({ value: a, label: "action." + a })),
  },
  { name: "conditions.methods", label: "acl.methods", type: "lines", hint: "acl.methods_hint" },
  { name: "conditions.path.prefix", label: "acl.path_prefix", type: "text" },
  { name: "conditions.path.regex", label: "acl.path_regex", type: "text", hint: "acl.one_path" },
  { name: "conditions.hosts", label: "acl.hosts", type: "lines" },
  { name: "conditions.cidrs", label: "acl.cidrs", type: "lines" },
  {
    name: "conditions.countries",
    label: "acl.countries",
    type: "lines",
    hint: "acl.countries_hint",
  },
  { name: "conditions.header.name", label: "acl.header_name", type: "text" },
  { name: "conditions.header.pattern", label: "acl.header_pattern", type: "text" },
  { name: "conditions.query.name", label: "acl.query_name", type: "text" },
  { name: "conditions.query.pattern", label: "acl.query_pattern", type: "text" },
  { name: "position", label: "acl.position", type: "number", hint: "acl.position_hint" },
];

/** What a rule matches, in one line. */
function summary(c) {
  const parts = [];
  if (c.methods) parts.push(c.methods.join("|"));
  if (c.path?.prefix) parts.push(c.path.prefix + "*");
  if (c.path?.regex) parts.push("/" + c.path.regex + "/");
  if (c.hosts) parts.push(c.hosts.join(", "));
  if (c.cidrs) parts.push(c.cidrs.join(", "));
  if (c.countries) parts.push(c.countries.join(", "));
  if (c.header) parts.push(`${c.header.name}${c.header.pattern ? " ~ " + c.header.pattern : ""}`);
  if (c.query) parts.push(`?${c.query.name}${c.query.pattern ? " ~ " + c.query.pattern : ""}`);
  return parts.join(" · ") || "-";
}

export default function AclRules() {
  return html`
    <${Page} title=${t("nav.acl-rules")}>
      <p class="muted">${t("acl.intro")}</p>
      <${Crud} empty=${t("acl.empty")} base="/api/protection/acl-rules" write="write:protection"
        fields=${FIELDS}
        name=${(r) => r.name} newLabel=${t("acl.new")} columns=${[
          { label: t("acl.position"), key: "position" },
          { label: t("common.name"), key: "name" },
          {
            label: t("acl.action"),
            value: (r) => html`<${Badge}>${t("action." + r.action)}</${Badge}>`,
          },
          {
            label: t("acl.conditions"),
            value: (r) => summary(r.conditions),
            className: "mono wrap",
          },
          { label: t("common.enabled"), key: "enabled" },
        ]} />
      </${Page}>
  `;
}
