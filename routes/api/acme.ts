/**
 * ACME certificates for sites: `POST /api/sites/{id}/certificate/acme` (`write:sites`) orders,
 * validates (HTTP-01 through the data plane) and installs a certificate for the site's host
 * names, answering when it is installed or failed; `GET` (`read:sites`) shows the site's ACME
 * state (directory, status, expiry, the next renewal, the last failure per host). Refusals before
 * the order (validation, unsupported host, an order already running) are audited here, the order's
 * own outcome by the service.
 */
import { type Acme, acmeInputSchema } from "../../mod/tls/acme.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface AcmeRouteDeps extends AuditSink {
  readonly acme: Acme;
}

export function acmeRoutes(deps: AcmeRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/sites/:id/certificate/acme",
      access: perm("read:sites"),
      handler: (c) => c.json({ acme: deps.acme.state(c.req.param("id") ?? "") }),
    },
    {
      method: "POST",
      path: "/api/sites/:id/certificate/acme",
      access: perm("write:sites"),
      handler: async (c) => {
        const id = c.req.param("id") ?? "";
        const state = await auditFailures(
          c,
          deps,
          { action: "site.certificate.acme", target: id },
          async () => deps.acme.issue(id, await readJson(c, acmeInputSchema), auditContext(c)),
        );
        return c.json({ acme: state });
      },
    },
  ];
}
