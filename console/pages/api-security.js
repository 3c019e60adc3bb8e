// API security: the discovered inventory (coverage and shadow APIs), the settings document
// (discovery, schemas, token checks, route limits) as a form with the JSON as an advanced view
// (api_security_settings.js), the OpenAPI import and the schema tester. Reads need read:apisec;
// changes write:protection (docs/api-security.md).
import { post } from "../api.js";
import {
  Badge,
  Done,
  ErrorBox,
  Field,
  Loading,
  Page,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { fmtNumber, fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";
import { Settings } from "./api_security_settings.js";

const WRITE = "write:protection";

function Inventory() {
  const [shadowOnly, setShadowOnly] = useState(false);
  const list = useApi("/api/apisec/endpoints", { shadow: shadowOnly ? "true" : "", limit: 200 });
  const columns = [
    { label: t("apisec.template"), value: (e) => html`<code>${e.template}</code>` },
    { label: t("apisec.methods"), value: (e) => Object.keys(e.methods).join(", ") },
    { label: t("apisec.hits"), value: (e) => fmtNumber(e.hits) },
    {
      label: t("apisec.statuses"),
      value: (e) => Object.entries(e.statuses).map(([k, n]) => `${k}: ${n}`).join(" "),
    },
    {
      label: t("apisec.params"),
      value: (e) => [...e.query_params, ...e.body_params].join(", ") || "-",
    },
    { label: t("apisec.last_seen"), value: (e) => fmtTime(e.last_seen) },
    {
      label: t("apisec.coverage"),
      value: (e) =>
        html`${
          e.covered.schema
            ? html`
              <${Badge} kind="good">${t("apisec.schema")}: ${e.covered.schema}</${Badge}>
            `
            : null
        }${
          e.covered.auth
            ? html`
              <${Badge} kind="good">${t("apisec.token")}: ${e.covered.auth}</${Badge}>
            `
            : null
        }${e.shadow ? html`<${Badge} kind="warn">${t("apisec.shadow")}</${Badge}>` : null}`,
    },
  ];
  return html`
    <div class="panel" id="apisec-inventory">
      <h2>${t("apisec.inventory")}</h2>
      <p class="muted">${t("apisec.inventory_intro")}</p>
      <${Field} id="apisec-shadow-only" label=${t("apisec.shadow_only")} inline>
          <input type="checkbox" id="apisec-shadow-only" checked=${shadowOnly}
            onChange=${(e) => setShadowOnly(e.target.checked)} />
        </${Field}>
        <${Loading} state=${list} />
        ${list.data
          ? html`
            <p class="muted">${t("apisec.total", { n: list.data.total })}</p>
            <${Table} columns=${columns} rows=${list.data.items}
              rowKey=${(e) => e.site_id + e.template} empty=${t("apisec.no_endpoints")} />
          `
          : null}
      </div>
  `;
}

function OpenApiImport({ onSaved }) {
  const [text, setText] = useState("");
  const [mode, setMode] = useState("merge");
  const [result, setResult] = useState(null);
  const action = useAction();
  if (!can(WRITE)) return null;
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      // The document travels as a JSON string (JSON or YAML text); the server parses it.
      setResult(await post(`/api/apisec/openapi?mode=${mode}`, text));
      onSaved();
    }, t("apisec.imported"));
  };
  return html`
    <form class="panel" id="apisec-openapi" onSubmit=${submit}>
      <h2>${t("apisec.openapi")}</h2>
      <p class="muted">${t("apisec.openapi_intro")}</p>
      <${Field} id="apisec-openapi-text" label=${t("apisec.openapi_document")}>
        <textarea id="apisec-openapi-text" rows="10" spellcheck=${false} value=${text}
          onInput=${(e) => setText(e.target.value)}></textarea>
        </${Field}>
        <${Field} id="apisec-openapi-mode" label=${t("apisec.openapi_mode")}>
          <select id="apisec-openapi-mode" value=${mode} onChange=${(e) => setMode(e.target.value)}>
            <option value="merge">${t("apisec.mode_merge")}</option>
            <option value="replace">${t("apisec.mode_replace")}</option>
          </select>
        </${Field}>
        <button type="submit" id="apisec-import" disabled=${action.busy || text === ""}>${t(
          "apisec.import",
        )}</button>
        <${ErrorBox} error=${action.error} />
        <${Done} text=${action.done} />
        ${result
          ? html`<p id="apisec-import-result">${t("apisec.imported_ids")}: <code>${
            result.imported.join(", ")
          }</code></p>`
          : null}
      </form>
  `;
}

function Tester() {
  const [method, setMethod] = useState("POST");
  const [path, setPath] = useState("/");
  const [headers, setHeaders] = useState("{}");
  const [body, setBody] = useState("");
  const [result, setResult] = useState(null);
  const action = useAction();
  const test = (e) => {
    e.preventDefault();
    action.run(async () => {
      let h;
      try {
        h = JSON.parse(headers || "{}");
      } catch (err) {
        throw { message: t("apisec.not_json", { error: String(err.message) }), code: "BAD_JSON" };
      }
      setResult(await post("/api/apisec/validate", { method, path, headers: h, body }));
    });
  };
  return html`
    <form class="panel" id="apisec-tester" onSubmit=${test}>
      <h2>${t("apisec.tester")}</h2>
      <p class="muted">${t("apisec.tester_intro")}</p>
      <${Field} id="apisec-test-method" label=${t("apisec.method")}>
        <input id="apisec-test-method" value=${method} onInput=${(e) =>
          setMethod(e.target.value)} />
        </${Field}>
        <${Field} id="apisec-test-path" label=${t("apisec.path")}>
          <input id="apisec-test-path" value=${path} spellcheck=${false} onInput=${(e) =>
            setPath(e.target.value)} />
          </${Field}>
          <${Field} id="apisec-test-headers" label=${t("apisec.headers_json")}>
            <input id="apisec-test-headers" value=${headers} spellcheck=${false}
              onInput=${(e) => setHeaders(e.target.value)} />
            </${Field}>
            <${Field} id="apisec-test-body" label=${t("apisec.body")}>
          <textarea id="apisec-test-body" rows="4" spellcheck=${false} value=${body}
            onInput=${(e) => setBody(e.target.value)}></textarea>
        </${Field}>
        <button type="submit" id="apisec-test" disabled=${action.busy}>${t("apisec.test")}</button>
        <${ErrorBox} error=${action.error} />
        ${result
          ? html`
            <div id="apisec-test-result">
              <p>${t("apisec.matched")}: <code>${result.schema ?? "-"}</code> ${result.valid
                ? html`<${Badge} kind="good">${t("apisec.valid")}</${Badge}>`
                : html`<${Badge} kind="bad">${t("apisec.invalid")}</${Badge}>`}</p>
              <ul>${result.violations.map((v) =>
                html`<li><code>${v.code}</code> ${v.detail}</li>`
              )}</ul>
            </div>
          `
          : null}
      </form>
  `;
}

export default function ApiSecurity() {
  const [tick, setTick] = useState(0);
  const saved = () => setTick((n) => n + 1);
  return html`
    <${Page} title=${t("nav.api-security")}>
      <p class="muted">${t("apisec.intro")}</p>
      <${Inventory} key=${tick} />
      <${Settings} tick=${tick} onSaved=${saved} />
      <${OpenApiImport} onSaved=${saved} />
      <${Tester} />
      </${Page}>
  `;
}
