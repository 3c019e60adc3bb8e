// First-install setup page. The token arrives in the URL fragment (never sent to a server by
// the browser); it is read and the fragment cleared before anything else happens, and then
// travels only in the X-WAF-Setup-Token header. Without a token the page says where the link
// is; a link opened in the same tab later (hashchange) or pasted into the field is taken the
// same way, without a reload. Once the administrator exists the page hands over to the sign-in
// page, which says so.
import { t, translatePage } from "./page_i18n.js";

const TOKEN_IN = /(?:#|&)token=([A-Za-z0-9_-]+)/;
/** The session-storage flag the sign-in page reads: the administrator just created. */
const CREATED_KEY = "waf.setup.created";
let token = "";
let started = false;

/** Takes the token out of `text` (a fragment or a whole link); returns whether one was there. */
function takeToken(text) {
  const match = TOKEN_IN.exec(text);
  if (!match) return false;
  token = match[1];
  return true;
}

takeToken(globalThis.location.hash);
history.replaceState(null, "", globalThis.location.pathname + globalThis.location.search);

const $ = (id) => document.getElementById(id);

/** The page's state in catalogue keys, so that a change of language rewrites it. */
let statusKey = "setup.checking";
let errorText = () => "";
let probed = null;

function showStatus(key) {
  statusKey = key;
  $("status").textContent = t(key);
}

/** Shows an error: a catalogue key's text, or (`raw`) the server's own message. */
function showError(key, raw) {
  errorText = key ? () => t(key) : () => raw || "";
  $("error").textContent = errorText();
}

async function api(method, path, body) {
  const headers = { "x-waf-setup-token": token };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = response.status === 204 ? {} : await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error((data.error && data.error.message) || ("HTTP " + response.status));
    error.code = data.error && data.error.code;
    error.status = response.status;
    throw error;
  }
  return data;
}

// The same rules the server enforces; the server stays the authority and its message is shown.
function usernameRules(name) {
  return [
    ["setup.rule_username_length", name.length >= 3 && name.length <= 32],
    ["setup.rule_username_chars", /^[A-Za-z0-9._-]*$/.test(name)],
    ["setup.rule_username_start", /^[A-Za-z]/.test(name)],
    ["setup.rule_username_end", /[A-Za-z0-9]$/.test(name)],
  ];
}

function passwordRules(password, name) {
  const digits = password.replace(/[^0-9]/g, "");
  let classes = 0;
  if (/[A-Z]/.test(password)) classes++;
  if (/[a-z]/.test(password)) classes++;
  if (digits.length > 0 && !(digits.length >= 2 && /^(\d)\1*$/.test(digits))) classes++;
  if (/[^A-Za-z0-9]/.test(password)) classes++;
  const lower = password.toLowerCase();
  return [
    ["setup.rule_password_length", Array.from(password).length >= 10],
    ["setup.rule_password_classes", classes >= 3],
    ["setup.rule_password_username", !name || !lower.includes(name.toLowerCase())],
    ["setup.rule_password_common", null],
  ];
}

function renderRules(listId, rules, touched) {
  const list = $(listId);
  list.textContent = "";
  for (const [key, ok] of rules) {
    const item = document.createElement("li");
    item.textContent = t(key);
    if (touched && ok !== null) item.className = ok ? "ok" : "bad";
    list.appendChild(item);
  }
}

function refreshRules() {
  const name = $("username").value;
  const password = $("password").value;
  renderRules("username-rules", usernameRules(name), name.length > 0);
  renderRules("password-rules", passwordRules(password, name), password.length > 0);
  const confirm = $("confirm").value;
  renderRules(
    "confirm-rules",
    [["setup.rule_confirm", confirm === password]],
    confirm.length > 0,
  );
}

let draftTimer;
function saveDraft(fields) {
  clearTimeout(draftTimer);
  draftTimer = setTimeout(() => {
    api("PATCH", "/api/setup/draft", fields).catch(() => {/* a draft is best effort */});
  }, 400);
}

function formatBytes(n) {
  if (typeof n !== "number") return t("setup.unknown");
  return (n / 1024 / 1024 / 1024).toFixed(1) + " GiB";
}

/** The host figures of the probe, in the page's language. */
function showProbe() {
  if (!probed) return;
  $("probe-cores").textContent = String(probed.cpu_cores);
  $("probe-memory").textContent = formatBytes(probed.memory_total_bytes);
  $("probe-disk").textContent = t(probed.disk_writable ? "setup.writable" : "setup.not_writable");
  $("probe-profile").textContent = probed.suggested_profile;
  $("probe").classList.remove("hidden");
}

async function receiptOf(value) {
  const data = new TextEncoder().encode("waf-setup-receipt:" + value);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  return hex.slice(0, 4) + "-" + hex.slice(4, 8);
}

async function start() {
  const status = await api("GET", "/api/setup/status");
  if (!status.setup_required) {
    showStatus("setup.already_complete");
    globalThis.location.assign("/login");
    return;
  }
  if (!token) {
    showStatus("setup.needs_link");
    $("where").classList.remove("hidden");
    return;
  }
  if (started) return;
  started = true;
  $("where").classList.add("hidden");
  $("receipt-value").textContent = await receiptOf(token);
  $("receipt").classList.remove("hidden");
  const probe = await api("POST", "/api/setup/probe");
  probed = probe;
  showProbe();
  const draft = await api("GET", "/api/setup/draft");
  $("username").value = draft.username || "";
  $("profile").value = draft.profile || probe.suggested_profile;
  showStatus("setup.create_first");
  $("setup-form").classList.remove("hidden");
  refreshRules();
}

$("username").addEventListener("input", () => {
  refreshRules();
  const name = $("username").value;
  if (usernameRules(name).every((r) => r[1])) saveDraft({ username: name });
});
$("password").addEventListener("input", refreshRules);
$("confirm").addEventListener("input", refreshRules);
$("profile").addEventListener("change", () => saveDraft({ profile: $("profile").value }));

$("setup-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  showError();
  if ($("confirm").value !== $("password").value) {
    showError("setup.passwords_differ");
    return;
  }
  $("submit").disabled = true;
  clearTimeout(draftTimer); // the form sends everything now; a draft sent after it would be refused
  try {
    await api("POST", "/api/setup", {
      username: $("username").value,
      password: $("password").value,
      profile: $("profile").value,
    });
    $("setup-form").classList.add("hidden");
    showStatus("setup.complete");
    // The sign-in page says the account was made and fills in its name (this tab only).
    try {
      sessionStorage.setItem(CREATED_KEY, $("username").value);
    } catch { /* storage off: the sign-in page just asks */ }
    globalThis.location.assign("/login");
  } catch (err) {
    showError(null, err.message);
    $("submit").disabled = false;
  }
});

function restart() {
  showError();
  start().catch((err) => showError(null, err.message));
}

// The real link opened in this tab after the page loaded without one: only the fragment
// changes, so no load happens; take it from here.
globalThis.addEventListener("hashchange", () => {
  const found = takeToken(globalThis.location.hash);
  history.replaceState(null, "", globalThis.location.pathname + globalThis.location.search);
  if (found) restart();
});

$("link-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = $("link");
  const found = takeToken(field.value);
  field.value = "";
  if (found) restart();
  else showError("setup.not_a_link");
});

await translatePage(() => {
  $("status").textContent = t(statusKey);
  $("error").textContent = errorText();
  showProbe();
  refreshRules();
});
showStatus(statusKey);
restart();
