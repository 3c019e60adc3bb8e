// My account: the console language (stored per user), my password (the current one confirms a
// new one; every user may change their own), and my own two-factor authentication: set up with a
// QR code, confirm with a code to enable (this session stays signed in, the others end) and get
// ten recovery codes shown once, with copy and download; the count left, a new set confirmed
// with the password; disable with password and code.
import { post, put, toLogin } from "../api.js";
import {
  Badge,
  Done,
  ErrorBox,
  Field,
  Page,
  PermissionChips,
  useAction,
  useApi,
} from "../components.js";
import { currentLanguage, fmtTime, LANGUAGES, setLanguage, t } from "../i18n.js";
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
      toLogin(true, "password_changed");
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

/** The codes of a new set, shown this once: copy them all, or download them as a text file. */
function NewCodes({ codes, username, onSaved }) {
  const [copied, setCopied] = useState(false);
  const text = codes.join("\n") + "\n";
  const copy = async () => {
    await navigator.clipboard.writeText(text).catch(() => {});
    setCopied(true);
  };
  const href = "data:text/plain;charset=utf-8," + encodeURIComponent(text);
  return html`
    <div class="panel recovery-new" id="recovery-codes" role="status">
      <h3>${t("account.codes_title")}</h3>
      <p>${t("account.codes_once")}</p>
      <ol class="recovery-list" id="recovery-list">
        ${codes.map((c) => html`<li><code>${c}</code></li>`)}
      </ol>
      <button type="button" id="copy-recovery-codes" onClick=${copy}>${t("common.copy")}</button>
      <a class="button secondary" id="download-recovery-codes" href=${href}
        download=${`waf-recovery-codes-${username}.txt`}>${t("account.codes_download")}</a>
      ${copied ? html`<span class="done">${t("common.copied")}</span>` : null}
      <p><button type="button" class="secondary" id="recovery-saved" onClick=${onSaved}>${t(
        "account.codes_saved",
      )}</button></p>
    </div>
  `;
}

/** How many recovery codes are left, and a new set confirmed with the password. */
function RecoveryCodes({ user, onNewCodes }) {
  const status = useApi(`/api/users/${user.id}/2fa/recovery-codes`);
  const [password, setPassword] = useState("");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const r = await post(`/api/users/${user.id}/2fa/recovery-codes`, { password });
      setPassword("");
      onNewCodes(r.recovery_codes);
      status.reload();
    });
  };
  const s = status.data;
  return html`
    <form class="recovery" onSubmit=${submit}>
      <h3>${t("account.codes")}</h3>
      ${s
        ? html`<p id="recovery-left" class=${s.remaining <= 2 ? "notice warn-note" : ""}>${
          t("account.codes_left", { n: s.remaining, total: s.total })
        }${s.created_at ? " " + t("account.codes_made", { time: fmtTime(s.created_at) }) : ""}${
          s.remaining <= 2 ? " " + t("account.codes_low") : ""
        }</p>`
        : null}
      <${Field} id="recovery-password" label=${t("users.your_password")} hint=${t(
        "account.codes_new_hint",
      )}>
        <input id="recovery-password" type="password" autocomplete="current-password"
          value=${password} onInput=${(e) => setPassword(e.target.value)} />
      </${Field}>
      <button type="submit" class="secondary" id="recovery-regenerate"
        disabled=${action.busy || password === ""}>${t("account.codes_new")}</button>
      <${ErrorBox} error=${action.error} />
    </form>
  `;
}

function Enable({ user, onEnabled }) {
  const [setup, setSetup] = useState(null);
  const [code, setCode] = useState("");
  const action = useAction();
  const start = () =>
    action.run(async () => setSetup(await post(`/api/users/${user.id}/2fa/setup`, {})));
  const enable = (e) => {
    e.preventDefault();
    action.run(async () => {
      const r = await post(`/api/users/${user.id}/2fa/enable`, { code: code.trim() });
      if (!r.session_kept) return toLogin(true, "2fa_on");
      onEnabled(r.recovery_codes);
    });
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
        </form>
  `;
}

function Disable({ user }) {
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      await post(`/api/users/${user.id}/2fa/disable`, { password, code: code.trim() });
      // Turning it off ends every session of the account: sign in again, with the password.
      toLogin(true, "2fa_off");
    }, t("account.disabled"));
  };
  return html`
    <form onSubmit=${submit}>
      <h3>${t("account.disable_title")}</h3>
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
          <${ErrorBox} error=${action.error} />
          <${Done} text=${action.done} />
          </form>
  `;
}

function TwoFactor({ user, onChanged }) {
  // New recovery codes (after enabling, or a new set) until the user says they are saved.
  const [codes, setCodes] = useState(null);
  const enabled = (fresh) => {
    setCodes(fresh);
    onChanged();
  };
  return html`
    <div class="panel" id="two-factor">
      <h2>${t("account.tfa")}</h2>
      <p class="muted">${t("account.tfa_intro")}</p>
      ${codes
        ? html`
          <${NewCodes} codes=${codes} username=${user.username}
            onSaved=${() => setCodes(null)} />
        `
        : null}
      ${user.totp_enabled
        ? html`
          <p>
            <${Badge} kind="good">${t("account.tfa_on")}</${Badge}></p>
          ${codes ? null : html`<${RecoveryCodes} user=${user} onNewCodes=${setCodes} />`}
          <${Disable} user=${user} />
        `
        : html`<${Enable} user=${user} onEnabled=${enabled} />`}
    </div>
  `;
}

export default function Account() {
  const [user, setUser] = useState(session().user);
  const refresh = () => loadSession().then((s) => setUser(s.user), () => {});
  return html`
    <${Page} title=${t("nav.account")}>
      <dl class="facts">
        <dt>${t("users.username")}</dt>
        <dd>${user.username}</dd>
        <dt>${t("users.role")}</dt>
        <dd>${user.role}</dd>
        <dt>${t("account.permissions")}</dt>
        <dd>
          <${PermissionChips} id="account-permissions"
            permissions=${session().effective_permissions} />
        </dd>
      </dl>
      <${Language} />
      <${Password} user=${user} />
      <${TwoFactor} user=${user} onChanged=${refresh} />
      </${Page}>
  `;
}
