// The languages of the pages outside the console (sign-in and setup), with the console's
// catalogues: the language chosen in the console (remembered in this browser, since nobody is
// signed in here) or on this page, else the browser's. Static texts are marked in the HTML:
// `data-i18n` (text), `data-i18n-placeholder`, `data-i18n-title` (on <html>: the page title), and
// `data-i18n-parts` for a sentence with elements inside (`data-part="name"` children stay, and
// the catalogue's `{name}` says where each goes).
import {
  LANGUAGES,
  pickLanguage,
  rememberedLanguage,
  rememberLanguage,
  setLanguage,
  t,
} from "./i18n.js";

export { t };

/** Writes the text of `key` into `el`, keeping its `data-part` children at their `{name}`. */
function fillParts(el, key) {
  const parts = new Map([...el.querySelectorAll("[data-part]")].map((p) => [p.dataset.part, p]));
  const nodes = [];
  for (const piece of t(key).split(/(\{\w+\})/)) {
    const part = /^\{(\w+)\}$/.exec(piece);
    if (part && parts.has(part[1])) nodes.push(parts.get(part[1]));
    else if (piece !== "") nodes.push(document.createTextNode(piece));
  }
  el.replaceChildren(...nodes);
}

/** Translates every marked text of the page into the current language. */
function translateMarked() {
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-placeholder]")) {
    el.placeholder = t(el.dataset.i18nPlaceholder);
  }
  for (const el of document.querySelectorAll("[data-i18n-parts]")) {
    fillParts(el, el.dataset.i18nParts);
  }
  const title = document.documentElement.dataset.i18nTitle;
  if (title) document.title = t(title);
}

/**
 * Sets the page's language and translates it; a `<select id="language">` becomes the language
 * picker, and `onChange` redraws what the page wrote itself after the user picks another.
 */
export async function translatePage(onChange = () => {}) {
  await setLanguage(pickLanguage(rememberedLanguage()));
  translateMarked();
  const picker = document.getElementById("language");
  if (!picker) return;
  picker.replaceChildren(...LANGUAGES.map((l) => new Option(l.name, l.id)));
  picker.value = document.documentElement.lang;
  picker.setAttribute("aria-label", t("shell.language"));
  picker.addEventListener("change", async () => {
    rememberLanguage(picker.value);
    await setLanguage(picker.value);
    translateMarked();
    onChange();
  });
}
