// Management API tokens: create with a scope (a subset of my permissions) and an expiry, the
// secret shown once with a copy button, the list (metadata only) and revocation. The
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
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
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

function Create({ onCreated }) {
  const mine = session().effective_permissions;
  const [note, setNote] = useState("");
  const [scope, setScope] = useState([]);
  const [days, setDays] = useState("90");
  const action = useAction();
  const toggle = (p) => (e) =>
    setScope(e.target.checked ? [...scope, p] : scope.filter((x) => x !== p));
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const r = await post("/api/system/api-tokens", {
        note,
        permissions: scope,
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
      <${Field} id="token-note" label=${t("common.note")} hint=${t("tokens.note_hint")}>
        <input id="token-note" value=${note} onInput=${(e) => setNote(e.target.value)} />
        </${Field}>
        <fieldset class="scope"><legend>${t("tokens.scope")}</legend>
          ${mine.map((p) =>
            html`<div class="field inline">
        <input type="checkbox" id=${"scope-" + p.replace(":", "-")} checked=${
              scope.includes(p)
            } onChange=${toggle(p)} />
        <label for=${"scope-" + p.replace(":", "-")}><code>${p}</code></label></div>`
          )}
        </fieldset>
        <${Field} id="token-days" label=${t("tokens.days")} hint=${t("tokens.days_hint")}>
          <input id="token-days" inputmode="numeric" value=${days} onInput=${(e) =>
            setDays(e.target.value)} />
          </${Field}>
          <${Field} id="token-never" label=${t("tokens.never")} hint=${t(
            "tokens.never_reason",
          )} inline>
            <input type="checkbox" id="token-never" disabled aria-describedby="token-never-hint" />
            </${Field}>
            <button type="submit" id="token-create" disabled=${action.busy ||
              scope.length === 0}>${t("tokens.create")}</button>
            <${ErrorBox} error=${action.error} />
            </form>
  `;
}

export default function Tokens() {
  const list = useApi("/api/system/api-tokens");
  const [created, setCreated] = useState(null);
  const action = useAction();
  const writable = can("manage:api_tokens");
  const revoke = (tok) =>
    action.run(async () => {
      await del(`/api/system/api-tokens/${tok.id}`);
      list.reload();
    }, t("tokens.revoked_done"));
  return html`<${Page} title=${t("nav.tokens")}>
    <p class="muted">${t("tokens.intro")}</p>
    ${writable ? null : html`<${ReadOnlyNote} permission="manage:api_tokens" />`}
    ${created ? html`<${Secret} token=${created.token} onClose=${() => setCreated(null)} />` : null}
    ${writable ? html`<${Create} onCreated=${(r) => (setCreated(r), list.reload())} />` : null}
    <${ErrorBox} error=${action.error} /><${Done} text=${action.done} />
    <${Loading} state=${list} />
    ${
    list.data
      ? html`<${Table} rows=${list.data.items} empty=${t("tokens.empty")} columns=${[
        { label: t("common.note"), key: "note" },
        {
          label: t("tokens.scope"),
          value: (x) => x.permissions.join(", "),
          className: "mono wrap",
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
      : null
  }
  </${Page}>`;
}
