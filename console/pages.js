// The console's pages: one entry and one file (`pages/<id>.js`) each. `read` is the permission
// the page's main API needs (from the specification's list, as the route declares it): the
// navigation hides pages the signed-in user cannot read. Titles come from the i18n catalogues
// (`nav.<id>`). A new capability adds its entry here in the same change as its API.
export const GROUPS = ["overview", "protection", "ai", "access", "system"];

export const PAGES = [
  { id: "dashboard", group: "overview", read: "read:monitor" },
  { id: "sites", group: "overview", read: "read:sites" },
  { id: "logs", group: "overview", read: "read:logs" },
  { id: "ip-lists", group: "protection", read: "read:protection" },
  { id: "acl-rules", group: "protection", read: "read:protection" },
  { id: "custom-rules", group: "protection", read: "read:rules" },
  { id: "rate-limit", group: "protection", read: "read:protection" },
  { id: "bot-policies", group: "protection", read: "read:protection" },
  { id: "threat-feeds", group: "protection", read: "read:threat_intel" },
  { id: "alap", group: "protection", read: "read:logs" },
  { id: "edge", group: "protection", read: "read:edge" },
  { id: "block-pages", group: "protection", read: "read:system" },
  { id: "api-security", group: "protection", read: "read:apisec" },
  { id: "ai-assistant", group: "ai", read: "use:ai" },
  { id: "ai-approvals", group: "ai", read: "approve:ai" },
  { id: "ai-settings", group: "ai", read: "read:ai" },
  { id: "users", group: "access", read: "read:users" },
  { id: "account", group: "access", read: null },
  { id: "tokens", group: "access", read: "manage:api_tokens" },
  { id: "audit", group: "access", read: "read:audit" },
  { id: "notifications", group: "access", read: "read:monitor" },
  { id: "system", group: "system", read: "read:system" },
  { id: "channels", group: "system", read: "read:monitor" },
  { id: "updates", group: "system", read: "read:system" },
  { id: "ops-tasks", group: "system", read: "read:ops" },
  { id: "cluster", group: "system", read: "read:cluster" },
  { id: "storage", group: "system", read: "read:storage" },
];

/** The page a path names (`/console/<id>[/<detail>]`), or the dashboard for `/console`. */
export function route(pathname) {
  const [id = "", detail = ""] = pathname.replace(/^\/console\/?/, "").split("/");
  return { id: id || "dashboard", detail: decodeURIComponent(detail) };
}
