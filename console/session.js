// The signed-in session as GET /api/auth/session reports it: the user, the effective
// permission identifiers (what the role's expressions grant) and the user's preferences.
import { get, put } from "./api.js";

let current = null;

export async function loadSession() {
  current = await get("/api/auth/session");
  return current;
}

export function session() {
  return current;
}

/** True when the user holds `permission` (null means "any signed-in user"). */
export function can(permission) {
  if (permission === null) return true;
  return current !== null && current.effective_permissions.includes(permission);
}

/** Stores some of the user's preferences on the server; the others keep their values. */
export async function savePreferences(changes) {
  const preferences = await put("/api/auth/session/preferences", changes);
  current = { ...current, preferences };
  return preferences;
}

/** Stores the user's console language on the server (`null` follows the browser). */
export function saveLanguage(language) {
  return savePreferences({ language });
}
