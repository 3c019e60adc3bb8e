/**
 * Stores the protection controls' documents (`policy_objects`): create, replace, delete and
 * singleton settings, each in one transaction with its audit record, then one policy rebuild,
 * so every change reaches the data plane at once.
 */
import type { PolicyObjectRow, PolicyObjectsRepo } from "../../db/policy_objects_repo.ts";
import { type Db, transaction } from "../../db/store.ts";
import { testPattern } from "../../engine/custom_rules.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { type Random, randomHex } from "../core/random.ts";

/** Who asked, for the audit record. */
export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/** A stored document as the API returns it. */
export type StoredObject = Record<string, unknown> & {
  readonly id: string;
  readonly created_at: string;
  readonly updated_at: string;
};

export interface PolicyObjectsDeps {
  readonly db: Db;
  readonly repo: PolicyObjectsRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  /** Recompiles the data plane's policy after a committed change. */
  readonly onChange: () => void;
}

function toApi(row: PolicyObjectRow): StoredObject {
  return {
    id: row.id,
    ...JSON.parse(row.config) as Record<string, unknown>,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** The document's `site_id` when it has one (`null` for global). */
function siteOf(doc: Record<string, unknown>): string | null {
  return typeof doc["site_id"] === "string" ? doc["site_id"] : null;
}

export function createPolicyObjects(deps: PolicyObjectsDeps) {
  const { db, repo, audit, clock } = deps;

  function checkSite(doc: Record<string, unknown>): void {
    const site = siteOf(doc);
    if (site !== null && !repo.siteExists(site)) {
      throw new AppError(400, "BAD_REQUEST", `Invalid field "site_id": no site "${site}"`, {
        details: { field: "site_id" },
      });
    }
  }

  /** Writes a global document under a fixed id (singletons, feed results). */
  function upsert(kind: string, id: string, doc: unknown): void {
    const now = clock.now();
    const config = JSON.stringify(doc);
    const old = repo.get(kind, id);
    if (old) repo.update({ ...old, config, updated_at: now });
    else {
      repo.insert({
        id,
        kind,
        site_id: null,
        position: 0,
        config,
        created_at: now,
        updated_at: now,
      });
    }
  }

  function notFound(label: string, id: string): AppError {
    return new AppError(404, "NOT_FOUND", `No ${label} "${id}"`);
  }

  return {
    list(kind: string): StoredObject[] {
      return repo.list(kind).map(toApi);
    },
    rows(kind: string): PolicyObjectRow[] {
      return repo.list(kind);
    },
    get(kind: string, label: string, id: string): StoredObject {
      const row = repo.get(kind, id);
      if (!row) throw notFound(label, id);
      return toApi(row);
    },

    /** Stores a new document; `position` orders documents of one kind (appended by default). */
    create(
      kind: string,
      auditName: string,
      doc: Record<string, unknown>,
      ctx: AuditContext,
      position?: number,
    ): StoredObject {
      checkSite(doc);
      const now = clock.now();
      const id = `${kind.slice(0, 3)}_${randomHex(deps.random, 8)}`;
      const row = transaction(db, () => {
        const r: PolicyObjectRow = {
          id,
          kind,
          site_id: siteOf(doc),
          position: position ?? repo.nextPosition(kind),
          config: JSON.stringify(doc),
          created_at: now,
          updated_at: now,
        };
        repo.insert(r);
        audit.record({ ...ctx, action: `${auditName}.create`, target: id, result: "success" });
        return r;
      });
      deps.onChange();
      return toApi(row);
    },

    /** Replaces a document (keeping its position unless a new one is given). */
    replace(
      kind: string,
      auditName: string,
      label: string,
      id: string,
      doc: Record<string, unknown>,
      ctx: AuditContext,
      position?: number,
      verb = "update",
      detail?: Record<string, unknown>,
    ): StoredObject {
      checkSite(doc);
      const now = clock.now();
      const row = transaction(db, () => {
        const old = repo.get(kind, id);
        if (!old) throw notFound(label, id);
        const r = {
          ...old,
          site_id: siteOf(doc),
          position: position ?? old.position,
          config: JSON.stringify(doc),
          updated_at: now,
        };
        repo.update(r);
        audit.record({
          ...ctx,
          action: `${auditName}.${verb}`,
          target: id,
          result: "success",
          ...(detail ? { detail } : {}),
        });
        return r;
      });
      deps.onChange();
      return toApi(row);
    },

    remove(kind: string, auditName: string, label: string, id: string, ctx: AuditContext): void {
      transaction(db, () => {
        if (!repo.remove(kind, id)) throw notFound(label, id);
        audit.record({ ...ctx, action: `${auditName}.delete`, target: id, result: "success" });
      });
      deps.onChange();
    },

    /** The stored JSON of an internal document keyed by id (feed status, indicators). */
    singletonOf(kind: string, id: string): string | undefined {
      return repo.get(kind, id)?.config;
    },

    /** The stored JSON of a singleton setting (its id is its kind), if any. */
    singleton(kind: string): string | undefined {
      return repo.get(kind, kind)?.config;
    },

    /** Stores a singleton setting; `detail` goes into the audit record (never secrets). */
    putSingleton(
      kind: string,
      auditName: string,
      doc: unknown,
      ctx: AuditContext,
      detail?: Record<string, unknown>,
    ): void {
      transaction(db, () => {
        upsert(kind, kind, doc);
        audit.record({
          ...ctx,
          action: `${auditName}.update`,
          target: kind,
          result: "success",
          detail,
        });
      });
      deps.onChange();
    },

    /** Records an action that changes no document (a cache purge, a feed sync). */
    auditOnly(
      action: string,
      ctx: AuditContext,
      detail: Record<string, unknown>,
      outcome: { readonly target?: string; readonly result?: "success" | "failure" } = {},
    ): void {
      transaction(db, () =>
        audit.record({
          ...ctx,
          action,
          target: outcome.target,
          result: outcome.result ?? "success",
          detail,
        }));
    },

    /** Removes a singleton setting (back to its defaults). */
    deleteSingleton(kind: string, auditName: string, ctx: AuditContext): void {
      transaction(db, () => {
        repo.remove(kind, kind);
        audit.record({ ...ctx, action: `${auditName}.delete`, target: kind, result: "success" });
      });
      deps.onChange();
    },

    /**
     * Inserts a document without its own transaction, audit or rebuild: for callers that
     * batch several inside one transaction with their own audit records (ALAP proposals).
     */
    createInternal(kind: string, doc: unknown, siteId: string | null): StoredObject {
      const now = clock.now();
      const row: PolicyObjectRow = {
        id: `${kind.slice(0, 3)}_${randomHex(deps.random, 8)}`,
        kind,
        site_id: siteId,
        position: 0,
        config: JSON.stringify(doc),
        created_at: now,
        updated_at: now,
      };
      repo.insert(row);
      return toApi(row);
    },

    /** Writes without audit or rebuild, for the data plane's own bookkeeping (feed results). */
    putInternal(kind: string, id: string, doc: unknown): void {
      transaction(db, () => upsert(kind, id, doc));
    },
    removeInternal(kind: string, id: string): void {
      repo.remove(kind, id);
    },

    /** Tries a custom rule's pattern on samples, compiled with RE2 as saving the rule would. */
    testPattern(pattern: string, ignoreCase: boolean, samples: readonly string[]) {
      return testPattern(pattern, ignoreCase, samples);
    },
  };
}

export type PolicyObjects = ReturnType<typeof createPolicyObjects>;
