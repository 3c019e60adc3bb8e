/**
 * Message catalogues for the command line: every message a command prints has an English and a
 * Simplified Chinese text, looked up by id. Templates use `{name}` placeholders.
 */
import { EN, type MessageId } from "./messages_en.ts";
import { HELP_ZH_CN, ZH_CN } from "./messages_zh_cn.ts";

export type { MessageId } from "./messages_en.ts";

export const LANGUAGES = ["en", "zh-CN"] as const;
export type Lang = (typeof LANGUAGES)[number];
export const DEFAULT_LANG: Lang = "en";

const CATALOGUES: Readonly<Record<Lang, Readonly<Record<MessageId, string>>>> = {
  en: EN,
  "zh-CN": ZH_CN,
};

export type MessageParams = Readonly<Record<string, string | number>>;

export interface Translate {
  (id: MessageId, params?: MessageParams): string;
  readonly lang: Lang;
}

/**
 * The supported language named by `value`, or undefined. Case and `_`/`-` are forgiven
 * (`zh_cn` is `zh-CN`) because operators type locale names in many spellings.
 */
export function parseLang(value: string): Lang | undefined {
  const wanted = value.replaceAll("_", "-").toLowerCase();
  return LANGUAGES.find((lang) => lang.toLowerCase() === wanted);
}

const PLACEHOLDER = /\{([a-z][a-z0-9_]*)\}/g;

/** The placeholder names a template uses, sorted (catalogue tests compare them per language). */
export function placeholders(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1]!))].sort();
}

function format(template: string, params: MessageParams | undefined): string {
  if (!params) return template;
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = params[name];
    return value === undefined ? whole : String(value);
  });
}

/** A translator for `lang`. */
export function translator(lang: Lang): Translate {
  const catalogue = CATALOGUES[lang];
  const t = (id: MessageId, params?: MessageParams) => format(catalogue[id], params);
  return Object.assign(t, { lang });
}

/** Command help in `lang`: the Chinese text when there is one, else the English given. */
export function commandHelp(
  lang: Lang,
  words: readonly string[],
  english: { readonly summary: string; readonly usage: string },
): { summary: string; usage: string } {
  if (lang === "zh-CN") {
    const zh = HELP_ZH_CN[words.join(" ")];
    if (zh) return zh;
  }
  return { summary: english.summary, usage: english.usage };
}

/** Every catalogue, for the tests that check both languages cover every message. */
export function catalogues(): Readonly<Record<Lang, Readonly<Record<MessageId, string>>>> {
  return CATALOGUES;
}
