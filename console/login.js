// Sign-in page: asks the server which factors this client needs, solves the proof-of-work
// CAPTCHA when required, and goes to the console once the session cookie is set: to the guided
// first site while there is none, else to the page asked for. Coming from setup it says that the
// administrator account was created; otherwise it says why the console sent the browser here
// when it knows, and takes a recovery code instead of a code from the app.
import { t, translatePage } from "./page_i18n.js";

const $ = (id) => document.getElementById(id);
let captchaRequired = false;
let useRecovery = false;
/** Set by the setup page (this tab only) to the administrator it created. */
const CREATED_KEY = "waf.setup.created";
const FIRST_SITE = "/console/sites/first";

/**
 * Why the console ended the session, as it left it in this tab's session storage (api.js
 * `toLogin`): the key of its text, shown once; unknown reasons say nothing.
 */
const REASONS = {
  "2fa_on": "login.reason_2fa_on",
  "2fa_off": "login.reason_2fa_off",
  password_changed: "login.reason_password_changed",
};
let reason = "";
/** The last refusal, kept so that a change of language rewrites it. */
let lastError = null;

function showReason() {
  $("reason").textContent = reason ? t(REASONS[reason]) : "";
  $("reason").classList.toggle("hidden", reason === "");
}

function takeReason() {
  const stored = sessionStorage.getItem("waf.sign_in_reason") || "";
  sessionStorage.removeItem("waf.sign_in_reason");
  reason = Object.hasOwn(REASONS, stored) ? stored : "";
  showReason();
}

function labelRecovery() {
  $("use-recovery").textContent = t(useRecovery ? "login.use_app" : "login.use_recovery");
}

function showRecovery(on) {
  useRecovery = on;
  $("code-field").classList.toggle("hidden", on);
  $("recovery-field").classList.toggle("hidden", !on);
  labelRecovery();
  $(on ? "recovery" : "totp").focus();
}

/** The sign-in's refusals that the catalogues write (`login.error_<code>`). */
const OWN_REFUSALS = [
  "UNAUTHORIZED",
  "ACCOUNT_DISABLED",
  "TOTP_REQUIRED",
  "TOTP_INVALID",
  "RECOVERY_CODE_INVALID",
];

/**
 * A refusal in the page's language: the sign-in's own refusals by their code (the wait of a
 * lockout from its details), anything else with the server's English message.
 */
function refusalText(err) {
  if (err.code === "TOO_MANY_ATTEMPTS") {
    return t("login.error_TOO_MANY_ATTEMPTS", { seconds: err.retryAfter ?? "?" });
  }
  return OWN_REFUSALS.includes(err.code) ? t("login.error_" + err.code) : err.message;
}

function showError() {
  $("error").textContent = lastError ? refusalText(lastError) : "";
}

async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error((data.error && data.error.message) || ("HTTP " + response.status));
    error.code = data.error && data.error.code;
    error.retryAfter = data.error && data.error.retry_after;
    throw error;
  }
  return data;
}

/**
 * Where to go once signed in: the console page named by `?next=` (set by the console when a
 * signed-out browser opened it), else the console's start. Only this origin's console paths are
 * taken: the value is resolved against this page and must stay on this origin under
 * `/console/` (not the assets), so `//host`, `/\host`, `https://host`, `javascript:` and
 * `/console/../api` all fall back to `/console`.
 */
function nextPage() {
  const raw = new URLSearchParams(globalThis.location.search).get("next") || "";
  if (!raw.startsWith("/") || raw.startsWith("//") || /[\\\s\p{Cc}]/u.test(raw)) {
    return "/console";
  }
  let url;
  try {
    url = new URL(raw, globalThis.location.origin);
  } catch {
    return "/console";
  }
  const ok = url.origin === globalThis.location.origin &&
    /^\/console(\/|$)/.test(url.pathname) && !url.pathname.startsWith("/console/assets/");
  return ok ? url.pathname + url.search + url.hash : "/console";
}

/**
 * Where a fresh session lands: the page `next` asks for; without one, the guided first site
 * while no site exists (for a user who may create one and has not dismissed the getting-started
 * checklist), else the console's start. A failed look-up just goes to the start.
 */
async function landing() {
  const next = nextPage();
  if (next !== "/console") return next;
  try {
    const s = await call("GET", "/api/auth/session");
    if (!s.effective_permissions.includes("write:sites")) return next;
    if (s.preferences && s.preferences.checklist_dismissed) return next;
    const sites = await call("GET", "/api/sites");
    return sites.items.length === 0 ? FIRST_SITE : next;
  } catch {
    return next;
  }
}

/** Coming from setup: say the account exists and fill in its name. */
function showCreated() {
  let name = null;
  try {
    name = sessionStorage.getItem(CREATED_KEY);
    sessionStorage.removeItem(CREATED_KEY);
  } catch { /* storage off */ }
  if (name === null) return;
  $("created").classList.remove("hidden");
  if (name) {
    $("username").value = name;
    $("password").focus();
  }
}

function leadingZeroBits(bytes) {
  let bits = 0;
  for (const b of bytes) {
    if (b === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(b) - 24;
  }
  return bits;
}

async function solveCaptcha(username) {
  const c = await call("POST", "/api/auth/captcha");
  const encoder = new TextEncoder();
  for (let nonce = 0;; nonce++) {
    const digest = await crypto.subtle.digest("SHA-256", encoder.encode(c.challenge + ":" + nonce));
    if (leadingZeroBits(new Uint8Array(digest)) >= c.difficulty) {
      const v = await call("POST", "/api/auth/captcha/verify", {
        challenge: c.challenge,
        nonce: String(nonce),
        username,
      });
      return v.receipt;
    }
  }
}

async function loadOptions(username) {
  const query = username ? "?username=" + encodeURIComponent(username) : "";
  const options = await call("GET", "/api/auth/login-options" + query);
  captchaRequired = options.captcha_required;
  $("captcha-note").classList.toggle("hidden", !captchaRequired);
  $("totp-field").classList.toggle("hidden", !options.totp_required);
  return options;
}

function isCaptchaRefusal(err) {
  return err.code === "CAPTCHA_REQUIRED" || err.code === "CAPTCHA_INVALID";
}

// The page solves the proof of work itself: whether a CAPTCHA is due depends on this client and
// this username (and on ceilings an attack elsewhere may have reached), so it asks with the
// username just before signing in, and solves once more if the server still wants a receipt.
async function signIn(username, body) {
  await loadOptions(username).catch(() => {});
  for (let attempt = 0;; attempt++) {
    if (captchaRequired) {
      $("status").textContent = t("login.solving");
      body.captcha_receipt = await solveCaptcha(username);
      $("status").textContent = "";
    }
    try {
      return await call("POST", "/api/auth/login", body);
    } catch (err) {
      if (!isCaptchaRefusal(err) || attempt > 0) throw err;
      captchaRequired = true;
    }
  }
}

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  lastError = null;
  showError();
  $("submit").disabled = true;
  const username = $("username").value;
  const body = { username, password: $("password").value };
  const second = useRecovery ? $("recovery").value.trim() : $("totp").value;
  if (!$("totp-field").classList.contains("hidden") && second) {
    body[useRecovery ? "recovery_code" : "totp_code"] = second;
  }
  try {
    await signIn(username, body);
    globalThis.location.assign(await landing());
  } catch (err) {
    // The factors this username now needs (a CAPTCHA, a code) are asked for before the error
    // is shown, so the message, the fields and the re-enabled button appear together: showing
    // the message first left the button disabled for the length of that request.
    await loadOptions(username).catch(() => {});
    $("status").textContent = "";
    lastError = err;
    showError();
  } finally {
    $("submit").disabled = false;
  }
});

$("use-recovery").addEventListener("click", () => showRecovery(!useRecovery));

await translatePage(() => {
  showReason();
  labelRecovery();
  showError();
});
showCreated();
takeReason();
loadOptions().catch((err) => {
  $("error").textContent = err.message;
});
