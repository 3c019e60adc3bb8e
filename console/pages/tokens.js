// Management API tokens: create with a scope (a subset of my permissions, grouped by area, each
// described, with read-only / everything presets) and an expiry, the secret shown once with a
// copy button, the list (metadata only) and revocation. While `waf.yaml` keeps tokens off, the
// page says so first, names the key and the restart, and the form stays disabled. The
// non-expiring option is shown but disabled: it needs a strong verifier this runtime lacks
// (specification 5.3, API_TOKEN_CONFIRMATION_UNAVAILABLE).
import { del, post } from "../api.js";
import {
  Badge,
  ConfirmButton,
  CopyOnce,
  Done,
  ErrorBox,
  Field,
  Loading,
  Page,
  PermissionChips,
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { areaName, describePermission, groupPermissions, PRESETS } from "../permissions.js";
import { can, session } from "../session.js";

function Secret({ token, onClose }) {
  return html`
    <div class="panel" role="status">
      <h2>${t("tokens.secret_title")}</h2>
      <p>${t("tokens.secret_once")}</p>
      <${CopyOnce} id="token-secret" value=${token} />
      <button type="button" class="secondary" onClick=${onClose}>${t("common.close")}</button>
    </div>
  `;
}

/** Why no token can be made: the key that turns tokens on, and that it takes a restart. */
function Disabled({ setting }) {
  const [root, middle, leaf] = setting.split(".");
  return html`
    <div class="notice warn-note" id="tokens-disabled" role="note">
      <h2>${t("tokens.disabled_title")}</h2>
      <p>${t("tokens.disabled_how")} <code>${setting}: true</code></p>
      <pre>${`${root}:\n  ${middle}:\n    ${leaf}: true`}</pre>
      <p>${t("tokens.disabled_restart")}</p>
    </div>
  `;
}

const scopeId = (p) => "scope-" + p.replace(":", "-");

/** The scope: the caller's permissions by area, each described, and the presets. */
function Scope({ held, scope, setScope }) {
  const toggle = (p) => (e) =>
    setScope(e.target.checked ? [...scope, p] : scope.filter((x) => x !== p));
  const preset = (name) => () => setScope(PRESETS[name](held));
  return html`
    <fieldset class="scope" aria-describedby="scope-count">
      <legend>${t("tokens.scope")}</legend>
      <div class="perm-presets" role="group" aria-label=${t("tokens.presets")}>
        <button type="button" class="secondary small" id="preset-read" onClick=${preset("read")}>
          ${t("tokens.preset_read")}</button>
        <button type="button" class="secondary small" id="preset-all" onClick=${preset("all")}>
          ${t("tokens.preset_all")}</button>
        <button type="button" class="secondary small" id="preset-none" onClick=${preset("none")}>
          ${t("tokens.preset_none")}</button>
        <span class="muted" id="scope-count">${t("tokens.selected", {
          n: scope.length,
          total: held.length,
        })}</span>
      </div>
      <div class="perm-groups">
        ${groupPermissions(held).map((g) =>
          html`<fieldset class="perm-group" id=${"perm-group-" + g.id}>
            <legend>${areaName(g.id)}</legend>
            ${
            g.permissions.map((p) =>
              html`
                <div class="perm-item">
                  <input type="checkbox" id=${scopeId(p)} checked=${scope.includes(p)}
                    onChange=${toggle(p)} aria-describedby=${scopeId(p) + "-desc"} />
                  <label for=${scopeId(p)}><code>${p}</code></label>
                  <span class="perm-desc" id=${scopeId(p) + "-desc"}>${describePermission(p)}</span>
                </div>
              `
            )
          }
          </fieldset>`
        )}
      </div>
    </fieldset>
  `;
}

function Create({ enabled, onCreated }) {
  const held = session().effective_permissions;
  const [note, setNote] = useState("");
  const [scope, setScope] = useState([]);
  const [days, setDays] = useState("90");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const r = await post("/api/system/api-tokens", {
        note,
        permissions: held.filter((p) => scope.includes(p)),
        expires_in_days: Number(days),
      });
      setNote("");
      setScope([]);
      onCreated(r);
    });
  };
  return html`
    <form class="panel" id="token-form" onSubmit=${submit}>
      <h2>${t("tokens.new")}</h2>
      <fieldset disabled=${!enabled} class="token-fields">
        <${Field} id="token-note" label=${t("common.note")} hint=${t("tokens.note_hint")}>
          <input id="token-note" value=${note} onInput=${(e) => setNote(e.target.value)} />
          </${Field}>
          <${Scope} held=${held} scope=${scope} setScope=${setScope} />
          <${Field} id="token-days" label=${t("tokens.days")} hint=${t("tokens.days_hint")}>
            <input id="token-days" inputmode="numeric" value=${days}
              onInput=${(e) => setDays(e.target.value)} />
            </${Field}>
            <${Field} id="token-never" label=${t("tokens.never")} hint=${t(
              "tokens.never_reason",
            )} inline>
              <input type="checkbox" id="token-never" disabled aria-describedby="token-never-hint" />
              </${Field}>
              <button type="submit" id="token-create" disabled=${action.busy ||
                scope.length === 0}>${t("tokens.create")}</button>
              </fieldset>
              <${ErrorBox} error=${action.error} />
              </form>
  `;
}

export default function Tokens() {
  const list = useApi("/api/system/api-tokens");
  const [created, setCreated] = useState(null);
  const action = useAction();
  const writable = can("manage:api_tokens");
  const enabled = list.data?.enabled !== false;
  const revoke = (tok) =>
    action.run(async () => {
      await del(`/api/system/api-tokens/${tok.id}`);
      list.reload();
    }, t("tokens.revoked_done"));
  // The form is on the page: the header's primary action takes the keyboard to it.
  const toForm = () => {
    const note = document.getElementById("token-note");
    note?.scrollIntoView({ block: "center" });
    note?.focus({ preventScroll: true });
  };
  const primary = writable && list.data && enabled
    ? html`<button type="button" id="token-new" onClick=${toForm}>${t("tokens.new")}</button>`
    : null;
  return html`
    <${Page} title=${t("nav.tokens")} description=${t("tokens.intro")}
      actions=${primary}>
        ${writable ? null : html`<${ReadOnlyNote} permission="manage:api_tokens" />`}
        ${list.data && !enabled ? html`<${Disabled} setting=${list.data.setting} />` : null}
        ${created
          ? html`<${Secret} token=${created.token} onClose=${() => setCreated(null)} />`
          : null}
        ${writable && list.data
          ? html`<${Create} enabled=${enabled} onCreated=${(
            r,
          ) => (setCreated(r), list.reload())} />`
          : null}
        <${ErrorBox} error=${action.error} /><${Done} text=${action.done} />
        <${Loading} state=${list} />
        ${list.data
          ? html`<${Table} rows=${list.data.items} empty=${
            t(writable && enabled ? "tokens.empty_next" : "tokens.empty")
          } columns=${[
            { label: t("common.note"), key: "note" },
            {
              label: t("tokens.scope"),
              value: (x) => html`<${PermissionChips} permissions=${x.permissions} />`,
            },
            { label: t("common.created"), value: (x) => fmtTime(x.created_at) },
            { label: t("tokens.expires"), value: (x) => fmtTime(x.expires_at) },
            {
              label: t("tokens.last_used"),
              value: (x) =>
                x.last_used_at ? `${fmtTime(x.last_used_at)} (${x.last_used_ip ?? "-"})` : "-",
            },
            {
              label: t("common.status"),
              value: (x) =>
                x.revoked
                  ? html`<${Badge} kind="bad">${t("tokens.revoked")}</${Badge}>`
                  : html`<${Badge} kind="good">${t("tokens.active")}</${Badge}>`,
            },
            {
              label: t("common.actions"),
              value: (x) =>
                writable && !x.revoked
                  ? html`<${ConfirmButton} label=${t("tokens.revoke")} question=${
                    t("tokens.revoke_question", { note: x.note || x.id })
                  } onConfirm=${() => revoke(x)} />`
                  : null,
            },
          ]} />`
          : null}
      </${Page}>
  `;
}
