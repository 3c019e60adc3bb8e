/**
 * The web console, the setup page and the sign-in page, served by the management listener with
 * no build step: every file under the top-level `console/` (read once at start-up, embedded by
 * `deno compile`) is served at `/console/assets/<path>`, the browser libraries come from their
 * npm packages (`console_vendor.ts`), and every client-side route `/console/<page>[/<detail>]`
 * answers the one shell page. A strict CSP allows only these same-origin scripts and styles.
 */
import type { Ctx } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { PUBLIC, type RouteDef } from "./route.ts";
import { vendorFiles } from "./console_vendor.ts";

/**
 * No inline script, no eval, no framing of the console. `img-src data:` shows the 2FA QR code
 * (a data: URL); `frame-src 'self'` lets the block-page preview load in a sandboxed iframe
 * (its own response carries `sandbox` and a script-free CSP).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "frame-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

const TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

const ROOT = new URL("../../console/", import.meta.url);
/**
 * Client-side page names (and the optional detail segment, e.g. a trace id or an ALAP decision's
 * id such as `ala_0123abcd`, where a notification links).
 */
const SEGMENT = /^[a-z0-9][a-z0-9_-]{0,63}$/;

interface Asset {
  readonly path: string;
  readonly body: string;
}

/** Every servable file under `console/`, with its path relative to it. */
function readTree(dir: URL, prefix = ""): Asset[] {
  const out: Asset[] = [];
  const entries = [...Deno.readDirSync(dir)].sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (entry.isDirectory) {
      out.push(...readTree(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`));
    } else if (TYPES[extension(entry.name)] !== undefined) {
      out.push({
        path: prefix + entry.name,
        body: Deno.readTextFileSync(new URL(entry.name, dir)),
      });
    }
  }
  return out;
}

function extension(name: string): string {
  return name.slice(name.lastIndexOf(".") + 1);
}

function responder(asset: Asset): () => Response {
  const headers = {
    "content-type": TYPES[extension(asset.path)]!,
    "content-security-policy": CONSOLE_CSP,
    "cache-control": "no-store",
  };
  return () => new Response(asset.body, { headers });
}

/** The console's files as served (path under `/console/assets/` and body), for tests too. */
export function consoleAssets(): readonly Asset[] {
  return [
    ...readTree(ROOT),
    ...vendorFiles().map((v) => ({ path: `vendor/${v.path}`, body: v.body })),
  ];
}

export function consoleRoutes(): RouteDef[] {
  const assets = consoleAssets();
  const byPath = new Map(assets.map((a) => [a.path, a]));
  const page = (file: string) => responder(byPath.get(file)!);
  const shell = page("console.html");
  const notFound = (c: Ctx) =>
    errorResponse(c, {
      status: 404,
      code: "NOT_FOUND",
      message: `No such console page: "${c.req.path}"`,
    });
  const shellFor = (c: Ctx) => {
    const segments = c.req.path.split("/").slice(2);
    return segments[0] !== "assets" && segments.every((s) => SEGMENT.test(s))
      ? shell()
      : notFound(c);
  };
  return [
    ...assets.filter((a) => !a.path.endsWith(".html")).map((asset): RouteDef => ({
      method: "GET",
      path: `/console/assets/${asset.path}`,
      access: PUBLIC,
      handler: responder(asset),
    })),
    { method: "GET", path: "/", access: PUBLIC, handler: (c) => c.redirect("/console", 302) },
    { method: "GET", path: "/setup", access: PUBLIC, handler: page("setup.html") },
    { method: "GET", path: "/login", access: PUBLIC, handler: page("login.html") },
    { method: "GET", path: "/console", access: PUBLIC, handler: shell },
    { method: "GET", path: "/console/:page", access: PUBLIC, handler: shellFor },
    { method: "GET", path: "/console/:page/:detail", access: PUBLIC, handler: shellFor },
  ];
}
