/**
 * Permission identifiers, expressions and roles. A role is a key of `apisec.permissions` in
 * `waf.yaml`; its expressions are `*` (everything), `family:*` (every identifier with that
 * prefix, e.g. `read:*`) or an exact identifier. Role names are compared exactly: no trimming,
 * no case folding.
 */

/**
 * Every permission identifier, exactly the specification's list (section 5), in its order. Routes
 * declare one of these, tokens are granted from these; never invent one (docs/identity.md maps
 * every route family to its identifier).
 */
export const PERMISSIONS = [
  "read:sites",
  "write:sites",
  "read:rules",
  "write:rules",
  "read:protection",
  "write:protection",
  "read:threat_intel",
  "write:threat_intel",
  "read:edge",
  "write:edge",
  "read:ai",
  "write:ai",
  "use:ai",
  "approve:ai",
  "read:cluster",
  "write:cluster",
  "read:system",
  "write:system",
  "manage:api_tokens",
  "read:users",
  "write:users",
  "read:logs",
  "read:monitor",
  "read:audit",
  "read:realtime",
  "read:ops",
  "write:ops",
  "read:storage",
  "write:storage",
  "read:apisec",
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const KNOWN: ReadonlySet<string> = new Set(PERMISSIONS);

export function isPermission(value: string): value is Permission {
  return KNOWN.has(value);
}

const FAMILIES: ReadonlySet<string> = new Set(PERMISSIONS.map((p) => p.slice(0, p.indexOf(":"))));

/** A known identifier, `*`, or `family:*` of an existing family. */
export function isKnownExpression(e: string): boolean {
  if (e === "*") return true;
  if (e.endsWith(":*")) return FAMILIES.has(e.slice(0, -2));
  return isPermission(e);
}

/** Every expression {@link isKnownExpression} accepts, for suggestions. */
export const KNOWN_EXPRESSIONS: readonly string[] = [
  "*",
  ...[...FAMILIES].map((f) => `${f}:*`),
  ...PERMISSIONS,
];

/** True when one of `expressions` grants `permission`. */
export function grants(expressions: readonly string[], permission: string): boolean {
  for (const e of expressions) {
    if (e === "*" || e === permission) return true;
    if (e.endsWith(":*") && permission.startsWith(e.slice(0, -1))) return true;
  }
  return false;
}

/**
 * Whether `held` covers `requested` entirely. A wildcard is only covered by an equal or wider
 * wildcard, because it also grants identifiers added in later versions.
 */
export function covers(held: readonly string[], requested: string): boolean {
  if (held.includes("*")) return true;
  if (requested === "*") return false;
  if (requested.endsWith(":*")) return held.includes(requested);
  return grants(held, requested);
}

/**
 * The expressions of `requested` that `held` does not cover: what granting `requested` would add
 * beyond the grantor's own permissions ("cannot grant more than it holds": tokens, roles).
 */
export function uncovered(held: readonly string[], requested: readonly string[]): string[] {
  return requested.filter((p) => !covers(held, p));
}

export type RoleMap = Readonly<Record<string, readonly string[]>>;

/** The expressions of `role`; empty for a role the configuration no longer has. */
export function permissionsOf(roles: RoleMap, role: string): readonly string[] {
  return Object.hasOwn(roles, role) ? roles[role]! : [];
}

export type RoleCheck = { ok: true } | { ok: false; reason: string };

const FORBIDDEN_CHARS = /[*/:]/;
const SPACE_OR_INVISIBLE = /[\s\p{Cc}\p{Cf}]/u;

/** A role must be exactly a configured key; the reason names what is wrong. */
export function validateRole(roles: RoleMap, role: string): RoleCheck {
  if (role.length === 0) return { ok: false, reason: "must not be empty" };
  if (SPACE_OR_INVISIBLE.test(role)) {
    return { ok: false, reason: "must not contain whitespace, control or format characters" };
  }
  if (FORBIDDEN_CHARS.test(role)) {
    return { ok: false, reason: "must not contain '*', '/' or ':'" };
  }
  if (!Object.hasOwn(roles, role)) {
    return {
      ok: false,
      reason: `is not a configured role: expected one of ${
        Object.keys(roles).map((r) => `"${r}"`).join(", ")
      }`,
    };
  }
  return { ok: true };
}
