// The console's languages: English and Simplified Chinese. The user's stored preference wins,
// then the browser's language. Catalogues (`i18n/<lang>.js`) map keys to text with `{name}`
// placeholders; a key missing from a catalogue shows the English text.
import en from "./i18n/en.js";

export const LANGUAGES = [
  { id: "en", name: "English" },
  { id: "zh-CN", name: "简体中文" },
];

let language = "en";
let catalogue = en;

/** The language to use: the stored preference, else the browser's, else English. */
export function pickLanguage(preference, browser = navigator.languages || [navigator.language]) {
  if (LANGUAGES.some((l) => l.id === preference)) return preference;
  for (const tag of browser) {
    if (/^zh\b/i.test(tag || "")) return "zh-CN";
    if (/^en\b/i.test(tag || "")) return "en";
  }
  return "en";
}

/** Where this browser keeps the language chosen in the console, for the pages before sign-in. */
const CHOICE_KEY = "waf.language";

/** The language last chosen in this browser (console or sign-in page), or null. */
export function rememberedLanguage() {
  try {
    return localStorage.getItem(CHOICE_KEY);
  } catch {
    return null; // storage off: the browser's language
  }
}

/** Remembers the chosen language (`null`: follow the browser) for the pages before sign-in. */
export function rememberLanguage(id) {
  try {
    if (LANGUAGES.some((l) => l.id === id)) localStorage.setItem(CHOICE_KEY, id);
    else localStorage.removeItem(CHOICE_KEY);
  } catch { /* storage off */ }
}

export async function setLanguage(id) {
  language = LANGUAGES.some((l) => l.id === id) ? id : "en";
  catalogue = language === "en" ? en : (await import(`./i18n/${language}.js`)).default;
  document.documentElement.lang = language;
}

export function currentLanguage() {
  return language;
}

function fill(text, vars) {
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (m, name) => name in vars ? String(vars[name]) : m);
}

/** The text of `key` with `{name}` placeholders filled from `vars`. */
export function t(key, vars) {
  return fill(catalogue[key] ?? en[key] ?? key, vars);
}

/**
 * The text of `key` (placeholders filled from `vars`), or `fallback` (an API's own English text)
 * when no catalogue has the key.
 */
export function tOr(key, fallback, vars) {
  const text = catalogue[key] ?? en[key];
  return text === undefined ? fallback : fill(text, vars);
}

/** A local date and time for an ISO string or epoch milliseconds ("-" when absent). */
export function fmtTime(value) {
  if (value === null || value === undefined || value === "") return "-";
  const d = new Date(value);
  return Number.isNaN(d.getTime())
    ? String(value)
    : d.toLocaleString(language, { dateStyle: "short", timeStyle: "medium" });
}

export function fmtNumber(n) {
  return typeof n === "number" ? n.toLocaleString(language) : "-";
}
