/**
 * The setup page, the sign-in page and a minimal console, served by the management listener
 * as plain files (no build step) from `routes/api/console/`, read once at start-up. A strict CSP
 * allows only these same-origin scripts and styles.
 */
import type { Ctx } from "./env.ts";
import { PUBLIC, type RouteDef } from "./route.ts";

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

const TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

const PAGES = [
  { path: "/setup", file: "setup.html" },
  { path: "/login", file: "login.html" },
  { path: "/console", file: "console.html" },
] as const;
const ASSETS = ["console.css", "setup.js", "login.js", "console.js"] as const;

function load(file: string): string {
  return Deno.readTextFileSync(new URL(`./console/${file}`, import.meta.url));
}

function serve(file: string): (c: Ctx) => Response {
  const body = load(file);
  const type = TYPES[file.slice(file.lastIndexOf(".") + 1)]!;
  return () =>
    new Response(body, {
      headers: {
        "content-type": type,
        "content-security-policy": CSP,
        "cache-control": "no-store",
      },
    });
}

export function consoleRoutes(): RouteDef[] {
  return [
    ...PAGES.map((p): RouteDef => ({
      method: "GET",
      path: p.path,
      access: PUBLIC,
      handler: serve(p.file),
    })),
    ...ASSETS.map((file): RouteDef => ({
      method: "GET",
      path: `/console/assets/${file}`,
      access: PUBLIC,
      handler: serve(file),
    })),
  ];
}
