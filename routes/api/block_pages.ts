/**
 * Block-page management (`/api/block-pages`, `read:system` / `write:system`): the template
 * choice, the operator's custom HTML (sanitised on upload) and sandboxed previews. The data
 * plane renders the configured page itself (`routes/proxy/block_page.ts`); the previews here use
 * the same renderers.
 */
import { z } from "zod";
import { AppError } from "../../mod/core/errors.ts";
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
import { readJson } from "./validate.ts";

/** Largest custom page accepted, in bytes of UTF-8. */
export const MAX_CUSTOM_HTML = 64 * 1024;
const SAMPLE_TRACE = "0123456789abcdef0123456789abcdef";
const ENCODER = new TextEncoder();

/** CSP of previews: additionally sandboxed (a unique origin) and framable by the console only. */
const PREVIEW_CSP =
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
        return htmlPage(page, 200, c.get("traceId"), PREVIEW_CSP);
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
