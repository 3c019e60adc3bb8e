/**
 * Masking for anything that leaves the host in a support archive: configuration values under
 * secret-looking keys, credentials inside URLs, and secret-looking fragments of free text (log
 * lines, exported records). Defence in depth: the logger already masks secret fields.
 */
export const MASK = "[masked]";

/**
 * The one rule for secret-looking names, used wherever a name decides whether its value is
 * shown: configuration keys, log fields, stored query parameters and header locations, and
 * `name=value` / `"name": value` fragments of free text. A name is secret when it contains one
 * of these fragments (case-insensitive).
 */
const SECRET_FRAGMENTS = [
  "pass",
  "secret",
  "token",
  "dsn",
  "key",
  "private",
  "cookie",
  "auth",
  "credential",
  "session",
  "totp",
  "sig",
] as const;
const FRAGMENTS = SECRET_FRAGMENTS.join("|");
const SECRET_NAME = new RegExp(FRAGMENTS, "i");

/** True when `name` looks like it names a secret (see `SECRET_FRAGMENTS`). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;
const PEM_PRIVATE = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g;
const ASSIGNMENT = new RegExp(
  `\\b([A-Za-z0-9_-]*(?:${FRAGMENTS})[A-Za-z0-9_-]*)(\\s*[=:]\\s*)("[^"]*"|(?!(?:Bearer|Basic)\\s)[^\\s,;&}]+)`,
  "gi",
);
const JSON_FIELD = new RegExp(
  `("[^"]*(?:${FRAGMENTS})[^"]*"\\s*:\\s*)("(?:[^"\\\\]|\\\\.)*"|(?![[{])[^,}\\]\\s]+)`,
  "gi",
);

/**
 * A URL with its password (userinfo or a `password` query parameter) replaced by `***`, the user
 * kept: what an endpoint's owner may see (`postgres://waf:***@db:5432/waf`).
 */
export function maskUrlPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    if (u.searchParams.has("password")) u.searchParams.set("password", "***");
    return u.toString().replace("password=%2A%2A%2A", "password=***");
  } catch {
    return "(invalid URL)";
  }
}

/** Masks credentials in a URL-like string (`redis://user:pw@host` → `redis://[masked]@host`). */
function maskUrlUserinfo(text: string): string {
  return text.replace(URL_USERINFO, `$1${MASK}@`);
}

/** A deep copy of `value` with secret-like keys masked and URL credentials removed. */
export function maskConfigValue(value: unknown, key = ""): unknown {
  if (isSecretName(key)) {
    if (Array.isArray(value)) return value.map(() => MASK);
    // A flag is never a secret (`verify_signature: true` stays readable).
    if (value === undefined || value === null || value === "" || typeof value === "boolean") {
      return value;
    }
    if (typeof value === "object") return maskConfigValue(value);
    return MASK;
  }
  if (Array.isArray(value)) return value.map((v) => maskConfigValue(v));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskConfigValue(v, k);
    return out;
  }
  return typeof value === "string" ? maskUrlUserinfo(value) : value;
}

/** Masks secret-looking fragments of free text and every known secret value. */
export function scrubText(text: string, knownSecrets: readonly string[] = []): string {
  let out = text.replace(PEM_PRIVATE, MASK);
  for (const secret of knownSecrets) {
    // Short values would mask ordinary words; real secrets here are long random strings.
    if (secret.length >= 8) out = out.replaceAll(secret, MASK);
  }
  out = out.replace(
    JSON_FIELD,
    (_, head: string, value: string) =>
      value === '""' || value === "null" ? head + value : `${head}"${MASK}"`,
  );
  out = out.replace(BEARER, `$1 ${MASK}`);
  out = out.replace(ASSIGNMENT, `$1$2${MASK}`);
  return maskUrlUserinfo(out);
}
