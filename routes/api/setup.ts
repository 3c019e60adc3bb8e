/**
 * First-install setup API. Status is public and says only whether setup is required; every
 * other route is `bootstrap` (the guard answers 409 `SETUP_COMPLETE` once done) and checks
 * the setup token header and/or the setup session cookie itself.
 */
import { z } from "zod";
import type { Setup } from "../../mod/identity/setup.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { type ConsoleCookies, readCookie, SETUP_COOKIE, SETUP_TOKEN_HEADER } from "./cookies.ts";
import type { Ctx } from "./env.ts";
import { BOOTSTRAP, PUBLIC, type RouteDef } from "./route.ts";
import { type SlowRefusalDeps, slowRefusals } from "./slow_refusals.ts";
import { readJson } from "./validate.ts";

const profile = z.enum(["low", "balanced", "strict"]);

const draftPatch = z.strictObject({
  username: z.string().max(256).optional(),
  profile: profile.optional(),
});

const completeBody = z.strictObject({
  username: z.string().max(256),
  password: z.string().max(4096),
  /** The protection level of new sites created without one (default: the draft's). */
  profile: profile.optional(),
});

const ctxOf = (c: Ctx) => ({ clientIp: c.get("clientIp"), traceId: c.get("traceId") });
const tokenOf = (c: Ctx) => c.req.header(SETUP_TOKEN_HEADER);

export function setupRoutes(
  setup: Setup,
  sink: AuditSink,
  slow: SlowRefusalDeps,
  cookies: ConsoleCookies,
): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/setup/status",
      access: PUBLIC,
      handler: (c) => c.json({ setup_required: !setup.isComplete() }),
    },
    {
      method: "POST",
      path: "/api/setup/probe",
      access: BOOTSTRAP,
      handler: async (c) => {
        const token = await slowRefusals(c, slow, () => setup.checkToken(tokenOf(c), ctxOf(c)));
        const { cookie, maxAgeSeconds, probe } = await setup.probe(token, ctxOf(c));
        cookies.setSetup(c, cookie, maxAgeSeconds);
        return c.json(probe);
      },
    },
    {
      method: "GET",
      path: "/api/setup/draft",
      access: BOOTSTRAP,
      handler: (c) => {
        setup.checkSession(readCookie(c, SETUP_COOKIE));
        return c.json(setup.getDraft());
      },
    },
    {
      method: "PATCH",
      path: "/api/setup/draft",
      access: BOOTSTRAP,
      handler: async (c) => {
        setup.checkSession(readCookie(c, SETUP_COOKIE));
        await slowRefusals(c, slow, () => setup.checkToken(tokenOf(c), ctxOf(c)));
        const draft = await auditFailures(
          c,
          sink,
          { action: "setup.draft", target: "setup" },
          async () => {
            const patch = await readJson(c, draftPatch);
            return setup.patchDraft(patch, ctxOf(c));
          },
        );
        return c.json(draft);
      },
    },
    {
      method: "POST",
      path: "/api/setup",
      access: BOOTSTRAP,
      handler: async (c) => {
        await slowRefusals(c, slow, () => setup.checkToken(tokenOf(c), ctxOf(c)));
        const user = await auditFailures(
          c,
          sink,
          { action: "setup.complete", target: "setup" },
          async () => {
            const body = await readJson(c, completeBody);
            return await setup.complete(body, ctxOf(c));
          },
        );
        cookies.clearSetup(c);
        return c.json({ user, next: "/login" }, 201);
      },
    },
  ];
}
