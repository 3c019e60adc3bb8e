// Forms described as data: each field names its place in the API document (dotted for nested
// keys), its control and how an empty value is sent. The same description turns a document into
// form values and back, so a page lists its fields once, and maps the API's field problems
// (`details.problems`: `upstreams[0]`, `timeouts.connect_ms`) back to the controls, each shown
// beside its field in the user's language.
import { Field, useApi } from "./components.js";
import { t } from "./i18n.js";
import { can } from "./session.js";
import { html, useLayoutEffect, useRef, useState } from "./lib/ui.js";

/**
 * Field types: text, password, textarea, number, lines (one value per line -> array),
 * checkbox, select (`options`: [{value, label}], label an i18n key), site (a site id, or null for all sites),
 * datetime (a local date and time picker; the API gets ISO 8601 UTC).
 * `empty`: what an empty value sends: "omit" (default), "null", or "empty" ("" or []).
 * `invalid`: the i18n key of what the field expects, shown when the API refuses its value.
 */
export function getPath(doc, name) {
  return name.split(".").reduce((v, k) => (v == null ? undefined : v[k]), doc);
}

function setPath(doc, name, value) {
  const keys = name.split(".");
  let node = doc;
  for (const k of keys.slice(0, -1)) node = node[k] ??= {};
  node[keys[keys.length - 1]] = value;
}

/** Form values (strings and booleans) of `doc`. */
export function toForm(fields, doc = {}) {
  const values = {};
  for (const f of fields) {
    const v = getPath(doc, f.name) ?? f.default ??
      (f.type === "select" ? f.options[0]?.value : undefined);
    if (f.type === "checkbox") values[f.name] = v === true;
    else if (f.type === "lines") values[f.name] = Array.isArray(v) ? v.join("\n") : "";
    else if (f.type === "datetime") values[f.name] = localDateTime(v);
    else values[f.name] = v === null || v === undefined ? "" : String(v);
  }
  return values;
}

/** The API document built from form values. */
export function fromForm(fields, values) {
  const doc = {};
  for (const f of fields) {
    if (f.send === false) continue;
    const raw = values[f.name];
    let value;
    if (f.type === "checkbox") value = raw === true;
    else if (f.type === "lines") {
      value = String(raw ?? "").split("\n").map((s) => s.trim()).filter((s) => s !== "");
      if (value.length === 0) value = emptyValue(f, []);
    } else if (raw === "" || raw === undefined) value = emptyValue(f, "");
    else if (f.type === "number") value = Number(raw);
    else if (f.type === "datetime") value = isoDateTime(raw);
    else value = raw;
    if (value !== undefined) setPath(doc, f.name, value);
  }
  return doc;
}

const pad = (n) => String(n).padStart(2, "0");

/** `YYYY-MM-DDTHH:MM` in the browser's time zone (what a datetime-local input holds). */
export function localDateTime(value) {
  if (value === null || value === undefined || value === "") return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return "";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${
    pad(d.getMinutes())
  }`;
}

/** The picker's local time as ISO 8601 UTC; what the browser cannot read goes as typed. */
export function isoDateTime(local) {
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? local : d.toISOString();
}

function emptyValue(f, empty) {
  if (f.empty === "null" || f.type === "site") return null;
  if (f.empty === "empty") return empty;
  return undefined;
}

const fieldId = (prefix, name) => `${prefix}-${name.replace(/[^a-z0-9]+/gi, "-")}`;

function SiteOptions({ value }) {
  const sites = useApi(can("read:sites") ? "/api/sites" : null);
  return (sites.data?.items ?? []).map((s) =>
    html`<option value=${s.id} selected=${s.id === value}>${s.name}</option>`
  );
}

/** Reads a chosen file into the field beside it (PEM certificates, HTML pages). */
function Upload({ id, onText }) {
  const read = async (e) => {
    const file = e.target.files?.[0];
    if (file) onText(await file.text());
  };
  return html`<div class="upload"><label for=${id + "-file"} class="secondary-label">
      ${t("common.load_file")}</label>
    <input type="file" id=${id + "-file"} onChange=${read} /></div>`;
}

/** A field's path in the API with its indexes (`hosts[2]`, `rate_limits[0].window`). */
const INDEX = /\[(\d+)\]/g;

/**
 * Which field of `fields` an API field path names, and the line (from 1) for a `lines` field:
 * `upstreams[1]` is line 2 of `upstreams`, `timeouts.connect_ms` the field of that name.
 */
export function fieldOfPath(fields, path) {
  const plain = String(path).replace(INDEX, "");
  const field = fields.find((f) =>
    f.name === plain || plain.startsWith(f.name + ".") || (f.paths ?? []).includes(plain)
  );
  if (!field) return null;
  const at = String(path).slice(field.name.length);
  const index = /^\[(\d+)\]/.exec(at);
  return { field, line: field.type === "lines" && index ? Number(index[1]) + 1 : null };
}

/** The problems an API error carries: its `problems`, else its one `field`. */
export function problemsOf(error) {
  if (!error) return [];
  if (Array.isArray(error.problems) && error.problems.length > 0) return error.problems;
  return error.field ? [{ field: error.field, message: error.message, code: error.code }] : [];
}

const REDUNDANT = /^Invalid field "[^"]*": /;

/**
 * One problem worded in the user's language: a missing value or a bound from its code; a value
 * the server refused for its own reason (a pattern, a conflict) by the field's `invalid` text,
 * which frames the server's `{detail}` (the English catalogue shows the detail as it is).
 */
export function problemText(problem, field) {
  const n = problem.minimum ?? problem.maximum;
  const origin = problem.origin;
  const detail = String(problem.message ?? "").replace(REDUNDANT, "");
  switch (problem.code) {
    case "required":
      return t("form.required");
    case "too_small":
      if (n <= 1 && origin !== "number") return t("form.required");
      return t(
        origin === "number"
          ? "form.too_low"
          : origin === "array"
          ? "form.too_few"
          : "form.too_short",
        { n },
      );
    case "too_big":
      return t(
        origin === "number"
          ? "form.too_high"
          : origin === "array"
          ? "form.too_many"
          : "form.too_long",
        { n },
      );
    case "invalid_type":
      return field?.type === "number" ? t("form.not_number") : t("form.invalid_type");
    case "invalid_value":
      return t("form.invalid_choice");
    case "unrecognized_keys":
      return t("form.unknown_key");
    case "CONFLICT":
      return t("form.in_use", { detail });
  }
  return t(field?.invalid ?? "form.refused", { detail });
}

/**
 * The API error's problems split by the form field they name: `byField` maps a field name to
 * its texts (each with its line), `rest` holds what no field names (shown in the summary).
 */
export function splitProblems(fields, error) {
  const byField = new Map();
  const rest = [];
  for (const p of problemsOf(error)) {
    const found = fieldOfPath(fields, p.field);
    if (!found) {
      rest.push(p);
      continue;
    }
    const plain = problemText(p, found.field);
    const text = found.line ? t("form.line", { n: found.line, text: plain }) : plain;
    const list = byField.get(found.field.name) ?? [];
    if (!list.includes(text)) list.push(text);
    byField.set(found.field.name, list);
  }
  return { byField, rest };
}

/** True when the error is about fields (a 400 naming one or more), not the whole request. */
export function isFieldError(error) {
  return problemsOf(error).length > 0;
}

/** The problems of one field, beside it (`id` is what its control's aria-describedby names). */
export function FieldProblems({ id, texts }) {
  if (!texts || texts.length === 0) return null;
  return html`<ul class="field-problems" id=${id}>${texts.map((x) => html`<li>${x}</li>`)}</ul>`;
}

/**
 * The form's error summary: how many fields need attention (each named by its label, in the
 * user's language) and any problem no field of the form shows, with the API's code and trace id.
 */
export function ProblemSummary({ fields, error, split }) {
  if (!isFieldError(error)) return null;
  const labels = [...split.byField.keys()].map((name) =>
    t(fields.find((f) => f.name === name)?.label ?? name)
  );
  return html`<div class="error-box form-problems" role="alert">
    <p class="error-message">${
    labels.length > 0
      ? t("form.check_fields", { fields: labels.join(", ") })
      : t("form.check_request")
  }</p>
    ${
    split.rest.length > 0
      ? html`<ul>${
        split.rest.map((p) => html`<li><code>${p.field}</code>: ${problemText(p)}</li>`)
      }</ul>`
      : null
  }
    <p class="error-meta"><span>${t("error.code")}: <code>${error.code || "-"}</code></span>
      ${
    error.traceId
      ? html`<span>${t("error.trace")}: <code class="trace-id">${error.traceId}</code></span>`
      : null
  }</p>
  </div>`;
}

function Control({ field, id, value, onInput, problemId }) {
  const hint = field.hint ? id + "-hint" : undefined;
  const describedBy = [hint, problemId].filter(Boolean).join(" ") || undefined;
  const common = {
    id,
    name: field.name,
    "aria-describedby": describedBy,
    "aria-invalid": problemId ? "true" : undefined,
    required: field.required,
  };
  switch (field.type) {
    case "checkbox":
      return html`
        <input type="checkbox" ...${common} checked=${value}
          onChange=${(e) => onInput(e.target.checked)} />
      `;
    case "textarea":
    case "lines":
      return html`
        <textarea ...${common} rows=${field.rows ?? 3} value=${value}
          spellcheck=${false} onInput=${(e) => onInput(e.target.value)}></textarea>
              ${field.upload ? html`<${Upload} id=${id} onText=${onInput} />` : null}
      `;
    case "select":
      return html`<select ...${common} value=${value} onChange=${(e) => onInput(e.target.value)}>
        ${
        field.options.map((o) =>
          html`<option value=${o.value} selected=${o.value === value}>${t(o.label)}</option>`
        )
      }
      </select>`;
    case "datetime":
      return html`
        <input type="datetime-local" ...${common} value=${value} step="60"
          onInput=${(e) => onInput(e.target.value)} />
      `;
    case "site":
      return html`
        <select ...${common} value=${value} onChange=${(e) => onInput(e.target.value)}>
          <option value="" selected=${value === ""}>${t("common.all_sites")}</option>
          <${SiteOptions} value=${value} />
        </select>
      `;
    default:
      return html`
        <input type=${field.type === "password" ? "password" : "text"} ...${common}
          inputmode=${field.type === "number" ? "numeric" : undefined} value=${value}
          autocomplete=${field.autocomplete ??
            (field.type === "password" ? "new-password" : "off")} spellcheck=${false}
          onInput=${(e) => onInput(e.target.value)} />
      `;
  }
}

/**
 * A form over `fields`. `onSubmit(doc)` receives the API document; `readOnly` disables every
 * control (the user lacks the write permission) and hides the submit button; `error` (the
 * failed save's ApiError) puts each field problem beside its field, worded in the user's
 * language, and moves the focus to the first field named. Editing a field hides its problems.
 */
export function Form(
  { fields, initial, onSubmit, submitLabel, readOnly, busy, idPrefix = "f", error, children },
) {
  const [values, setValues] = useState(() => toForm(fields, initial));
  const [edited, setEdited] = useState(() => new Set());
  const form = useRef(null);
  const split = splitProblems(fields, error);
  useLayoutEffect(() => {
    setEdited(new Set());
    if (!error) return;
    const first = fields.find((f) => split.byField.has(f.name));
    if (first) form.current?.querySelector("#" + fieldId(idPrefix, first.name))?.focus();
  }, [error]);
  const set = (name) => (v) => {
    setValues((old) => ({ ...old, [name]: v }));
    if (!edited.has(name)) setEdited((old) => new Set(old).add(name));
  };
  const submit = (e) => {
    e.preventDefault();
    if (!readOnly) onSubmit(fromForm(fields, values), values);
  };
  return html`<form class="form" onSubmit=${submit} novalidate ref=${form}>
    <${ProblemSummary} fields=${fields} error=${error} split=${split} />
    <fieldset disabled=${readOnly || busy}>
      ${
    fields.map((f) => {
      const id = fieldId(idPrefix, f.name);
      const texts = edited.has(f.name) ? null : split.byField.get(f.name);
      const problemId = texts ? id + "-problems" : undefined;
      return html`
        <${Field} key=${f.name} id=${id} label=${t(f.label)} hint=${f.hint && t(f.hint)}
          inline=${f.type === "checkbox"}>
          <${Control} field=${f} id=${id} value=${values[f.name]} onInput=${set(f.name)}
            problemId=${problemId} />
          <${FieldProblems} id=${problemId} texts=${texts} />
          </${Field}>
      `;
    })
  }
      ${readOnly ? null : html`<button type="submit">${submitLabel ?? t("common.save")}</button>`}
    </fieldset>
    ${children}
  </form>`;
}
