// The global rate limit of the data plane (a sliding window per client key).
import { Page } from "../components.js";
import { SettingForm } from "../crud.js";
import { t } from "../i18n.js";
import { html } from "../lib/ui.js";

const KEYS = ["ip", "ip_site", "ip_site_path"];

const FIELDS = [
  { name: "enabled", label: "common.enabled", type: "checkbox" },
  { name: "requests", label: "rate.requests", type: "number" },
  { name: "window_seconds", label: "rate.window", type: "number" },
  { name: "burst", label: "rate.burst", type: "number", hint: "rate.burst_hint" },
  {
    name: "key",
    label: "rate.key",
    type: "select",
    options: KEYS.map((k) => ({ value: k, label: "rate.key_" + k })),
  },
  { name: "max_keys", label: "rate.max_keys", type: "number", hint: "rate.max_keys_hint" },
];

export default function RateLimit() {
  return html`
    <${Page} title=${t("nav.rate-limit")}>
      <p class="muted">${t("rate.intro")}</p>
      <${SettingForm} path="/api/protection/rate-limit" write="write:protection" fields=${FIELDS} />
      </${Page}>
  `;
}
