/**
 * What a tool call runs with: the asking principal (its permissions are the ceiling, checked
 * before a tool is offered and again before it runs) and the services the tools read from or
 * change through, the same ones the management API uses.
 */
import type { z } from "zod";
import type { InventorySource } from "../apisec/endpoints_query.ts";
import type { Clock } from "../core/clock.ts";
import type { AccessLog } from "../access_log/access_log.ts";
import { AppError, badRequest } from "../core/errors.ts";
import type { Sites, SiteView } from "../data_plane/sites.ts";
import { grants } from "../identity/permissions.ts";
import type { Alap } from "../protection/alap.ts";
import type { PolicyObjects } from "../protection/policy_objects.ts";
import type { CompiledProtection } from "../protection/protection_compile.ts";
import { type ToolName, TOOLS, type ToolSpec } from "./tool_catalog.ts";

/** Who asked: the principal of the request, never widened. */
export interface Asker {
  /** `user:<id>` or `token:<id>`: owns conversations and usage. */
  readonly key: string;
  readonly name: string;
  readonly permissions: readonly string[];
  /**
   * The human behind the principal (`user:<id>`; for a token, the user at the root of its
   * creator chain), so a user cannot approve a change they asked for through a token.
   */
  readonly human: string;
}

export interface ToolServices {
  readonly clock: Clock;
  readonly accessLog: Pick<AccessLog, "get" | "lookup" | "counts" | "top">;
  readonly sites: Sites;
  readonly objects: PolicyObjects;
  readonly alap: Alap;
  /** The protection the data plane enforces right now (threat indicators). */
  readonly protection: () => CompiledProtection | undefined;
  /** The discovered API inventory and the settings it is judged against. */
  readonly apisec: InventorySource;
}

/** The tools `asker` may use among those the configuration allows, in catalogue order. */
export function offeredTools(allowed: readonly ToolName[], asker: Asker): ToolSpec[] {
  const on = new Set(allowed);
  return TOOLS.filter((t) => on.has(t.name) && grants(asker.permissions, t.permission));
}

/** A tool the model asked for must be allowed and within the asker's permissions. */
export function checkTool(
  spec: ToolSpec | undefined,
  name: string,
  allowed: readonly ToolName[],
  asker: Asker,
): ToolSpec {
  if (!spec || !allowed.includes(spec.name)) {
    throw new AppError(400, "AI_TOOL_UNAVAILABLE", `Tool "${name}" is not available`);
  }
  if (!grants(asker.permissions, spec.permission)) {
    throw new AppError(
      403,
      "FORBIDDEN",
      `Tool "${name}" needs permission "${spec.permission}", which the asking user does not hold`,
      { details: { permission: spec.permission } },
    );
  }
  return spec;
}

/** A site by exact name or id. */
export function findSite(sites: Sites, ref: string): SiteView {
  const site = sites.list().find((s) => s.id === ref || s.name === ref);
  if (!site) throw new AppError(404, "NOT_FOUND", `No site named or with id "${ref}"`);
  return site;
}

/** Parses with `schema`, turning a failure into a 400 that names the first field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.path.map(String).join(".") || "(arguments)";
  throw badRequest(`Invalid field "${field}": ${issue.message}`, field);
}
