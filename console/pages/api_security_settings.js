// The API-security settings as a form for what operators change most (discovery, schema
// validation and each schema's switch, the token check with its routes, route-level rate limits),
// with the whole document kept as an "Advanced (JSON)" view for the rest (required parameters,
// body schemas, key files). Both views edit one draft; saving either PUTs the whole document, and
// a refused field is shown beside its control in the user's language.
import { put } from "../api.js";
import { Done, ErrorBox, Field, Loading, ReadOnlyNote, useAction, useApi } from "../components.js";
import { isFieldError, problemsOf, problemText } from "../form.js";
import { t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const WRITE = "write:protection";
const METHODS = ["*", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/** JWT_ALGORITHMS of mod/apisec/apisec_schema.ts: the console imports nothing of the server. */
const ALGORITHMS = [
  "HS256",
  "HS384",
  "HS512",
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
];

/** The settings the form view shows, by API path; other problems are listed in its summary. */
const RENDERED = new RegExp(
  "^(discovery\\.(enabled|sample_limit)|validation\\.(enabled|schemas\\[\\d+\\]\\.enabled)" +
    "|auth\\.(enabled|issuer|audience|algorithms|jwks_url|pem|secret|require_exp|clock_skew)" +
    "|auth\\.routes\\[\\d+\\]\\.(id|method|path_pattern|enabled)" +
    "|rate_limits\\[\\d+\\]\\.(id|method|path_pattern|requests|window|enabled))$",
);
const NUMBER_PATH = /(sample_limit|requests)$/;
/** What a setting expects, by the end of its path, for problems only the server words. */
const INVALID = [
  [/^auth\.secret$/, "apisec.f_secret_missing"],
  [/^auth\.algorithms$/, "apisec.f_key_missing"],
  [/(clock_skew|window)$/, "apisec.f_duration_invalid"],
  [/path_pattern$/, "apisec.f_pattern_invalid"],
  [/\.id$/, "apisec.f_id_invalid"],
  [/jwks_url$/, "apisec.f_url_invalid"],
];
const expected = (at) => INVALID.find(([re]) => re.test(at))?.[1];

/** One value of a list shown as one control (`auth.audience[1]` is the audience box). */
const controlPath = (field) =>
  String(field).replace(/^(auth\.(audience|algorithms))\[\d+\]$/, "$1");

/**
 * The refused settings: by the path of the control that shows each (its texts in the user's
 * language), and the ones no control of the form view shows.
 */
function problemsByControl(error) {
  const byPath = new Map();
  const rest = [];
  for (const p of problemsOf(error)) {
    const at = controlPath(p.field);
    const text = problemText(p, {
      type: NUMBER_PATH.test(at) ? "number" : "text",
      invalid: expected(at),
    });
    if (!RENDERED.test(at)) {
      rest.push({ field: p.field, text });
      continue;
    }
    byPath.set(at, [...(byPath.get(at) ?? []), text]);
  }
  return { byPath, rest };
}

const idOf = (path) => "apisec-" + path.replace(/[^a-z0-9]+/gi, "-").replace(/-$/, "");

/** A setting's control with its label and, when the API refused it, its problems beside it. */
function Input({ path, label, hint, type = "text", value, onChange, problems, readOnly, ...rest }) {
  const id = idOf(path);
  const texts = problems.get(path);
  const describedBy = [hint ? id + "-hint" : "", texts ? id + "-problems" : ""].filter(Boolean)
    .join(" ") || undefined;
  const common = {
    id,
    "aria-describedby": describedBy,
    "aria-invalid": texts ? "true" : undefined,
    disabled: readOnly,
  };
  let control;
  if (type === "checkbox") {
    control = html`
      <input type="checkbox" ...${common} checked=${value === true}
        onChange=${(e) => onChange(e.target.checked)} />
    `;
  } else if (type === "select") {
    control = html`<select ...${common} value=${value} onChange=${(e) => onChange(e.target.value)}>
      ${rest.options.map((o) => html`<option value=${o} selected=${o === value}>${o}</option>`)}
    </select>`;
  } else if (type === "textarea") {
    control = html`
      <textarea ...${common} rows="4" spellcheck=${false} value=${value ?? ""}
        onInput=${(e) => onChange(e.target.value)}></textarea>
    `;
  } else {
    control = html`
      <input type=${type === "password" ? "password" : "text"} ...${common}
        inputmode=${type === "number" ? "numeric" : undefined} value=${value ?? ""}
        autocomplete=${type === "password" ? "new-password" : "off"} spellcheck=${false}
        placeholder=${rest.placeholder} onInput=${(e) => onChange(e.target.value)} />
    `;
  }
  return html`<${Field} id=${id} label=${label} hint=${hint} inline=${type === "checkbox"}>
    ${control}
    ${
    texts
      ? html`<ul class="field-problems" id=${id + "-problems"}>${
        texts.map((x) => html`<li>${x}</li>`)
      }</ul>`
      : null
  }
  </${Field}>`;
}

const num = (v) => (v === "" || v === null || v === undefined ? v : Number(v));
const lines = (v) => String(v ?? "").split("\n").map((s) => s.trim()).filter((s) => s !== "");

/** Entries of a list (auth routes, route limits) as rows, each with its own controls. */
function Rows({ path, items, columns, make, onChange, problems, readOnly, addLabel, empty }) {
  const set = (i, key, value) =>
    onChange(items.map((item, j) => (j === i ? { ...item, [key]: value } : item)));
  return html`<div class="apisec-rows" id=${idOf(path)}>
    ${items.length === 0 ? html`<p class="muted">${empty}</p>` : null}
    ${
    items.map((item, i) =>
      html`<fieldset class="apisec-row" key=${i}>
        <legend>${item.id || t("apisec.f_entry", { n: i + 1 })}</legend>
        ${
        columns.map((c) =>
          html`
            <${Input} path=${`${path}[${i}].${c.key}`} label=${t(c.label)} type=${c.type}
              options=${c.options} value=${item[c.key]} problems=${problems} readOnly=${readOnly}
              onChange=${(v) => set(i, c.key, c.type === "number" ? num(v) : v)} />
          `
        )
      }
        ${
        readOnly ? null : html`
          <button type="button" class="secondary small"
            id=${idOf(`${path}[${i}]`) + "-remove"}
            onClick=${() => onChange(items.filter((_, j) => j !== i))}>${t(
              "apisec.f_remove",
            )}</button>
        `
      }
      </fieldset>`
    )
  }
    ${
    readOnly ? null : html`
      <button type="button" class="secondary" id=${idOf(path) + "-add"}
        onClick=${() => onChange([...items, make(items.length)])}>${addLabel}</button>
    `
  }
  </div>`;
}

const ROUTE_COLUMNS = [
  { key: "id", label: "apisec.f_id" },
  { key: "method", label: "apisec.method", type: "select", options: METHODS },
  { key: "path_pattern", label: "apisec.f_path_pattern" },
  { key: "enabled", label: "common.enabled", type: "checkbox" },
];
const LIMIT_COLUMNS = [
  { key: "id", label: "apisec.f_id" },
  { key: "method", label: "apisec.method", type: "select", options: METHODS },
  { key: "path_pattern", label: "apisec.f_path_pattern" },
  { key: "requests", label: "apisec.f_requests", type: "number" },
  { key: "window", label: "apisec.f_window" },
  { key: "enabled", label: "common.enabled", type: "checkbox" },
];

/** The structured view of `draft`; `change(fn)` replaces the draft with `fn(draft)`. */
function StructuredView({ draft, change, problems, readOnly }) {
  const d = draft;
  const set = (block, key) => (v) => change((x) => ({ ...x, [block]: { ...x[block], [key]: v } }));
  const p = { problems, readOnly };
  const schemas = d.validation.schemas ?? [];
  const algorithms = new Set(d.auth.algorithms ?? []);
  const toggleAlg = (alg) => (on) => {
    const next = ALGORITHMS.filter((a) => (a === alg ? on : algorithms.has(a)));
    set("auth", "algorithms")(next);
  };
  return html`
    <div id="apisec-form">
      <fieldset class="apisec-block" id="apisec-discovery">
        <legend>${t("apisec.f_discovery")}</legend>
        <p class="hint">${t("apisec.f_discovery_hint")}</p>
        <${Input} path="discovery.enabled" label=${t("apisec.f_discovery_enabled")} type="checkbox"
          value=${d.discovery.enabled} onChange=${set("discovery", "enabled")} ...${p} />
        <${Input} path="discovery.sample_limit" label=${t("apisec.f_sample_limit")} type="number"
          hint=${t("apisec.f_sample_limit_hint")} value=${d.discovery.sample_limit}
          onChange=${(v) => set("discovery", "sample_limit")(num(v))} ...${p} />
      </fieldset>

      <fieldset class="apisec-block" id="apisec-validation">
          <legend>${t("apisec.f_validation")}</legend>
          <p class="hint">${t("apisec.f_validation_hint")}</p>
          <${Input} path="validation.enabled" label=${t(
            "apisec.f_validation_enabled",
          )} type="checkbox"
            value=${d.validation.enabled} onChange=${set("validation", "enabled")} ...${p} />
          ${schemas.length === 0
            ? html`<p class="muted">${t("apisec.f_no_schemas")}</p>`
            : schemas.map((s, i) =>
              html`
                <${Input} key=${s.id} path=${`validation.schemas[${i}].enabled`}
                  label=${t("apisec.f_schema_on", {
                    id: s.id,
                    method: s.method,
                    path: s.path_pattern,
                  })}
                  type="checkbox" value=${s.enabled} ...${p}
                  onChange=${(v) =>
                    set("validation", "schemas")(
                      schemas.map((x, j) => (j === i ? { ...x, enabled: v } : x)),
                    )} />
              `
            )}
        </fieldset>

      <fieldset class="apisec-block" id="apisec-auth">
        <legend>${t("apisec.f_auth")}</legend>
        <p class="hint">${t("apisec.f_auth_hint")}</p>
        <${Input} path="auth.enabled" label=${t("apisec.f_auth_enabled")} type="checkbox"
          value=${d.auth.enabled} onChange=${set("auth", "enabled")} ...${p} />
        <${Input} path="auth.issuer" label=${t("apisec.f_issuer")} hint=${t("apisec.f_issuer_hint")}
          value=${d.auth.issuer} onChange=${(v) => set("auth", "issuer")(v === "" ? null : v)}
          ...${p} />
        <${Input} path="auth.audience" label=${t("apisec.f_audience")} type="textarea"
          hint=${t("apisec.f_audience_hint")} value=${(d.auth.audience ?? []).join("\n")}
          onChange=${(v) => set("auth", "audience")(lines(v))} ...${p} />
        <fieldset class="apisec-algorithms" id="apisec-auth-algorithms">
            <legend>${t("apisec.f_algorithms")}</legend>
            ${ALGORITHMS.map((alg) =>
              html`
                <${Input} key=${alg} path=${"auth.algorithms." + alg} label=${alg} type="checkbox"
                  value=${algorithms.has(alg)} onChange=${toggleAlg(alg)} ...${p} />
              `
            )}
            ${problems.get("auth.algorithms")
              ? html`<ul class="field-problems">${
                problems.get("auth.algorithms").map((x) => html`<li>${x}</li>`)
              }</ul>`
              : null}
          </fieldset>
        <${Input} path="auth.jwks_url" label=${t("apisec.f_jwks_url")}
          hint=${t("apisec.f_jwks_url_hint")} value=${d.auth.jwks_url}
          onChange=${(v) => set("auth", "jwks_url")(v === "" ? null : v)} ...${p} />
        <${Input} path="auth.pem" label=${t("apisec.f_pem")} type="textarea" value=${d.auth.pem}
          onChange=${(v) => set("auth", "pem")(v === "" ? null : v)} ...${p} />
        <${Input} path="auth.secret" label=${t("apisec.f_secret")} type="password"
          hint=${t(d.auth.secret_set ? "apisec.f_secret_set" : "apisec.f_secret_hint")}
          value=${d.auth.secret ?? ""} ...${p}
          onChange=${(v) =>
            change((x) => {
              const { secret: _old, ...auth } = x.auth;
              return { ...x, auth: v === "" ? auth : { ...auth, secret: v } };
            })} />
        <${Input} path="auth.require_exp" label=${t("apisec.f_require_exp")} type="checkbox"
          value=${d.auth.require_exp} onChange=${set("auth", "require_exp")} ...${p} />
        <${Input} path="auth.clock_skew" label=${t("apisec.f_clock_skew")}
          hint=${t("apisec.f_duration_hint")} value=${d.auth.clock_skew}
          onChange=${set("auth", "clock_skew")} ...${p} />
        <h3>${t("apisec.f_auth_routes")}</h3>
        <${Rows} path="auth.routes" items=${d.auth.routes ?? []} columns=${ROUTE_COLUMNS} ...${p}
          empty=${t("apisec.f_no_auth_routes")} addLabel=${t("apisec.f_add_auth_route")}
          make=${(n) => ({
            id: `route-${n + 1}`,
            method: "*",
            path_pattern: "^/api/",
            enabled: true,
            site_id: null,
          })} onChange=${set("auth", "routes")} />
      </fieldset>

      <fieldset class="apisec-block" id="apisec-limits">
        <legend>${t("apisec.f_limits")}</legend>
        <p class="hint">${t("apisec.f_limits_hint")}</p>
        <${Rows} path="rate_limits" items=${d.rate_limits ?? []} columns=${LIMIT_COLUMNS} ...${p}
          empty=${t("apisec.f_no_limits")} addLabel=${t("apisec.f_add_limit")}
          make=${(n) => ({
            id: `limit-${n + 1}`,
            method: "POST",
            path_pattern: "^/login$",
            requests: 5,
            window: "1m",
            enabled: true,
            site_id: null,
          })} onChange=${(v) => change((x) => ({ ...x, rate_limits: v }))} />
      </fieldset>
    </div>
  `;
}

/**
 * The settings panel: the form view by default, the JSON view one click away. `tick` changes
 * when another panel (the OpenAPI import) changed the stored document.
 */
export function Settings({ tick, onSaved }) {
  const doc = useApi("/api/apisec/config");
  const action = useAction();
  const [draft, setDraft] = useState(null);
  const [view, setView] = useState("form");
  const [text, setText] = useState(null);
  useEffect(() => {
    if (tick === 0) return;
    setDraft(null);
    setText(null);
    doc.reload();
  }, [tick]);
  const writable = can(WRITE);
  const current = draft ?? doc.data;
  const shown = text ?? (current ? JSON.stringify(current, null, 2) : "");

  /** The JSON view's text as a document, or an error the panel shows. */
  const parsed = () => {
    try {
      return JSON.parse(shown);
    } catch (err) {
      throw { message: t("apisec.not_json", { error: String(err.message) }), code: "BAD_JSON" };
    }
  };
  const show = (next) => {
    if (next === view) return;
    if (next === "form" && text !== null) {
      let body;
      try {
        body = parsed();
      } catch (err) {
        return action.setError(err);
      }
      setDraft(body);
      setText(null);
    }
    action.setError(null);
    setView(next);
  };
  const save = (e) => {
    e.preventDefault();
    action.run(async () => {
      const body = view === "json" ? parsed() : current;
      const stored = await put("/api/apisec/config", body);
      setDraft(null);
      setText(null);
      doc.reload();
      onSaved(stored);
    }, t("common.saved"));
  };
  const split = view === "form" ? problemsByControl(action.error) : { byPath: new Map(), rest: [] };
  const problems = split.byPath;
  const shownInForm = view === "form" && isFieldError(action.error);
  return html`<form class="panel" id="apisec-settings" onSubmit=${save} novalidate>
    <h2>${t("apisec.settings")}</h2>
    <p class="muted">${t("apisec.settings_intro")}</p>
    ${writable ? null : html`<${ReadOnlyNote} permission=${WRITE} />`}
    <${Loading} state=${doc} />
    <div class="view-switch" role="group" aria-label=${t("apisec.f_view")}>
      <button type="button" id="apisec-view-form" class=${view === "form" ? "" : "secondary"}
        aria-pressed=${view === "form"} onClick=${() => show("form")}>${
    t("apisec.f_view_form")
  }</button>
      <button type="button" id="apisec-view-json" class=${view === "json" ? "" : "secondary"}
        aria-pressed=${view === "json"} onClick=${() => show("json")}>${
    t("apisec.f_view_json")
  }</button>
    </div>
    ${
    shownInForm
      ? html`<div class="error-box form-problems" role="alert">
        <p class="error-message">${
        t(split.rest.length > 0 ? "apisec.f_check_json" : "apisec.f_check")
      }</p>
        ${
        split.rest.length > 0
          ? html`<ul>${
            split.rest.map((x) => html`<li><code>${x.field}</code>: ${x.text}</li>`)
          }</ul>`
          : null
      }
        <p class="error-meta"><span>${t("error.code")}: <code>${action.error.code}</code></span>
          ${
        action.error.traceId
          ? html`<span>${
            t("error.trace")
          }: <code class="trace-id">${action.error.traceId}</code></span>`
          : null
      }</p>
      </div>`
      : html`<${ErrorBox} error=${action.error} />`
  }
    ${
    current && view === "form"
      ? html`
        <${StructuredView} draft=${current} problems=${problems} readOnly=${!writable}
          change=${(fn) => setDraft(fn(current))} />
      `
      : null
  }
    ${
    current && view === "json"
      ? html`
        <${Field} id="apisec-config" label=${t("apisec.settings_json")}>
          <textarea id="apisec-config" rows="18" spellcheck=${false} readOnly=${!writable}
            value=${shown} onInput=${(e) => setText(e.target.value)}></textarea>
          </${Field}>
      `
      : null
  }
    ${
    writable && current
      ? html`<button type="submit" id="apisec-save" disabled=${action.busy}>${
        t("common.save")
      }</button>`
      : null
  }
    <${Done} text=${action.done} />
  </form>`;
}
