/**
 * `/api/onboarding`: the guided first site's server-side steps (`write:sites`, what creating the
 * site needs): `POST .../upstream-check` probes an upstream from this host with a bounded
 * timeout, `POST .../test-request` sends a harmless attack-shaped request to a site through the
 * data listener and answers with its status, action and trace id, and `GET .../pages/{id}`
 * (`read:sites`) serves that blocked answer's page for a sandboxed frame (the caller's own, for
 * 10 minutes).
 */
import { z } from "zod";
import { AppError } from "../../mod/core/errors.ts";
import { type Onboarding, PROBE_TIMEOUT } from "../../mod/data_plane/onboarding.ts";
import { siteUpstream } from "../../mod/data_plane/site_schema.ts";
import { htmlPage } from "../proxy/block_page.ts";
import { PREVIEW_CSP } from "./block_pages.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

const checkBody = z.strictObject({
  upstream: siteUpstream,
  timeout_ms: z.number().int().min(100).max(PROBE_TIMEOUT.maxMs).default(PROBE_TIMEOUT.defaultMs),
});

const testBody = z.strictObject({ site_id: z.string().min(1).max(64) });

/** The caller's key: kept pages are per principal. */
function ownerOf(c: Ctx): string {
  const p = c.get("principal")!;
  return `${p.kind}:${p.id}`;
}

export function onboardingRoutes(onboarding: Onboarding): RouteDef[] {
  return [
    {
      method: "POST",
      path: "/api/onboarding/upstream-check",
      access: perm("write:sites"),
      handler: async (c) => {
        const { upstream, timeout_ms } = await readJson(c, checkBody);
        return c.json(await onboarding.checkUpstream(upstream, timeout_ms));
      },
    },
    {
      method: "POST",
      path: "/api/onboarding/test-request",
      access: perm("write:sites"),
      handler: async (c) => {
        const { site_id } = await readJson(c, testBody);
        return c.json(await onboarding.testRequest(site_id, ownerOf(c)));
      },
    },
    {
      method: "GET",
      path: "/api/onboarding/pages/:id",
      access: perm("read:sites"),
      handler: (c) => {
        const page = onboarding.page(ownerOf(c), c.req.param("id") ?? "");
        if (page === undefined) {
          throw new AppError(404, "NOT_FOUND", "No such page: pages are kept for 10 minutes");
        }
        return htmlPage(page, 200, c.get("traceId"), PREVIEW_CSP);
      },
    },
  ];
}
