// My account: the console language (stored per user), my password (the current one confirms a
// new one; every user may change their own), and my own two-factor authentication: set up with a
// QR code, confirm with a code to enable, disable with password and code.
import { post, put, toLogin } from "../api.js";
import { Badge, Done, ErrorBox, Field, Page, useAction } from "../components.js";
import { currentLanguage, LANGUAGES, setLanguage, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { loadSession, saveLanguage, session } from "../session.js";

function Language() {
  const stored = session().preferences?.language ?? "";
  const action = useAction();
  const change = (e) =>
    action.run(async () => {
      const value = e.target.value || null;
      await saveLanguage(value);
      if (value) await setLanguage(value);
      location.reload();
    });
  return html`
    <div class="panel">
      <h2>${t("account.language")}</h2>
      <${Field} id="account-language" label=${t("account.language")} hint=${t(
        "account.language_hint",
        { lang: currentLanguage() },
      )}>
        <select id="account-language" onChange=${change}>
            <option value="" selected=${stored === ""}>${t("account.browser_language")}</option>
            ${LANGUAGES.map((l) =>
              html`<option value=${l.id} selected=${stored === l.id}>${l.name}</option>`
            )}
          </select>
        </${Field}>
        <${ErrorBox} error=${action.error} />
        </div>
  `;
}

function Password({ user }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      await put(`/api/users/${user.id}`, { password: next, current_password: current });
      // A new password ends every session of the account: sign in again with it.
      toLogin();
    }, t("account.password_changed"));
  };
  return html`
    <form class="panel" id="password" onSubmit=${submit}>
      <h2>${t("account.password")}</h2>
      <p class="muted">${t("account.password_intro")}</p>
      <${Field} id="current-password" label=${t("account.current_password")}>
        <input id="current-password" type="password" autocomplete="current-password" value=${current}
          onInput=${(e) => setCurrent(e.target.value)} />
        </${Field}>
        <${Field} id="new-password" label=${t("users.new_password")} hint=${t(
          "users.password_hint",
        )}>
          <input id="new-password" type="password" autocomplete="new-password" value=${next}
            onInput=${(e) => setNext(e.target.value)} />
          </${Field}>
          <button type="submit" id="password-change" disabled=${action.busy || current === "" ||
            next === ""}>${t("account.change_password")}</button>
          <${ErrorBox} error=${action.error} />
          <${Done} text=${action.done} />
          </form>
  `;
}

function Enable({ user, onDone }) {
  const [setup, setSetup] = useState(null);
  const [code, setCode] = useState("");
  const action = useAction();
  const start = () =>
    action.run(async () => setSetup(await post(`/api/users/${user.id}/2fa/setup`, {})));
  const enable = (e) => {
    e.preventDefault();
    action.run(async () => {
      await post(`/api/users/${user.id}/2fa/enable`, { code: code.trim() });
      onDone();
    }, t("account.enabled"));
  };
  if (!setup) {
    return html`
      <p>${t("account.tfa_off")}</p>
      <button type="button" id="tfa-setup" disabled=${action.busy} onClick=${start}>${t(
        "account.setup",
      )}</button>
      <${ErrorBox} error=${action.error} />
    `;
  }
  return html`
    <form onSubmit=${enable}>
      <p>${t("account.scan")}</p>
      <img class="qr" id="tfa-qr" src=${setup.qr_code} alt=${t("account.qr_alt")} />
      <p>${t("account.secret")} <code id="tfa-secret" class="secret">${setup.secret}</code></p>
      <${Field} id="tfa-code" label=${t("account.code")} hint=${t("account.enable_hint")}>
        <input id="tfa-code" inputmode="numeric" autocomplete="one-time-code" value=${code}
          onInput=${(e) => setCode(e.target.value)} />
        </${Field}>
        <button type="submit" id="tfa-enable" disabled=${action.busy || code.trim() === ""}>${t(
          "account.enable",
        )}</button>
        <${ErrorBox} error=${action.error} />
        <${Done} text=${action.done} />
        </form>
  `;
}

function Disable({ user, onDone }) {
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      await post(`/api/users/${user.id}/2fa/disable`, { password, code: code.trim() });
      onDone();
    }, t("account.disabled"));
  };
  return html`
    <form onSubmit=${submit}>
      <p>
        <${Badge} kind="good">${t("account.tfa_on")}</${Badge}></p>
        <${Field} id="disable-password" label=${t("users.your_password")}>
          <input id="disable-password" type="password" autocomplete="current-password" value=${password}
            onInput=${(e) => setPassword(e.target.value)} />
        </${Field}>
        <${Field} id="disable-code" label=${t("account.code")}>
          <input id="disable-code" inputmode="numeric" autocomplete="one-time-code" value=${code}
            onInput=${(e) => setCode(e.target.value)} />
        </${Field}>
        <button type="submit" class="danger" disabled=${action.busy}>${t(
          "account.disable",
        )}</button>
        <${ErrorBox} error=${action.error} /><${Done} text=${action.done} />
      </form>
  `;
}

export default function Account() {
  const [user, setUser] = useState(session().user);
  // Enabling or disabling 2FA ends every session of the account: signing in again follows.
  const refresh = () => loadSession().then((s) => setUser(s.user), () => {});
  return html`
    <${Page} title=${t("nav.account")}>
      <dl class="facts">
        <dt>${t("users.username")}</dt>
        <dd>${user.username}</dd>
        <dt>${t("users.role")}</dt>
        <dd>${user.role}</dd>
        <dt>${t("account.permissions")}</dt>
        <dd>${session().effective_permissions.join(", ")}</dd>
      </dl>
      <${Language} />
      <${Password} user=${user} />
      <div class="panel" id="two-factor">
          <h2>${t("account.tfa")}</h2>
          <p class="muted">${t("account.tfa_intro")}</p>
          ${user.totp_enabled
            ? html`<${Disable} user=${user} onDone=${refresh} />`
            : html`<${Enable} user=${user} onDone=${refresh} />`}
        </div>
      </${Page}>
  `;
}
