// Forms described as data: each field names its place in the API document (dotted for nested
// keys), its control and how an empty value is sent. The same description turns a document into
// form values and back, so a page lists its fields once.
import { Field, useApi } from "./components.js";
import { t } from "./i18n.js";
import { can } from "./session.js";
import { html, useState } from "./lib/ui.js";

/**
 * Field types: text, password, textarea, number, lines (one value per line -> array),
 * checkbox, select (`options`: [{value, label}], label an i18n key), site (a site id, or null for all sites).
 * `empty`: what an empty value sends: "omit" (default), "null", or "empty" ("" or []).
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
    else value = raw;
    if (value !== undefined) setPath(doc, f.name, value);
  }
  return doc;
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

function Control({ field, id, value, onInput }) {
  const hint = field.hint ? id + "-hint" : undefined;
  const common = { id, name: field.name, "aria-describedby": hint, required: field.required };
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
 * control (the user lacks the write permission) and hides the submit button.
 */
export function Form(
  { fields, initial, onSubmit, submitLabel, readOnly, busy, idPrefix = "f", children },
) {
  const [values, setValues] = useState(() => toForm(fields, initial));
  const set = (name) => (v) => setValues((old) => ({ ...old, [name]: v }));
  const submit = (e) => {
    e.preventDefault();
    if (!readOnly) onSubmit(fromForm(fields, values), values);
  };
  return html`<form class="form" onSubmit=${submit} novalidate>
    <fieldset disabled=${readOnly || busy}>
      ${
    fields.map((f) => {
      const id = fieldId(idPrefix, f.name);
      return html`
        <${Field} key=${f.name} id=${id} label=${t(f.label)} hint=${f.hint && t(f.hint)}
          inline=${f.type === "checkbox"}>
          <${Control} field=${f} id=${id} value=${values[f.name]} onInput=${set(f.name)} />
          </${Field}>
      `;
    })
  }
      ${readOnly ? null : html`<button type="submit">${submitLabel ?? t("common.save")}</button>`}
    </fieldset>
    ${children}
  </form>`;
}
