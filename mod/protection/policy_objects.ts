/**
 * Stores the protection controls' documents (`policy_objects`): create, replace, delete and
 * singleton settings, each in one transaction with its audit record, then one policy rebuild,
 * so every change reaches the data plane at once.
 */
import type { PolicyObjectRow, PolicyObjectsRepo } from "../../db/policy_objects_repo.ts";
import { type Db, transaction } from "../../db/store.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError, badRequest } from "../core/errors.ts";
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

function notFound(label: string, id: string): AppError {
  return new AppError(404, "NOT_FOUND", `No ${label} "${id}"`);
}

/**
 * Which documents a change is about: their kind in the store, the prefix of its audit action
 * (`protection.ip_entry`), and the name a 404 calls them ("IP list entry").
 */
export interface DocumentKind {
  readonly kind: string;
  readonly audit: string;
  readonly label: string;
}

/** How a replacement is recorded: who asked, a new position, the audit verb and detail. */
export interface DocumentChange {
  readonly ctx: AuditContext;
  /** Keeps the document's position when absent. */
  readonly position?: number;
  /** The audit action's verb (default `update`). */
  readonly verb?: string;
  readonly detail?: Record<string, unknown>;
}

export function createPolicyObjects(deps: PolicyObjectsDeps): PolicyObjects {
  return new PolicyObjects(deps);
}

export class PolicyObjects {
  readonly #deps: PolicyObjectsDeps;

  constructor(deps: PolicyObjectsDeps) {
    this.#deps = deps;
  }

  list(kind: string): StoredObject[] {
    return this.#deps.repo.list(kind).map(toApi);
  }

  rows(kind: string): PolicyObjectRow[] {
    return this.#deps.repo.list(kind);
  }

  get(kind: string, label: string, id: string): StoredObject {
    const row = this.#deps.repo.get(kind, id);
    if (!row) throw notFound(label, id);
    return toApi(row);
  }

  /** Stores a new document; `position` orders documents of one kind (appended by default). */
  create(
    of: Pick<DocumentKind, "kind" | "audit">,
    doc: Record<string, unknown>,
    ctx: AuditContext,
    position?: number,
  ): StoredObject {
    const { db, repo, audit, clock } = this.#deps;
    const { kind } = of;
    this.#checkSite(doc);
    const now = clock.now();
    const id = `${kind.slice(0, 3)}_${randomHex(this.#deps.random, 8)}`;
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
      audit.record({ ...ctx, action: `${of.audit}.create`, target: id, result: "success" });
      return r;
    });
    this.#deps.onChange();
    return toApi(row);
  }

  /** Replaces a document (keeping its position unless the change gives a new one). */
  replace(
    of: DocumentKind,
    id: string,
    doc: Record<string, unknown>,
    change: DocumentChange,
  ): StoredObject {
    const { db, repo, audit, clock } = this.#deps;
    const { ctx, position, verb = "update", detail } = change;
    this.#checkSite(doc);
    const now = clock.now();
    const row = transaction(db, () => {
      const old = repo.get(of.kind, id);
      if (!old) throw notFound(of.label, id);
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
        action: `${of.audit}.${verb}`,
        target: id,
        result: "success",
        ...(detail ? { detail } : {}),
      });
      return r;
    });
    this.#deps.onChange();
    return toApi(row);
  }

  remove(of: DocumentKind, id: string, ctx: AuditContext): void {
    const { repo, audit } = this.#deps;
    transaction(this.#deps.db, () => {
      if (!repo.remove(of.kind, id)) throw notFound(of.label, id);
      audit.record({ ...ctx, action: `${of.audit}.delete`, target: id, result: "success" });
    });
    this.#deps.onChange();
  }

  /** The stored JSON of an internal document keyed by id (feed status, indicators). */
  singletonOf(kind: string, id: string): string | undefined {
    return this.#deps.repo.get(kind, id)?.config;
  }

  /** The stored JSON of a singleton setting (its id is its kind), if any. */
  singleton(kind: string): string | undefined {
    return this.#deps.repo.get(kind, kind)?.config;
  }

  /** Stores a singleton setting; `detail` goes into the audit record (never secrets). */
  putSingleton(
    of: Pick<DocumentKind, "kind" | "audit">,
    doc: unknown,
    ctx: AuditContext,
    detail?: Record<string, unknown>,
  ): void {
    transaction(this.#deps.db, () => {
      this.#upsert(of.kind, of.kind, doc);
      this.#deps.audit.record({
        ...ctx,
        action: `${of.audit}.update`,
        target: of.kind,
        result: "success",
        detail,
      });
    });
    this.#deps.onChange();
  }

  /** Records an action that changes no document (a cache purge, a feed sync). */
  auditOnly(
    action: string,
    ctx: AuditContext,
    detail: Record<string, unknown>,
    outcome: { readonly target?: string; readonly result?: "success" | "failure" } = {},
  ): void {
    transaction(this.#deps.db, () =>
      this.#deps.audit.record({
        ...ctx,
        action,
        target: outcome.target,
        result: outcome.result ?? "success",
        detail,
      }));
  }

  /** Removes a singleton setting (back to its defaults). */
  deleteSingleton(of: Pick<DocumentKind, "kind" | "audit">, ctx: AuditContext): void {
    transaction(this.#deps.db, () => {
      this.#deps.repo.remove(of.kind, of.kind);
      this.#deps.audit.record({
        ...ctx,
        action: `${of.audit}.delete`,
        target: of.kind,
        result: "success",
      });
    });
    this.#deps.onChange();
  }

  /**
   * Inserts a document without its own transaction, audit or rebuild: for callers that
   * batch several inside one transaction with their own audit records (ALAP proposals).
   */
  createInternal(kind: string, doc: unknown, siteId: string | null): StoredObject {
    const now = this.#deps.clock.now();
    const row: PolicyObjectRow = {
      id: `${kind.slice(0, 3)}_${randomHex(this.#deps.random, 8)}`,
      kind,
      site_id: siteId,
      position: 0,
      config: JSON.stringify(doc),
      created_at: now,
      updated_at: now,
    };
    this.#deps.repo.insert(row);
    return toApi(row);
  }

  /** Writes without audit or rebuild, for the data plane's own bookkeeping (feed results). */
  putInternal(kind: string, id: string, doc: unknown): void {
    transaction(this.#deps.db, () => this.#upsert(kind, id, doc));
  }

  removeInternal(kind: string, id: string): void {
    this.#deps.repo.remove(kind, id);
  }

  #checkSite(doc: Record<string, unknown>): void {
    const site = siteOf(doc);
    if (site !== null && !this.#deps.repo.siteExists(site)) {
      throw badRequest(`Invalid field "site_id": no site "${site}"`, "site_id");
    }
  }

  /** Writes a global document under a fixed id (singletons, feed results). */
  #upsert(kind: string, id: string, doc: unknown): void {
    const { repo } = this.#deps;
    const now = this.#deps.clock.now();
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
}
