// AI settings: the OpenAI-compatible provider, model, limits and allowed tools (the API key is
// write-only: the API shows a masked hint), a connection test, and every user's token usage.
import { post } from "../api.js";
import { Done, ErrorBox, Loading, Page, Table, useAction, useApi } from "../components.js";
import { SettingForm } from "../crud.js";
import { fmtNumber, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

const BASE_FIELDS = [
  { name: "enabled", label: "ai.enabled", type: "checkbox", hint: "ai.enabled_hint" },
  {
    name: "base_url",
    label: "ai.base_url",
    type: "text",
    hint: "ai.base_url_hint",
    empty: "empty",
  },
  { name: "model", label: "ai.model", type: "text", empty: "empty" },
  { name: "api_key", label: "ai.api_key", type: "password", hint: "ai.api_key_hint" },
  { name: "timeout_ms", label: "ai.timeout_ms", type: "number" },
  { name: "max_tokens", label: "ai.max_tokens", type: "number" },
];

/** The form's fields: the settings, then one checkbox per tool the API offers. */
function fields(tools) {
  return [
    ...BASE_FIELDS,
    ...tools.map((name) => ({ name: `tool.${name}`, label: `ai.tool_${name}`, type: "checkbox" })),
  ];
}

/** The API's document as form values: one checkbox per tool, an empty key box. */
function load(doc) {
  const tool = Object.fromEntries(doc.available_tools.map((n) => [n, doc.tools.includes(n)]));
  return { ...doc, api_key: "", tool };
}

/** Form values as the API's `PUT`: the key only when typed, the tools as a list. */
function prepare(doc) {
  const { tool, api_key, ...rest } = doc;
  return {
    ...rest,
    ...(api_key ? { api_key } : {}),
    tools: Object.keys(tool ?? {}).filter((n) => tool[n]),
  };
}

function Test() {
  const action = useAction();
  const [answer, setAnswer] = useState("");
  if (!can("write:ai")) return null;
  const run = () =>
    action.run(async () => {
      setAnswer("");
      const r = await post("/api/ai/config/test");
      setAnswer(t("ai.test_ok", { model: r.model, reply: r.reply }));
    });
  return html`
    <div class="toolbar">
      <button type="button" id="ai-test" class="secondary" disabled=${action.busy} onClick=${run}>
          ${t("ai.test")}</button>
      <${ErrorBox} error=${action.error} />
      <${Done} text=${answer} />
    </div>
  `;
}

function Usage() {
  const usage = useApi("/api/ai/usage/users");
  return html`<h2>${t("ai.usage_title")}</h2>
    <${Loading} state=${usage} />
    ${
    usage.data
      ? html`
        <${Table} rows=${usage.data.items} rowKey=${(r) => r.principal.id}
          empty=${t("ai.usage_empty")} columns=${[
            { label: t("ai.user"), value: (r) => r.principal.name },
            { label: t("ai.requests"), value: (r) => fmtNumber(r.requests) },
            { label: t("ai.prompt_tokens"), value: (r) => fmtNumber(r.prompt_tokens) },
            { label: t("ai.completion_tokens"), value: (r) => fmtNumber(r.completion_tokens) },
          ]} />
      `
      : null
  }`;
}

export default function AiSettings() {
  const config = useApi("/api/ai/config");
  return html`
    <${Page} title=${t("nav.ai-settings")}>
      <p class="muted">${t("ai.settings_intro")}</p>
      ${config.data
        ? html`<p class="notice">${
          config.data.api_key_set
            ? t("ai.key_set", { hint: config.data.api_key })
            : t("ai.key_unset")
        }</p>`
        : null}
      ${config.data
        ? html`
          <${SettingForm} path="/api/ai/config" write="write:ai" idPrefix="ai"
            fields=${fields(config.data.available_tools)} load=${load} prepare=${prepare}
            onSaved=${config.reload} />
        `
        : html`<${Loading} state=${config} />`}
      <${Test} />
      <${Usage} />
    </${Page}>
  `;
}
