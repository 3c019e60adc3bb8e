/**
 * Warns before site certificates expire: a check over the policy's sites raises
 * `certificate.expiring` for each certificate within the configured days, at most once a day
 * per site and certificate.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { Notify } from "../core/notifications.ts";
import type { CompiledPolicy } from "../data_plane/policy.ts";
import { certificateExpiry } from "../tls/x509.ts";

const DAY_MS = 86_400_000;

export function createCertificateWatch(deps: {
  policy: { readonly current: CompiledPolicy };
  clock: Clock;
  logger: Logger;
  notify: Notify;
  days: number;
}) {
  const warned = new Map<string, number>();
  return {
    /** Checks every site's certificate now; returns how many warnings it raised. */
    check(): number {
      const now = deps.clock.now();
      let raised = 0;
      for (const site of deps.policy.current.sites) {
        if (site.tls === null) continue;
        let expires: number;
        try {
          expires = certificateExpiry(site.tls.cert);
        } catch (err) {
          deps.logger.warn("site certificate unreadable", { site: site.name, error: err as Error });
          continue;
        }
        const left = expires - now;
        if (left > deps.days * DAY_MS) continue;
        const key = `${site.id} ${expires}`;
        const last = warned.get(key);
        if (last !== undefined && now - last < DAY_MS) continue;
        warned.set(key, now);
        const days = Math.floor(left / DAY_MS);
        deps.notify({
          level: left <= 0 ? "critical" : "warning",
          kind: "certificate.expiring",
          title: left <= 0
            ? `The certificate of ${site.name} has expired`
            : `The certificate of ${site.name} expires in ${days} day(s)`,
          body: `Certificate of ${site.name} (${site.hosts.join(", ")}) valid until ${
            new Date(expires).toISOString()
          }.`,
          data: {
            site_id: site.id,
            site: site.name,
            expires_at: new Date(expires).toISOString(),
            days_left: days,
          },
          params: {
            variant: left <= 0 ? "expired" : "expiring",
            site_id: site.id,
            site: site.name,
            hosts: site.hosts.join(", "),
            expires_at: new Date(expires).toISOString(),
            days_left: days,
          },
          link: "/console/sites",
        });
        raised++;
      }
      return raised;
    },
  };
}
