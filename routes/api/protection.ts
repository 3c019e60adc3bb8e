/**
 * Management routes of the protection controls stored as documents: IP allow/block lists (and
 * the lookup of one address in them) and ACL rules (`read:protection` / `write:protection`), custom regex rules (`read:rules` /
 * `write:rules`), bot policies, and the global rate limit (read with `read:protection`, change
 * with `write:protection`). Each write is validated, audited in its transaction and recompiled
 * into the running policy before the response is sent.
 */
import { z } from "zod";
import { AppError, badRequest } from "../../mod/core/errors.ts";
import {
  MAX_SAMPLE_CHARS,
  MAX_SAMPLES,
  type PatternTester,
} from "../../mod/protection/pattern_tester.ts";
import type { PolicyObjects, StoredObject } from "../../mod/protection/policy_objects.ts";
import { lookUpAddress } from "../../mod/protection/ip_lookup.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import {
  aclRuleSchema,
  botPolicySchema,
  customRuleSchema,
  ipEntrySchema,
  parseStored,
  rateLimitSchema,
} from "../../mod/protection/protection_schema.ts";
import { auditContext } from "./actor.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface CrudOptions {
  readonly base: string;
  readonly kind: string;
  /** Human name in messages, e.g. "IP list entry". */
  readonly label: string;
  /** Audit action prefix, e.g. `protection.ip_entry`. */
  readonly audit: string;
  readonly schema: z.ZodType<Record<string, unknown>>;
  readonly read: string;
  readonly write: string;
  /** Extra write-time checks that need the running configuration; throw an AppError. */
  readonly check?: (doc: Record<string, unknown>) => void;
  /** Shapes each stored item for the response (e.g. adds a sync status). */
  readonly decorate?: (item: StoredObject) => StoredObject;
  /** Runs after a committed create or replace. */
  readonly afterWrite?: (item: StoredObject) => void;
  /** Runs after a committed delete. */
  readonly afterDelete?: (id: string) => void;
  /** Optional list filter from the query string. */
  readonly filter?: (item: Record<string, unknown>, query: Record<string, string>) => boolean;
}

/** List, create, read, replace and delete routes for one document kind. */
export function crudRoutes(objects: PolicyObjects, o: CrudOptions): RouteDef[] {
  const position = (doc: Record<string, unknown>) =>
    typeof doc["position"] === "number" ? doc["position"] : undefined;
  const shape = o.decorate ?? ((item: StoredObject) => item);
  const written = (item: StoredObject) => {
    o.afterWrite?.(item);
    return shape(item);
  };
  return [
    {
      method: "GET",
      path: o.base,
      access: perm(o.read),
      handler: (c) => {
        const q = c.req.query();
        const items = objects.list(o.kind);
        const kept = o.filter ? items.filter((i) => o.filter!(i, q)) : items;
        return c.json({ items: kept.map(shape) });
      },
    },
    {
      method: "POST",
      path: o.base,
      access: perm(o.write),
      handler: async (c) => {
        const doc = await readJson(c, o.schema);
        o.check?.(doc);
        const item = objects.create(o, doc, auditContext(c), position(doc));
        return c.json(written(item), 201);
      },
    },
    {
      method: "GET",
      path: `${o.base}/:id`,
      access: perm(o.read),
      handler: (c) => c.json(shape(objects.get(o.kind, o.label, c.req.param("id") ?? ""))),
    },
    {
      method: "PUT",
      path: `${o.base}/:id`,
      access: perm(o.write),
      handler: async (c) => {
        const doc = await readJson(c, o.schema);
        o.check?.(doc);
        const id = c.req.param("id") ?? "";
        const item = objects.replace(o, id, doc, {
          ctx: auditContext(c),
          position: position(doc),
        });
        return c.json(written(item));
      },
    },
    {
      method: "DELETE",
      path: `${o.base}/:id`,
      access: perm(o.write),
      handler: (c) => {
        const id = c.req.param("id") ?? "";
        objects.remove(o, id, auditContext(c));
        o.afterDelete?.(id);
        return c.body(null, 204);
      },
    },
  ];
}

/** GET and PUT of one singleton setting. */
export function settingRoutes(
  objects: PolicyObjects,
  o: { path: string; kind: string; audit: string; schema: z.ZodType; read: string; write: string },
): RouteDef[] {
  return [
    {
      method: "GET",
      path: o.path,
      access: perm(o.read),
      handler: (c) =>
        c.json(parseStored(o.schema, objects.singleton(o.kind)) as Record<string, unknown>),
    },
    {
      method: "PUT",
      path: o.path,
      access: perm(o.write),
      handler: async (c) => {
        const doc = await readJson(c, o.schema);
        objects.putSingleton(o, doc, auditContext(c), doc as Record<string, unknown>);
        return c.json(doc as Record<string, unknown>);
      },
    },
  ];
}

const patternTest = z.strictObject({
  pattern: z.string().min(1).max(4000),
  ignore_case: z.boolean().default(false),
  samples: z.array(
    z.string().max(MAX_SAMPLE_CHARS, `expected a sample of at most ${MAX_SAMPLE_CHARS} characters`),
  ).max(MAX_SAMPLES, `expected at most ${MAX_SAMPLES} samples`).default([]),
});

/** Refuses country conditions when no GeoIP database is configured. */
function geoCheck(hasGeo: boolean) {
  return (doc: Record<string, unknown>) => {
    const conditions = doc["conditions"] as { countries?: unknown } | undefined;
    if (!hasGeo && conditions?.countries !== undefined) {
      throw badRequest(
        'Invalid field "conditions.countries": no GeoIP database is configured (set protection.geoip.file)',
        "conditions.countries",
      );
    }
  };
}

export function protectionRoutes(
  objects: PolicyObjects,
  options: { readonly hasGeo: boolean; readonly tester: PatternTester },
): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/protection/ip-lists/lookup/:ip",
      access: perm("read:protection"),
      handler: (c) => {
        const found = lookUpAddress(c.req.param("ip") ?? "", objects.list(KIND.ip));
        if (!found) throw badRequest('Invalid field "ip": expected an IPv4 or IPv6 address', "ip");
        return c.json(found);
      },
    },
    ...crudRoutes(objects, {
      base: "/api/protection/ip-lists",
      kind: KIND.ip,
      label: "IP list entry",
      audit: "protection.ip_entry",
      schema: ipEntrySchema,
      read: "read:protection",
      write: "write:protection",
      filter: (item, q) =>
        (q["action"] === undefined || item["action"] === q["action"]) &&
        (q["site_id"] === undefined || item["site_id"] === q["site_id"]),
    }),
    ...crudRoutes(objects, {
      base: "/api/protection/acl-rules",
      kind: KIND.acl,
      label: "ACL rule",
      audit: "protection.acl_rule",
      schema: aclRuleSchema,
      read: "read:protection",
      write: "write:protection",
      check: geoCheck(options.hasGeo),
    }),
    ...crudRoutes(objects, {
      base: "/api/rules/custom",
      kind: KIND.custom,
      label: "custom rule",
      audit: "rules.custom",
      schema: customRuleSchema,
      read: "read:rules",
      write: "write:rules",
    }),
    ...crudRoutes(objects, {
      base: "/api/protection/bot-policies",
      kind: KIND.bot,
      label: "bot policy",
      audit: "protection.bot_policy",
      schema: botPolicySchema,
      read: "read:protection",
      write: "write:protection",
    }),
    {
      // Changes nothing: compiles the pattern with RE2, as saving a rule would, and tries it on
      // the tester's worker, within its time limit (mod/protection/pattern_tester.ts).
      method: "POST",
      path: "/api/rules/custom/test",
      access: perm("read:rules"),
      handler: async (c) => {
        const body = await readJson(c, patternTest);
        const r = await options.tester.test(body.pattern, body.ignore_case, body.samples);
        if (r.valid === "timeout") {
          throw new AppError(
            422,
            "PATTERN_TEST_TIMEOUT",
            `The pattern ran past the tester's limit of ${r.timeoutMs} ms on these samples: ` +
              "simplify it (fewer counted repetitions) or try shorter samples",
          );
        }
        return c.json(
          r.valid
            ? {
              valid: true,
              error: null,
              results: body.samples.map((sample, i) => ({ sample, matched: r.matches[i] })),
            }
            : { valid: false, error: r.error, results: [] },
        );
      },
    },
    ...settingRoutes(objects, {
      path: "/api/protection/rate-limit",
      kind: KIND.rateLimit,
      audit: "protection.rate_limit",
      schema: rateLimitSchema,
      read: "read:protection",
      write: "write:protection",
    }),
  ];
}
