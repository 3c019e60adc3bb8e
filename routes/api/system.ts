/**
 * System endpoints: version, the unimplemented backup API, the reserved OTA settings and the
 * update check (NOT_IMPLEMENTED).
 */
import { z } from "zod";
import type { Audit } from "../../mod/core/audit.ts";
import { AppError } from "../../mod/core/errors.ts";
import type { Ota } from "../../mod/ops/ota.ts";
import { versionReport } from "../../mod/core/version.ts";
import { auditContext } from "./actor.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface SystemRouteDeps {
  readonly ota: Ota;
  readonly audit: Audit;
  /** Runs `fn` in one store transaction (the audit record commits with the change). */
  readonly transaction: <T>(fn: () => T) => T;
}

const otaKeys = z.strictObject({
  enabled: z.boolean().optional(),
  server: z.string().optional(),
  channel: z.enum(["stable", "beta"]).optional(),
  check_interval: z.string().regex(/^\d+(ms|s|m|h|d)$/).optional(),
  auto_update_rules: z.boolean().optional(),
  auto_update_binary: z.boolean().optional(),
  verify_signature: z.boolean().optional(),
});

/** The read-only parts of what `GET /api/system/ota` answers. */
const VIEW_ONLY = new Set(["available", "reserved_keys", "message"]);

/**
 * The `update.ota` keys flat, or the document `GET` answers written back: its `settings` are the
 * keys, and the read-only parts (`available`, `reserved_keys`, `message`, the `public_keys`
 * count) are ignored. Either way, asking to enable OTA is `OTA_UPDATES_UNAVAILABLE`
 * (specification 7), never a 400 about the shape.
 */
const otaPatch = z.preprocess((body) => {
  if (!isObject(body) || !isObject(body.settings)) return body;
  const { public_keys, ...keys } = body.settings;
  const rest = Object.fromEntries(
    Object.entries(body).filter(([k]) => k !== "settings" && !VIEW_ONLY.has(k)),
  );
  // A list of keys is not the count GET shows: left in, so the strict check names it.
  const listed = public_keys === undefined || typeof public_keys === "number"
    ? {}
    : { public_keys };
  return { ...keys, ...listed, ...rest };
}, otaKeys);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function systemRoutes(deps: SystemRouteDeps): RouteDef[] {
  /** Records a refused write, then rethrows its error. */
  const refuse = (c: Ctx, action: string, err: AppError): never => {
    deps.transaction(() =>
      deps.audit.record({
        ...auditContext(c),
        action,
        target: "system",
        result: "failure",
        detail: { code: err.code },
      })
    );
    throw err;
  };
  return [
    {
      method: "GET",
      path: "/api/system/version",
      access: perm("read:system"),
      handler: (c) => c.json(versionReport()),
    },
    {
      method: "POST",
      path: "/api/backup/export",
      access: perm("write:system"),
      handler: (c) =>
        refuse(
          c,
          "backup.export",
          new AppError(
            501,
            "BACKUP_EXPORT_NOT_IMPLEMENTED",
            'Backup export over the API is not implemented: run "waf store backup --out FILE" on the host',
          ),
        ),
    },
    {
      method: "POST",
      path: "/api/backup/restore",
      access: perm("write:system"),
      handler: (c) =>
        refuse(
          c,
          "backup.restore",
          new AppError(
            501,
            "BACKUP_RESTORE_NOT_IMPLEMENTED",
            'Backup restore over the API is not implemented: stop waf and restore a snapshot taken with "waf store backup"',
          ),
        ),
    },
    {
      // The console's Updates page asks here; the specification's answer is NOT_IMPLEMENTED.
      method: "GET",
      path: "/api/system/updates",
      access: perm("read:system"),
      handler: () => {
        throw new AppError(
          501,
          "NOT_IMPLEMENTED",
          "Update checks are not implemented in this build: there is no updater worker, the update.ota keys are reserved",
        );
      },
    },
    {
      method: "GET",
      path: "/api/system/ota",
      access: perm("read:system"),
      handler: (c) => c.json(deps.ota.view()),
    },
    {
      method: "PUT",
      path: "/api/system/ota",
      access: perm("write:system"),
      handler: async (c) => {
        const patch = await readJson(c, otaPatch);
        try {
          const view = deps.ota.update(patch);
          deps.transaction(() =>
            deps.audit.record({
              ...auditContext(c),
              action: "system.ota.update",
              target: "update.ota",
              result: "success",
              detail: { changed: [] },
            })
          );
          return c.json(view);
        } catch (err) {
          if (err instanceof AppError) return refuse(c, "system.ota.update", err);
          throw err;
        }
      },
    },
  ];
}
