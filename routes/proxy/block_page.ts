/**
 * Block pages: a small registry of templates by name, `minimal` built in. A template gets the
 * request (for content negotiation) and the trace id, nothing about the detector, so the page
 * cannot reveal which rule fired. Every block answer is 403 with `X-WAF-Trace-Id` and
 * `Cache-Control: no-store`; a client asking for JSON gets `{code, message, traceId}`.
 */
import { statusPage } from "./status_page.ts";

export type BlockTemplate = (req: Request, traceId: string) => Response;

const minimal: BlockTemplate = (req, traceId) =>
  statusPage(
    req,
    403,
    "BLOCKED",
    "Request blocked",
    "This request was blocked by the site's web application firewall. If you believe this is a mistake, contact the site owner and quote the trace id below.",
    traceId,
  );

const templates = new Map<string, BlockTemplate>([["minimal", minimal]]);

export const DEFAULT_BLOCK_TEMPLATE = "minimal";

/** Adds or replaces a template (issue #7's template management plugs in here). */
export function registerBlockTemplate(name: string, template: BlockTemplate): void {
  templates.set(name, template);
}

export function blockTemplateNames(): string[] {
  return [...templates.keys()];
}

/** Renders the block page; an unknown template name falls back to `minimal`. */
export function renderBlockPage(
  req: Request,
  traceId: string,
  template: string = DEFAULT_BLOCK_TEMPLATE,
): Response {
  return (templates.get(template) ?? minimal)(req, traceId);
}
