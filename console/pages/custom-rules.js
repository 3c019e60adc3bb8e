// Custom regex rules (RE2) on a chosen part of the request, with a tester that compiles the
// pattern on the server exactly as saving a rule would and tries it on sample lines.
import { post } from "../api.js";
import { Badge, ErrorBox, Field, Page, Table, useAction } from "../components.js";
import { Crud } from "../crud.js";
import { t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";

const TARGETS = ["path", "query", "param", "any_param", "header", "cookies", "body"];
const ACTIONS = ["block", "log", "challenge"];

const FIELDS = [
  { name: "name", label: "common.name", type: "text", required: true },
  { name: "site_id", label: "common.site", type: "site" },
  {
    name: "target.kind",
    label: "rules.target",
    type: "select",
    options: TARGETS.map((k) => ({ value: k, label: "rules.target_" + k })),
  },
  { name: "target.name", label: "rules.target_name", type: "text", hint: "rules.target_name_hint" },
  {
    name: "pattern",
    label: "rules.pattern",
    type: "text",
    required: true,
    hint: "rules.pattern_hint",
  },
  { name: "ignore_case", label: "rules.ignore_case", type: "checkbox" },
  {
    name: "action",
    label: "rules.action",
    type: "select",
    options: ACTIONS.map((a) => ({ value: a, label: "action." + a })),
  },
  { name: "priority", label: "rules.priority", type: "number", hint: "rules.priority_hint" },
  { name: "enabled", label: "common.enabled", type: "checkbox", default: true },
];

function Tester() {
  const [pattern, setPattern] = useState("");
  const [ignoreCase, setIgnoreCase] = useState(false);
  const [samples, setSamples] = useState("");
  const [result, setResult] = useState(null);
  const action = useAction();
  const test = (e) => {
    e.preventDefault();
    action.run(async () => {
      // The tester's limits (mod/protection/pattern_tester.ts): 10 samples of 4,096 characters.
      const lines = samples.split("\n").filter((s) => s !== "").slice(0, 10);
      setResult(
        await post("/api/rules/custom/test", { pattern, ignore_case: ignoreCase, samples: lines }),
      );
    });
  };
  return html`
    <form class="panel" id="regex-tester" onSubmit=${test}>
      <h2>${t("rules.tester")}</h2>
      <p class="muted">${t("rules.tester_intro")}</p>
      <${Field} id="tester-pattern" label=${t("rules.pattern")}>
        <input id="tester-pattern" value=${pattern} spellcheck=${false} onInput=${(e) =>
          setPattern(e.target.value)} />
        </${Field}>
        <${Field} id="tester-ignore-case" label=${t("rules.ignore_case")} inline>
          <input type="checkbox" id="tester-ignore-case" checked=${ignoreCase}
            onChange=${(e) => setIgnoreCase(e.target.checked)} />
          </${Field}>
          <${Field} id="tester-samples" label=${t("rules.samples")} hint=${t("rules.samples_hint")}>
          <textarea id="tester-samples" rows="4" value=${samples} spellcheck=${false}
            onInput=${(e) => setSamples(e.target.value)}></textarea>
        </${Field}>
        <button type="submit" disabled=${action.busy || pattern === ""}>${t("rules.test")}</button>
        <${ErrorBox} error=${action.error} />
        ${result
          ? result.valid
            ? html`
              <p role="status">
                <${Badge} kind="good">${t("rules.valid")}</${Badge}></p>
                        <${Table} rowKey=${(r) => r.sample} rows=${result.results} columns=${[
                          { label: t("rules.sample"), key: "sample", className: "mono wrap" },
                          {
                            label: t("rules.matched"),
                            value: (r) =>
                              r.matched
                                ? html`<${Badge} kind="bad">${t("rules.match")}</${Badge}>`
                                : html`<${Badge}>${t("rules.no_match")}</${Badge}>`,
                          },
                        ]} />
            `
            : html`
              <p role="status" id="tester-error">
                <${Badge} kind="bad">${t("rules.invalid")}</${Badge}> <code>${result
                  .error}</code></p>
            `
          : null}
      </form>
  `;
}

export default function CustomRules() {
  return html`
    <${Page} title=${t("nav.custom-rules")}>
      <p class="muted">${t("rules.intro")}</p>
      <${Crud} empty=${t(
        "custom.empty",
      )} base="/api/rules/custom" write="write:rules" fields=${FIELDS}
        name=${(r) => r.name}
        newLabel=${t("rules.new")} columns=${[
          { label: t("common.name"), key: "name" },
          {
            label: t("rules.target"),
            value: (r) =>
              t("rules.target_" + r.target.kind) + (r.target.name ? ` (${r.target.name})` : ""),
          },
          { label: t("rules.pattern"), key: "pattern", className: "mono wrap" },
          { label: t("rules.action"), value: (r) => t("action." + r.action) },
          { label: t("rules.priority"), key: "priority" },
          { label: t("common.enabled"), key: "enabled" },
        ]} />
      <${Tester} />
      </${Page}>
  `;
}
