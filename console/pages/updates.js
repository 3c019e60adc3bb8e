// Updates: the OTA settings (read-only: the keys are reserved) and the update check, which
// this build answers with NOT_IMPLEMENTED (specification section 7).
import { get } from "../api.js";
import { ErrorBox, Loading, Page, useAction, useApi } from "../components.js";
import { t, tOr } from "../i18n.js";
import { html } from "../lib/ui.js";

export default function Updates() {
  const ota = useApi("/api/system/ota");
  const check = useAction();
  const s = ota.data?.settings;
  return html`<${Page} title=${t("nav.updates")}>
    <${Loading} state=${ota} />
    ${
    s
      ? html`
        <p class="notice" id="ota-message">${ota.data.available
          ? ota.data.message
          : tOr("updates.unavailable", ota.data.message)}</p>
        <h2>${t("updates.settings")}</h2>
        <dl class="facts" id="ota-settings">
                ${[
                  "enabled",
                  "server",
                  "channel",
                  "check_interval",
                  "auto_update_rules",
                  "auto_update_binary",
                  "verify_signature",
                ]
                  .map((k) =>
                    html`
                      <dt><code>update.ota.${k}</code></dt>
                      <dd>${s[k] === "" ? "-" : String(s[k])}</dd>
                    `
                  )}
              </dl>
        <p class="muted">${t("updates.readonly")}</p>
      `
      : null
  }
    <h2>${t("updates.check")}</h2>
    <button type="button" id="check-updates" disabled=${check.busy} onClick=${() =>
    check.run(() => get("/api/system/updates"))}>
      ${t("updates.check_now")}</button>
    <${ErrorBox} error=${check.error} />
  </${Page}>`;
}
