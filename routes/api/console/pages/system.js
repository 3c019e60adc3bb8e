// System: the version and runtime, and the backup buttons: the API answers 501 by design
// (specification 4.3), so the page explains what to run on the host instead.
import { post } from "../api.js";
import { ErrorBox, Loading, Page, useAction, useApi } from "../components.js";
import { t } from "../i18n.js";
import { html } from "../lib/ui.js";
import { can } from "../session.js";

function Backup({ kind }) {
  const action = useAction();
  const run = () => action.run(() => post(`/api/backup/${kind}`));
  return html`<div class="panel" id=${"backup-" + kind}>
    <h2>${t("system." + kind)}</h2>
    <p>${t("system." + kind + "_explain")}</p>
    <pre>${
    kind === "export"
      ? "waf store backup --out /backup/waf-$(date +%F).db\nwaf store check"
      : t("system.restore_steps")
  }</pre>
    <button type="button" class="secondary" disabled=${
    !can("write:system") || action.busy
  } onClick=${run}>
      ${t("system." + kind + "_button")}</button>
    ${
    action.error
      ? html`
        <p class="notice">${t("system.answer_501")}</p>
        <${ErrorBox} error=${action.error} />
      `
      : null
  }
  </div>`;
}

export default function System() {
  const version = useApi("/api/system/version");
  const v = version.data;
  return html`<${Page} title=${t("nav.system")}>
    <${Loading} state=${version} />
    ${
    v
      ? html`
        <dl class="facts" id="version">
          <dt>${t("system.version")}</dt>
          <dd>${v.version}</dd>
          <dt>${t("system.schema")}</dt>
          <dd>${v.schema_version}</dd>
          <dt>Deno</dt>
          <dd>${v.runtime.deno} (V8 ${v.runtime.v8}, TypeScript ${v.runtime.typescript})</dd>
          <dt>${t("system.build")}</dt>
          <dd>${v.build.target}</dd>
        </dl>
      `
      : null
  }
    <p class="muted">${t("system.time_sync_later")}</p>
    <${Backup} kind="export" />
    <${Backup} kind="restore" />
  </${Page}>`;
}
