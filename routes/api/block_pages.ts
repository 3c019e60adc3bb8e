/**
 * Block-page management (`/api/block-pages`, `read:system` / `write:system`): the template
 * choice, the operator's custom HTML (sanitised on upload) and sandboxed previews. The data
 * plane renders the configured page itself (`routes/proxy/block_page.ts`); the previews here use
 * the same renderers.
 */
import { z } from "zod";
import { AppError, badRequest } from "../../mod/core/errors.ts";
import { sanitizeHtml } from "../../mod/protection/html_sanitize.ts";
import type { PolicyObjects } from "../../mod/protection/policy_objects.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import {
  type BlockPageDoc,
  blockPageSchema,
  parseStored,
} from "../../mod/protection/protection_schema.ts";
import { auditContext } from "./actor.ts";
import {
  blockTemplateNames,
  htmlPage,
  renderBlockPage,
  renderCustomHtml,
} from "../proxy/block_page.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson, readQuery } from "./validate.ts";
import type { Ctx } from "./env.ts";
import type { BlockPagePreviews } from "../../mod/protection/block_page_previews.ts";
import { pageResponse } from "../proxy/status_page.ts";

/** Largest custom page accepted, in bytes of UTF-8. */
export const MAX_CUSTOM_HTML = 64 * 1024;
const SAMPLE_TRACE = "0123456789abcdef0123456789abcdef";
const ENCODER = new TextEncoder();

/** CSP of previews: additionally sandboxed (a unique origin) and framable by the console only. */
export const PREVIEW_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data: https:; form-action 'none'; base-uri 'none'; sandbox; frame-ancestors 'self'";

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

/**
 * The page to upload or preview: `html`, or `custom_html` (the name specification 2.6 gives the
 * key it is kept under); exactly one of them.
 */
const htmlBody = z.strictObject({ html: z.string().optional(), custom_html: z.string().optional() })
  .superRefine((b, ctx) => {
    if ((b.html === undefined) === (b.custom_html === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: [b.html === undefined ? "html" : "custom_html"],
        message: 'expected the page in "html" (or "custom_html"), exactly one of them',
      });
    }
  })
  .transform((b) => ({ html: (b.html ?? b.custom_html)! }));
/**
 * The whole `block_page` object of specification 2.6, each key optional: what GET answers can be
 * written back. `custom_html` is sanitised (4.5) before it is kept, as an upload is.
 */
const settingsBody = z.strictObject({
  template_id: z.string().min(1).max(64).optional(),
  custom_enabled: z.boolean().optional(),
  custom_html: z.string().optional(),
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

const previewQuery = z.strictObject({ as: z.enum(["html", "link"]).default("html") });
/** The stored setting and the audit name of each kind of change to it. */
const PAGE_SETTINGS = { kind: KIND.blockPage, audit: "block_page.settings" } as const;
const CUSTOM_PAGE = { kind: KIND.blockPage, audit: "block_page.custom" } as const;

/** The caller's key: previews are kept per principal. */
function ownerOf(c: Ctx): string {
  const p = c.get("principal")!;
  return `${p.kind}:${p.id}`;
}

/** The stored block-page settings (defaults when none are stored). */
function currentPage(objects: PolicyObjects): BlockPageDoc {
  return parseStored(blockPageSchema, objects.singleton(KIND.blockPage));
}

/** The built-in templates and their previews. */
function templateRoutes(): RouteDef[] {
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
          preview: pageResponse(renderBlockPage(sample, SAMPLE_TRACE, id)),
        }));
        return Promise.all(items.map(async (t) => ({ ...t, preview: await t.preview.text() })))
          .then((list) => c.json({ items: list }));
      },
    },
    {
      method: "GET",
      path: "/api/block-pages/templates/:id/preview",
      access: perm("read:system"),
      handler: async (c) => {
        const id = c.req.param("id") ?? "";
        if (!blockTemplateNames().includes(id)) {
          throw new AppError(404, "NOT_FOUND", `No block-page template "${id}"`);
        }
        const sample = new Request("http://preview.invalid/", { headers: { accept: "text/html" } });
        const page = await pageResponse(renderBlockPage(sample, SAMPLE_TRACE, id)).text();
        return htmlPage(page, 200, c.get("traceId"), PREVIEW_CSP);
      },
    },
  ];
}

/** The configured page: template choice, the custom page's upload and removal. */
function settingsRoutes(objects: PolicyObjects): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/block-pages/settings",
      access: perm("read:system"),
      handler: (c) => c.json(currentPage(objects)),
    },
    {
      method: "PUT",
      path: "/api/block-pages/settings",
      access: perm("write:system"),
      handler: async (c) => {
        const { custom_html: html, ...body } = await readJson(c, settingsBody);
        const next: BlockPageDoc = { ...currentPage(objects), ...body };
        let detail: Record<string, unknown> = body;
        if (html !== undefined) {
          checkSize(html);
          // An empty page stays empty, so "" clears it rather than becoming a bare document.
          const clean = html === "" ? { html: "", removed: [] } : sanitizeHtml(html);
          next.custom_html = clean.html;
          detail = {
            ...body,
            custom_html: {
              bytes: ENCODER.encode(clean.html).length,
              removed: clean.removed.length,
            },
          };
        }
        if (!blockTemplateNames().includes(next.template_id)) {
          throw badRequest(
            `Invalid field "template_id": no template "${next.template_id}"`,
            "template_id",
          );
        }
        if (next.custom_enabled && next.custom_html === "") {
          throw badRequest(
            'Invalid field "custom_enabled": upload a custom page first',
            "custom_enabled",
          );
        }
        objects.putSingleton(PAGE_SETTINGS, next, auditContext(c), detail);
        return c.json(next);
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
        const next: BlockPageDoc = {
          ...currentPage(objects),
          custom_enabled: true,
          custom_html: clean.html,
        };
        objects.putSingleton(CUSTOM_PAGE, next, auditContext(c), {
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
        objects.deleteSingleton(CUSTOM_PAGE, auditContext(c));
        return c.body(null, 204);
      },
    },
  ];
}

/** Previews of a draft custom page, inline or as a short-lived link for an iframe. */
function previewRoutes(previews: BlockPagePreviews): RouteDef[] {
  return [
    {
      method: "POST",
      path: "/api/block-pages/preview",
      access: perm("read:system"),
      handler: async (c) => {
        const { as } = readQuery(c, previewQuery);
        const { html } = await readJson(c, htmlBody);
        checkSize(html);
        const page = renderCustomHtml(sanitizeHtml(html).html, SAMPLE_TRACE);
        if (as === "html") return htmlPage(page, 200, c.get("traceId"), PREVIEW_CSP);
        // A link for an iframe: the preview document then carries its own sandboxed CSP.
        const kept = previews.put(ownerOf(c), page);
        return c.json({
          url: `/api/block-pages/preview/${kept.id}`,
          expires_at: new Date(kept.expiresAt).toISOString(),
        }, 201);
      },
    },
    {
      method: "GET",
      path: "/api/block-pages/preview/:id",
      access: perm("read:system"),
      handler: (c) => {
        const page = previews.get(ownerOf(c), c.req.param("id") ?? "");
        if (page === undefined) {
          throw new AppError(404, "NOT_FOUND", "No such preview: previews expire after 10 minutes");
        }
        return htmlPage(page, 200, c.get("traceId"), PREVIEW_CSP);
      },
    },
  ];
}

export function blockPageRoutes(objects: PolicyObjects, previews: BlockPagePreviews): RouteDef[] {
  return [...templateRoutes(), ...settingsRoutes(objects), ...previewRoutes(previews)];
}
