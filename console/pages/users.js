// Users: create accounts, change role, password or username, disable and enable them, and
// recover another account's 2FA (the administrator confirms with their own password). Changing
// one's own password here asks for the current one, as the account page does.
import { post } from "../api.js";
import { Badge, Done, ErrorBox, Field, Page, useAction } from "../components.js";
import { Crud } from "../crud.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can, session } from "../session.js";

const ROLES = [{ value: "admin", label: "users.role_admin" }, {
  value: "readonly",
  label: "users.role_readonly",
}];

const CREATE = [
  {
    name: "username",
    label: "users.username",
    type: "text",
    required: true,
    hint: "users.username_hint",
  },
  {
    name: "password",
    label: "users.password",
    type: "password",
    required: true,
    hint: "users.password_hint",
  },
  // Least privilege first: an administrator is made on purpose.
  { name: "role", label: "users.role", type: "select", options: ROLES, default: "readonly" },
];

const EDIT = [
  { name: "username", label: "users.username", type: "text", required: true },
  { name: "role", label: "users.role", type: "select", options: ROLES },
  {
    name: "password",
    label: "users.new_password",
    type: "password",
    hint: "users.new_password_hint",
  },
  { name: "disabled", label: "users.disabled", type: "checkbox", hint: "users.disabled_hint" },
];

/** Sent with a new password for one's own account: the API asks for it (`current_password`). */
const CURRENT_PASSWORD = {
  name: "current_password",
  label: "account.current_password",
  type: "password",
  autocomplete: "current-password",
  hint: "users.current_password_hint",
};

/** A role the configuration defines beyond the two defaults is kept as it is. */
function withRole(fields, role) {
  if (!role || ROLES.some((r) => r.value === role)) return fields;
  return fields.map((f) =>
    f.name === "role" ? { ...f, options: [...ROLES, { value: role, label: role }] } : f
  );
}

/** The edit form of `user`: one's own account also asks for the current password. */
function editFields(user, me) {
  const fields = withRole(EDIT, user.role);
  if (user.id !== me) return fields;
  const at = fields.findIndex((f) => f.name === "password") + 1;
  return [...fields.slice(0, at), CURRENT_PASSWORD, ...fields.slice(at)];
}

/** What an edit sends: a password only when one is typed, the current one only beside it. */
function prepare(doc, isNew) {
  if (isNew) return doc;
  const { password, current_password, ...rest } = doc;
  if (!password) return rest;
  return current_password ? { ...rest, password, current_password } : { ...rest, password };
}

function Recover({ user, onDone }) {
  const [password, setPassword] = useState("");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      await post(`/api/users/${user.id}/2fa/recover`, { password });
      onDone();
    }, t("users.recovered", { user: user.username }));
  };
  return html`
    <form class="panel" onSubmit=${submit}>
      <h2>${t("users.recover_title", { user: user.username })}</h2>
      <p class="muted">${t("users.recover_intro")}</p>
      <${Field} id="recover-password" label=${t("users.your_password")}>
        <input id="recover-password" type="password" autocomplete="current-password" value=${password}
          onInput=${(e) => setPassword(e.target.value)} />
        </${Field}>
        <button type="submit" class="danger" disabled=${action.busy || password === ""}>${t(
          "users.recover",
        )}</button>
        <${ErrorBox} error=${action.error} />
        <${Done} text=${action.done} />
        </form>
  `;
}

export default function Users() {
  const [recovering, setRecovering] = useState(null);
  const me = session().user.id;
  const writable = can("write:users");
  return html`<${Page} title=${t("nav.users")}>
    ${
    recovering
      ? html`<${Recover} key=${recovering.id} user=${recovering} onDone=${() =>
        setRecovering(null)} />`
      : null
  }
    <${Crud} base="/api/users" write="write:users" fields=${CREATE} editFields=${(u) =>
    editFields(u, me)}
      deletable=${false} name=${(u) => u.username} newLabel=${t("users.new")}
      prepare=${prepare}
      rowActions=${(u) =>
    writable && u.totp_enabled && u.id !== me
      ? html`<button type="button" class="secondary small" onClick=${() => setRecovering(u)}>${
        t("users.recover")
      }</button>`
      : null}
      columns=${[
    {
      label: t("users.username"),
      value: (u) =>
        html`${u.username} ${
          u.id === me
            ? html`
              <${Badge}>${t("users.you")}</${Badge}>
            `
            : null
        }`,
    },
    { label: t("users.role"), key: "role" },
    {
      label: "2FA",
      value: (u) =>
        u.totp_enabled ? html`<${Badge} kind="good">${t("users.on")}</${Badge}>` : t("users.off"),
    },
    {
      label: t("common.status"),
      value: (u) =>
        u.disabled
          ? html`<${Badge} kind="bad">${t("users.disabled")}</${Badge}>`
          : html`<${Badge} kind="good">${t("users.active")}</${Badge}>`,
    },
    { label: t("common.created"), value: (u) => fmtTime(u.created_at) },
  ]} />
  </${Page}>`;
}
