/**
 * Block-page management (`/api/block-pages`, `read:system` / `write:system`) and the rendering
 * of the configured page in the data plane: a built-in template (`minimal` by default) or the
 * operator's sanitised custom HTML. The rendered page always shows the trace id: the
 * `{{trace_id}}` placeholder is filled in, or a trace-id line is inserted when it is missing.
 */
import { z } from "zod";
import { AppError } from "../../mod/core/errors.ts";
import { sanitizeHtml } from "../../mod/protection/html_sanitize.ts";
import type { PolicyObjects } from "../../mod/protection/policy_objects.ts";
import { type CompiledProtection, KIND } from "../../mod/protection/protection_compile.ts";
import {
  type BlockPageDoc,
  blockPageSchema,
  parseStored,
} from "../../mod/protection/protection_schema.ts";
import { auditContext } from "./actor.ts";
import { blockTemplateNames, registerBlockTemplate, renderBlockPage } from "../proxy/block_page.ts";
import { escapeHtml, statusPage } from "../proxy/status_page.ts";
import { wantsJson } from "../accept.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

/** Largest custom page accepted, in bytes of UTF-8. */
export const MAX_CUSTOM_HTML = 64 * 1024;
const PLACEHOLDER = /\{\{\s*trace_id\s*\}\}/g;
const SAMPLE_TRACE = "0123456789abcdef0123456789abcdef";
const ENCODER = new TextEncoder();

/** CSP of served block pages: no script, no plugins, styles and images only. */
const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";
/** CSP of previews: additionally sandboxed (a unique origin) and framable by the console only. */
const PREVIEW_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data: https:; form-action 'none'; base-uri 'none'; sandbox; frame-ancestors 'self'";

const friendly = (req: Request, traceId: string) =>
  statusPage(
    req,
    403,
    "BLOCKED",
    "Sorry, this request was stopped",
    "Something in this request looked like an attack, so the site's firewall stopped it before it reached the site. Nothing was changed. If you were doing something ordinary, go back and try again, or contact the site's support and quote the trace id below so they can look it up.",
    traceId,
  );
registerBlockTemplate("friendly", friendly);

const TEMPLATES: Readonly<Record<string, { name: string; description: string }>> = {
  minimal: {
    name: "Minimal",
    description: "A short neutral notice with the trace id (the default).",
  },
  friendly: {
    name: "Friendly",
    description: "A longer plain-language explanation for visitors, with the trace id.",
  },
};

/** Fills the placeholder, or inserts a trace-id line when the page lacks it. */
export function renderCustomHtml(html: string, traceId: string): string {
  const id = escapeHtml(traceId);
  if (html.search(PLACEHOLDER) >= 0) return html.replace(PLACEHOLDER, id);
  const line = `<p class="waf-trace">traceId: <code>${id}</code></p>`;
  const end = html.search(/<\/body>/i);
  return end >= 0 ? html.slice(0, end) + line + html.slice(end) : html + line;
}

function htmlResponse(body: string, status: number, traceId: string, csp: string): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-waf-trace-id": traceId,
      "content-security-policy": csp,
    },
  });
}

/** The data plane's block page for the compiled settings. */
export function configuredBlockPage(
  req: Request,
  traceId: string,
  p: CompiledProtection,
): Response {
  const s = p.blockPage;
  if (s.custom_enabled && s.custom_html !== "" && !wantsJson(req)) {
    return htmlResponse(renderCustomHtml(s.custom_html, traceId), 403, traceId, PAGE_CSP);
  }
  return renderBlockPage(req, traceId, s.template_id);
}

const htmlBody = z.strictObject({ html: z.string() });
const settingsBody = z.strictObject({
  template_id: z.string().min(1).max(64).optional(),
  custom_enabled: z.boolean().optional(),
});

function checkSize(html: string): void {
  const bytes = ENCODER.encode(html).length;
  if (bytes > MAX_CUSTOM_HTML) {
    throw new AppError(
      413,
      "PAYLOAD_TOO_LARGE",
      `Custom block page is ${bytes} bytes: the limit is ${MAX_CUSTOM_HTML} bytes`,
      {
        details: { limit: MAX_CUSTOM_HTML },
      },
    );
  }
}

export function blockPageRoutes(objects: PolicyObjects): RouteDef[] {
  const current = (): BlockPageDoc =>
    parseStored(blockPageSchema, objects.singleton(KIND.blockPage));
  return [
    {
      method: "GET",
      path: "/api/block-pages/templates",
      access: perm("read:system"),
      handler: (c) => {
        const sample = new Request("http://preview.invalid/", { headers: { accept: "text/html" } });
        const items = blockTemplateNames().map((id) => ({
          id,
          name: TEMPLATES[id]?.name ?? id,
          description: TEMPLATES[id]?.description ?? "",
          preview: renderBlockPage(sample, SAMPLE_TRACE, id),
        }));
        return Promise.all(items.map(async (t) => ({ ...t, preview: await t.preview.text() })))
          .then((list) => c.json({ items: list }));
      },
    },
    {
      method: "GET",
      path: "/api/block-pages/settings",
      access: perm("read:system"),
      handler: (c) => c.json(current()),
    },
    {
      method: "PUT",
      path: "/api/block-pages/settings",
      access: perm("write:system"),
      handler: async (c) => {
        const body = await readJson(c, settingsBody);
        const next = { ...current(), ...body };
        if (!blockTemplateNames().includes(next.template_id)) {
          throw new AppError(
            400,
            "BAD_REQUEST",
            `Invalid field "template_id": no template "${next.template_id}"`,
            {
              details: { field: "template_id" },
            },
          );
        }
        if (next.custom_enabled && next.custom_html === "") {
          throw new AppError(
            400,
            "BAD_REQUEST",
            'Invalid field "custom_enabled": upload a custom page first',
            {
              details: { field: "custom_enabled" },
            },
          );
        }
        objects.putSingleton(KIND.blockPage, "block_page.settings", next, auditContext(c), body);
        return c.json(next);
      },
    },
    {
      method: "POST",
      path: "/api/block-pages/preview",
      access: perm("read:system"),
      handler: async (c) => {
        const { html } = await readJson(c, htmlBody);
        checkSize(html);
        const page = renderCustomHtml(sanitizeHtml(html).html, SAMPLE_TRACE);
        return htmlResponse(page, 200, c.get("traceId"), PREVIEW_CSP);
      },
    },
    {
      method: "POST",
      path: "/api/block-pages/upload",
      access: perm("write:system"),
      handler: async (c) => {
        const { html } = await readJson(c, htmlBody);
        checkSize(html);
        const clean = sanitizeHtml(html);
        const next: BlockPageDoc = { ...current(), custom_enabled: true, custom_html: clean.html };
        objects.putSingleton(KIND.blockPage, "block_page.custom", next, auditContext(c), {
          bytes: ENCODER.encode(clean.html).length,
          removed: clean.removed.length,
        });
        return c.json({
          custom_enabled: true,
          bytes: ENCODER.encode(clean.html).length,
          removed: clean.removed,
          html: clean.html,
        });
      },
    },
    {
      method: "DELETE",
      path: "/api/block-pages/custom",
      access: perm("write:system"),
      handler: (c) => {
        objects.deleteSingleton(KIND.blockPage, "block_page.custom", auditContext(c));
        return c.body(null, 204);
      },
    },
  ];
}
