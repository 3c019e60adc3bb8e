/**
 * Block pages as the data plane serves them: the built-in templates by name (`minimal`, the
 * default, and `friendly`), and the operator's sanitised custom HTML when it is enabled. A
 * template gets the request (for content negotiation) and the trace id, nothing about the
 * detector, so the page cannot reveal which rule fired. Every block answer is 403 with
 * `X-WAF-Trace-Id` and `Cache-Control: no-store`; a client preferring JSON gets
 * `{code, message, traceId}`. The rendered page always shows the trace id: the `{{trace_id}}`
 * placeholder is filled in, or a trace-id line is inserted when it is missing.
 * `routes/api/block_pages.ts` manages the settings and previews with the same renderers.
 */
import type { CompiledProtection } from "../../mod/protection/protection_compile.ts";
import { wantsJson } from "../../net/accept.ts";
import { escapeHtml, type PageAnswer, type PageText, statusPage } from "./status_page.ts";

export type BlockTemplate = (req: Request, traceId: string) => PageAnswer;

const MINIMAL: PageText = {
  status: 403,
  code: "BLOCKED",
  title: "Request blocked",
  message:
    "This request was blocked by the site's web application firewall. If you believe this is a mistake, contact the site owner and quote the trace id below.",
};
const minimal: BlockTemplate = (req, traceId) => statusPage(req, MINIMAL, traceId);

const FRIENDLY: PageText = {
  status: 403,
  code: "BLOCKED",
  title: "Sorry, this request was stopped",
  message:
    "Something in this request looked like an attack, so the site's firewall stopped it before it reached the site. Nothing was changed. If you were doing something ordinary, go back and try again, or contact the site's support and quote the trace id below so they can look it up.",
};
const friendly: BlockTemplate = (req, traceId) => statusPage(req, FRIENDLY, traceId);

const templates = new Map<string, BlockTemplate>([["minimal", minimal], ["friendly", friendly]]);

export const DEFAULT_BLOCK_TEMPLATE = "minimal";

/** CSP of served custom pages: no script, no plugins, styles and images only. */
const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";
const PLACEHOLDER = /\{\{\s*trace_id\s*\}\}/g;
const BODY_END = /<\/body>/i;

export function blockTemplateNames(): string[] {
  return [...templates.keys()];
}

/** Renders a built-in template; an unknown name falls back to `minimal`. */
export function renderBlockPage(
  req: Request,
  traceId: string,
  template: string = DEFAULT_BLOCK_TEMPLATE,
): PageAnswer {
  return (templates.get(template) ?? minimal)(req, traceId);
}

/** Fills the placeholder, or inserts a trace-id line when the page lacks it. */
export function renderCustomHtml(html: string, traceId: string): string {
  const id = escapeHtml(traceId);
  if (html.search(PLACEHOLDER) >= 0) return html.replace(PLACEHOLDER, id);
  const line = `<p class="waf-trace">traceId: <code>${id}</code></p>`;
  const end = html.search(BODY_END);
  return end >= 0 ? html.slice(0, end) + line + html.slice(end) : html + line;
}

/** An HTML answer with the headers every block page and preview carries. */
export function htmlPage(body: string, status: number, traceId: string, csp: string): Response {
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

/** The block page the request's protection settings select (built-in when there are none). */
export function blockPage(
  req: Request,
  traceId: string,
  p: CompiledProtection | undefined,
): PageAnswer {
  if (p === undefined) return renderBlockPage(req, traceId);
  const s = p.blockPage;
  if (s.custom_enabled && s.custom_html !== "" && !wantsJson(req)) {
    return htmlPage(renderCustomHtml(s.custom_html, traceId), 403, traceId, PAGE_CSP);
  }
  return renderBlockPage(req, traceId, s.template_id);
}
