// The theme and the sidebar's width before the first paint: a classic (blocking) script in the
// <head> of every console page, so a dark-theme user never sees a light flash and a collapsed
// sidebar never jumps. The choice ("light", "dark" or "system", the default) is kept per browser
// in localStorage; "system" follows `prefers-color-scheme` and keeps following it. It sets
// `data-theme` (the resolved theme, which app.css reads), `data-theme-choice` and `data-nav` on
// <html>; the console's picker and sidebar button change them through `globalThis.wafPrefs`.
(() => {
  const THEME = "waf.theme";
  const NAV = "waf.nav";
  const root = document.documentElement;
  const dark = matchMedia("(prefers-color-scheme: dark)");
  const read = (key) => {
    try {
      return localStorage.getItem(key);
    } catch {
      return null;
    }
  };
  const write = (key, value) => {
    try {
      localStorage.setItem(key, value);
    } catch {
      // Storage refused (private mode): the choice holds for this page only.
    }
  };
  const choice = () => {
    const v = read(THEME);
    return v === "light" || v === "dark" ? v : "system";
  };
  let chosen = choice();
  const apply = () => {
    root.dataset.themeChoice = chosen;
    root.dataset.theme = chosen === "system" ? (dark.matches ? "dark" : "light") : chosen;
    // What draws its own colours (charts) redraws.
    dispatchEvent(new Event("waf:theme"));
  };
  apply();
  dark.addEventListener("change", apply);
  if (read(NAV) === "collapsed") root.dataset.nav = "collapsed";
  // Another tab changed a choice: follow it.
  addEventListener("storage", (e) => {
    if (e.key === THEME) {
      chosen = choice();
      apply();
    }
    if (e.key === NAV) root.dataset.nav = e.newValue === "collapsed" ? "collapsed" : "open";
  });
  globalThis.wafPrefs = {
    theme: () => chosen,
    setTheme(value) {
      chosen = value === "light" || value === "dark" ? value : "system";
      write(THEME, chosen);
      apply();
    },
    navCollapsed: () => root.dataset.nav === "collapsed",
    setNavCollapsed(collapsed) {
      root.dataset.nav = collapsed ? "collapsed" : "open";
      write(NAV, collapsed ? "collapsed" : "open");
    },
  };
})();
