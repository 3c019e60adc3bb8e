// Permission identifiers as people read them: grouped by the area they govern (taken from the
// part after the colon: `write:threat_intel` governs threat feeds, part of protection), each with
// a one-line description (`perm.<identifier>` in the catalogues), and the presets the token form
// offers. An identifier of a later version that no area names lands in "other", still listed.
import { t } from "./i18n.js";

/** The areas in the order they are shown, each with the resources it covers. */
export const AREAS = [
  { id: "sites", resources: ["sites"] },
  { id: "rules", resources: ["rules"] },
  { id: "protection", resources: ["protection", "threat_intel", "apisec"] },
  { id: "edge", resources: ["edge"] },
  { id: "logs", resources: ["logs", "monitor", "realtime", "audit"] },
  { id: "users", resources: ["users", "api_tokens"] },
  { id: "system", resources: ["system", "ops", "storage"] },
  { id: "cluster", resources: ["cluster"] },
  { id: "ai", resources: ["ai"] },
];

const AREA_OF = new Map(AREAS.flatMap((a) => a.resources.map((r) => [r, a.id])));

/** The area of an identifier such as `read:sites`. */
export function areaOf(permission) {
  return AREA_OF.get(permission.slice(permission.indexOf(":") + 1)) ?? "other";
}

/** `permissions` grouped by area, in the areas' order, each group in the given order. */
export function groupPermissions(permissions) {
  const groups = [...AREAS.map((a) => a.id), "other"].map((id) => ({ id, permissions: [] }));
  for (const p of permissions) groups.find((g) => g.id === areaOf(p)).permissions.push(p);
  return groups.filter((g) => g.permissions.length > 0);
}

/** The area's name in the current language. */
export const areaName = (id) => t(`perm.group.${id}`);

/** The one-line description of an identifier (the identifier itself when none is known). */
export function describePermission(permission) {
  const key = `perm.${permission}`;
  const text = t(key);
  return text === key ? permission : text;
}

/** The presets of the token form, over the identifiers the caller holds. */
export const PRESETS = {
  /** Every `read:*` identifier: looks, changes nothing. */
  read: (held) => held.filter((p) => p.startsWith("read:")),
  /** Everything the caller holds (a token never holds more than its creator). */
  all: (held) => [...held],
  none: () => [],
};
