// Block pages: choose the built-in template, preview it, upload a custom page (sanitised by the
// server), preview it before publishing, and revert to the template. Previews load from the
// API into an iframe with `sandbox=""` (no script, a unique origin); the preview document
// carries its own script-free CSP (a srcdoc frame would inherit the console's, which blocks
// the page's inline styles).
import { api, post, put } from "../api.js";
import {
  ConfirmButton,
  Done,
  ErrorBox,
  Field,
  Loading,
  Page,
  ReadOnlyNote,
  useAction,
  useApi,
} from "../components.js";
import { t, tOr } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

function Preview({ url, title }) {
  return url ? html`<iframe class="preview" sandbox="" src=${url} title=${title}></iframe>` : null;
}

function Templates({ settings, templates, reload, writable }) {
  const [chosen, setChosen] = useState(settings.template_id);
  const action = useAction();
  const current = templates.find((x) => x.id === chosen);
  const save = () =>
    action.run(async () => {
      await put("/api/block-pages/settings", { template_id: chosen });
      reload();
    }, t("common.saved"));
  return html`
    <div class="panel">
      <h2>${t("block.template")}</h2>
      <${Field} id="template" label=${t("block.template")} hint=${current &&
        tOr(`block.template_description_${current.id}`, current.description)}>
          <select id="template" disabled=${!writable} onChange=${(e) => setChosen(e.target.value)}>
            ${templates.map((x) =>
              html`<option value=${x.id} selected=${x.id === chosen}>${
                tOr(`block.template_name_${x.id}`, x.name)
              }</option>`
            )}
          </select>
        </${Field}>
        ${writable
          ? html`<button type="button" onClick=${save} disabled=${action.busy}>${
            t("block.use_template")
          }</button>`
          : null}
        <${ErrorBox} error=${action.error} /><${Done} text=${action.done} />
        <h3>${t("block.preview")}</h3>
        <${Preview} url=${current && `/api/block-pages/templates/${current.id}/preview`} title=${t(
          "block.preview_of",
          {
            name: current ? tOr(`block.template_name_${current.id}`, current.name) : "",
          },
        )} />
      </div>
  `;
}

function Custom({ settings, reload, writable }) {
  const [draft, setDraft] = useState(settings.custom_html);
  const [preview, setPreview] = useState("");
  const [removed, setRemoved] = useState(null);
  const action = useAction();
  const previewOf = async (page) =>
    setPreview((await post("/api/block-pages/preview?as=link", { html: page })).url);
  const showPreview = () => action.run(() => previewOf(draft));
  const publish = () =>
    action.run(async () => {
      const r = await post("/api/block-pages/upload", { html: draft });
      setDraft(r.html);
      setRemoved(r.removed);
      await previewOf(r.html);
      reload();
    }, t("block.published"));
  const toggle = () =>
    action.run(async () => {
      await put("/api/block-pages/settings", { custom_enabled: !settings.custom_enabled });
      reload();
    }, t("common.saved"));
  const revert = () =>
    action.run(async () => {
      await api("DELETE", "/api/block-pages/custom");
      setDraft("");
      setPreview("");
      reload();
    }, t("block.reverted"));
  return html`
    <div class="panel">
      <h2>${t("block.custom")}</h2>
      <p id="custom-state">${settings.custom_enabled
        ? t("block.custom_on")
        : t("block.custom_off")}</p>
      <${Field} id="custom-html" label=${t("block.custom_html")} hint=${t("block.custom_hint")}>
          <textarea id="custom-html" rows="8" spellcheck=${false} readonly=${!writable} value=${draft}
            onInput=${(e) => setDraft(e.target.value)}></textarea>
        </${Field}>
        ${writable
          ? html`<div class="upload"><label for="custom-file">${t("common.load_file")}</label>
      <input type="file" id="custom-file" accept=".html,.htm,text/html"
        onChange=${async (e) =>
            e.target.files?.[0] && setDraft(await e.target.files[0].text())} /></div>`
          : null}
        <button type="button" id="preview-custom" class="secondary" disabled=${action.busy ||
          draft === ""}
          onClick=${showPreview}>${t("block.show_preview")}</button>
        ${writable
          ? html`
            <button type="button" id="publish-custom" disabled=${action.busy || draft === ""}
              onClick=${publish}>${t("block.publish")}</button>
            ${settings.custom_html
              ? html`<button type="button" class="secondary" onClick=${toggle}>
        ${settings.custom_enabled ? t("block.disable_custom") : t("block.enable_custom")}</button>`
              : null}
            ${settings.custom_html
              ? html`
                <${ConfirmButton} id="revert-custom" label=${t("block.revert")}
                  question=${t("block.revert_question")} onConfirm=${revert} />
              `
              : null}
          `
          : null}
        <${ErrorBox} error=${action.error} /><${Done} text=${action.done} />
        ${removed && removed.length > 0
          ? html`<p class="notice">${t("block.removed", { n: removed.length })}</p>`
          : null}
        ${preview
          ? html`
            <h3>${t("block.preview")}</h3>
            <${Preview} url=${preview} title=${t("block.custom_preview")} />
          `
          : null}
      </div>
  `;
}

export default function BlockPages() {
  const settings = useApi("/api/block-pages/settings");
  const templates = useApi("/api/block-pages/templates");
  const writable = can("write:system");
  return html`<${Page} title=${t("nav.block-pages")}>
    <p class="muted">${t("block.intro")}</p>
    ${writable ? null : html`<${ReadOnlyNote} permission="write:system" />`}
    <${Loading} state=${settings} /><${Loading} state=${templates} />
    ${
    settings.data && templates.data
      ? html`
        <${Templates} key=${settings.data.template_id} settings=${settings
          .data} templates=${templates.data.items}
          reload=${settings.reload} writable=${writable} />
        <${Custom} settings=${settings.data} reload=${settings.reload} writable=${writable} />
      `
      : null
  }
  </${Page}>`;
}
