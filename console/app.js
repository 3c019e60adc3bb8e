// The console shell: loads the session and the language, draws the navigation (pages the user
// may read), routes `/console/<page>[/<detail>]` on the client and loads each page's module
// on first visit, so the first load carries only the shell and one page.
import { api, toLogin } from "./api.js";
import { ErrorBox } from "./components.js";
import {
  currentLanguage,
  LANGUAGES,
  pickLanguage,
  rememberLanguage,
  setLanguage,
  t,
} from "./i18n.js";
import { html, render, useEffect, useLayoutEffect, useState } from "./lib/ui.js";
import { GROUPS, PAGES, route } from "./pages.js";
import { can, loadSession, saveLanguage, session } from "./session.js";

const loaded = new Map();
function loadPage(id) {
  if (!loaded.has(id)) loaded.set(id, import(`./pages/${id}.js`).then((m) => m.default));
  return loaded.get(id);
}

/** Client-side navigation to a console path. */
export function navigate(path) {
  if (path !== location.pathname + location.search) history.pushState(null, "", path);
  dispatchEvent(new Event("console:navigate"));
}

function useLocation() {
  const [at, setAt] = useState(location.pathname + location.search);
  useEffect(() => {
    const update = () => setAt(location.pathname + location.search);
    addEventListener("popstate", update);
    addEventListener("console:navigate", update);
    return () => {
      removeEventListener("popstate", update);
      removeEventListener("console:navigate", update);
    };
  }, []);
  return at;
}

/** The stored choices of theme.js (a classic script that ran before the first paint). */
const prefs = globalThis.wafPrefs;

/**
 * The wide-screen sidebar's collapse button: the sidebar folds to a narrow rail and back, and the
 * browser remembers which (theme.js applies it before the first paint).
 */
function CollapseButton() {
  const [collapsed, setCollapsed] = useState(prefs.navCollapsed());
  const toggle = () => {
    prefs.setNavCollapsed(!collapsed);
    setCollapsed(!collapsed);
  };
  const label = t(collapsed ? "shell.nav_expand" : "shell.nav_collapse");
  return html`
    <button type="button" id="nav-collapse" class="nav-collapse"
      aria-controls="nav-groups" aria-expanded=${collapsed ? "false" : "true"}
      aria-label=${label} title=${label} onClick=${toggle}>
      <span class="chevron" aria-hidden="true"></span>
    </button>
  `;
}

function Nav({ current, open }) {
  const visible = PAGES.filter((p) => can(p.read));
  return html`
    <nav id="nav" aria-label=${t("nav.label")} class=${open ? "open" : ""}>
      <${CollapseButton} />
      <div id="nav-groups">
        ${GROUPS.map((g) => {
          const items = visible.filter((p) => p.group === g);
          if (items.length === 0) return null;
          return html`
            <div class="nav-group">
              <h2 class="nav-title">${t("nav.group." + g)}</h2>
              <ul>${items.map((p) =>
                html`<li><a href=${"/console/" + p.id} id=${"nav-" + p.id}
            aria-current=${p.id === current ? "page" : undefined}>${t("nav." + p.id)}</a></li>`
              )}</ul>
            </div>
          `;
        })}
        </div>
    </nav>
  `;
}

/** Light, dark or the system's theme, remembered in this browser (theme.js applies it). */
function ThemePicker() {
  const [choice, setChoice] = useState(prefs.theme());
  const pick = (e) => {
    prefs.setTheme(e.target.value);
    setChoice(prefs.theme());
  };
  return html`<label class="theme"><span class="sr-only">${t("shell.theme")}</span>
    <select id="theme" onChange=${pick} aria-label=${t("shell.theme")}>
      ${
    ["system", "light", "dark"].map((id) =>
      html`<option value=${id} selected=${id === choice}>${t("shell.theme_" + id)}</option>`
    )
  }
    </select></label>`;
}

function LanguagePicker({ onChange }) {
  const pick = async (e) => {
    const id = e.target.value;
    await saveLanguage(id).catch(() => {});
    rememberLanguage(id);
    await setLanguage(id);
    onChange();
  };
  return html`<label class="lang"><span class="sr-only">${t("shell.language")}</span>
    <select id="language" onChange=${pick} aria-label=${t("shell.language")}>
      ${
    LANGUAGES.map((l) =>
      html`<option value=${l.id} selected=${l.id === currentLanguage()}>${l.name}</option>`
    )
  }
    </select></label>`;
}

function PageView({ id, detail }) {
  const [Component, setComponent] = useState(null);
  const [error, setError] = useState(null);
  const page = PAGES.find((p) => p.id === id);
  useEffect(() => {
    setComponent(null);
    setError(null);
    if (!page || !can(page.read)) return;
    loadPage(id).then((c) => setComponent(() => c), (err) => setError(err));
  }, [id]);
  // Focus moves to the heading in the same task that draws the page (a layout effect), not
  // after the next frame: an effect waits for a frame (up to 100 ms, longer on a busy machine),
  // and a keyboard user acting on the new page in between would act from the navigation link.
  useLayoutEffect(() => {
    if (Component) document.getElementById("page-title")?.focus({ preventScroll: true });
  }, [Component, id]);
  if (!page) {
    return html`
      <section class="page">
        <h1 id="page-title" tabindex="-1">${t("shell.not_found")}</h1>
      </section>
    `;
  }
  if (!can(page.read)) {
    return html`
      <section class="page">
        <h1 id="page-title" tabindex="-1">${t("nav." + id)}</h1>
        <p class="notice">${t("common.no_access", { permission: page.read })}</p>
      </section>
    `;
  }
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!Component) return html`<p class="muted" role="status">${t("common.loading")}</p>`;
  return html`<${Component} detail=${detail} navigate=${navigate} />`;
}

/**
 * The menu button of narrow screens, where the navigation is folded away until it is opened:
 * Escape closes it again and gives the focus back to the button.
 */
function MenuToggle({ open, setOpen }) {
  useEffect(() => {
    if (!open) return;
    const onKey = (e) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      document.getElementById("menu-toggle")?.focus();
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [open]);
  return html`
    <button type="button" id="menu-toggle" class="menu-toggle secondary"
      aria-controls="nav" aria-expanded=${open ? "true" : "false"}
      onClick=${() => setOpen(!open)}>
        <span aria-hidden="true" class="menu-icon"></span>${t("shell.menu")}
      </button>
  `;
}

function Shell() {
  const at = useLocation();
  const [, redraw] = useState(0);
  const [menu, setMenu] = useState(false);
  // Choosing a page folds the menu away again.
  useEffect(() => setMenu(false), [at]);
  const { id, detail } = route(location.pathname);
  const user = session().user;
  const signOut = async () => {
    await api("POST", "/api/auth/logout").catch(() => {});
    toLogin(false);
  };
  return html`
    <div class="shell" key=${currentLanguage()}>
      <a class="skip" href="#main">${t("shell.skip")}</a>
      <header class="top">
        <${MenuToggle} open=${menu} setOpen=${setMenu} />
        <a class="brand" href="/console">waf</a>
        <div class="who">
          <span id="whoami">${t("shell.signed_in", { user: user.username, role: user.role })}</span>
          <${ThemePicker} />
          <${LanguagePicker} onChange=${() => redraw((n) => n + 1)} />
          <button id="logout" type="button" class="secondary" onClick=${signOut}>${t(
            "shell.sign_out",
          )}</button>
        </div>
      </header>
      <div class="body">
        <${Nav} current=${id} open=${menu} />
        <main id="main" data-at=${at}>
          <${PageView} id=${id} detail=${detail} key=${id} />
        </main>
      </div>
    </div>
  `;
}

// Links inside the console navigate without reloading the page.
document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[href^='/console']");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
  if (a.getAttribute("href").startsWith("/console/assets/")) return;
  e.preventDefault();
  navigate(a.getAttribute("href"));
});

async function start() {
  const root = document.getElementById("app");
  try {
    const s = await loadSession();
    rememberLanguage(s.preferences?.language ?? null);
    await setLanguage(pickLanguage(s.preferences?.language));
    root.textContent = "";
    render(html`<${Shell} />`, root);
  } catch (err) {
    if (err.status === 401) return toLogin();
    await setLanguage(pickLanguage(null));
    root.textContent = "";
    render(html`<${ErrorBox} error=${err} />`, root);
  }
}

start();
