/**
 * A user's own console preferences (the language, and whether the dashboard's getting-started
 * checklist was dismissed), kept in the settings table under `user_preferences:<user id>`.
 * Changing them needs no permission beyond being signed in.
 */
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { Clock } from "../core/clock.ts";

export const LANGUAGES = ["en", "zh-CN"] as const;
export type Language = (typeof LANGUAGES)[number];

export interface UserPreferences {
  /** The console language; null follows the browser's. */
  readonly language: Language | null;
  /** The dashboard's getting-started checklist was dismissed (it stays hidden for this user). */
  readonly checklist_dismissed: boolean;
}

const DEFAULTS: UserPreferences = { language: null, checklist_dismissed: false };
const key = (userId: string) => `user_preferences:${userId}`;

function isLanguage(value: unknown): value is Language {
  return typeof value === "string" && (LANGUAGES as readonly string[]).includes(value);
}

export function createPreferences(deps: { settings: SettingsRepo; clock: Clock }) {
  return {
    get(userId: string): UserPreferences {
      const stored = deps.settings.get(key(userId)) as Partial<UserPreferences> | undefined;
      return {
        language: isLanguage(stored?.language) ? stored.language : DEFAULTS.language,
        checklist_dismissed: stored?.checklist_dismissed === true,
      };
    },
    set(userId: string, prefs: UserPreferences): UserPreferences {
      deps.settings.set(key(userId), prefs, deps.clock.now());
      return prefs;
    },
  };
}

export type Preferences = ReturnType<typeof createPreferences>;
