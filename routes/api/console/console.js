// Minimal console: who is signed in, the list of users, and sign-out (CSRF double-submit).
"use strict";
const $ = (id) => document.getElementById(id);

function csrfToken() {
  const m = /(?:^|;\s*)waf_csrf=([^;]+)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : "";
}

async function call(method, path) {
  const headers = method === "GET" ? {} : { "x-csrf-token": csrfToken() };
  const response = await fetch(path, { method, headers, credentials: "same-origin" });
  if (response.status === 401) {
    globalThis.location.assign("/login");
    throw new Error("Signed out");
  }
  const data = response.status === 204 ? {} : await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error((data.error && data.error.message) || ("HTTP " + response.status));
  }
  return data;
}

async function load() {
  const session = await call("GET", "/api/auth/session");
  $("whoami").textContent = "Signed in as " + session.user.username + " (" + session.user.role +
    ")";
  const users = await call("GET", "/api/users");
  const body = $("users").querySelector("tbody");
  body.textContent = "";
  for (const u of users.items) {
    const row = document.createElement("tr");
    for (const value of [u.username, u.role, u.totp_enabled ? "on" : "off", u.created_at]) {
      const cell = document.createElement("td");
      cell.textContent = value;
      row.appendChild(cell);
    }
    body.appendChild(row);
  }
}

$("logout").addEventListener("click", async () => {
  await call("POST", "/api/auth/logout").catch(() => {});
  globalThis.location.assign("/login");
});

load().catch((err) => {
  $("error").textContent = err.message;
});
