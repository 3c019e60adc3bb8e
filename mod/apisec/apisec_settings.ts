/**
 * The stored API-security settings (`GET`/`PUT /api/apisec/config`): one document holding the
 * `validation`, `auth` and `rate_limits` blocks, written in one transaction with its audit
 * record, then one policy rebuild, so a change reaches the data plane at once. The shared secret
 * of `auth` is sealed at rest (AES-GCM under the data directory's key) and never read back: a
 * read says only whether one is set.
 *
 * `waf.yaml` may carry the same blocks. The file seeds the store: at start, when the file's
 * blocks differ from what was last taken from the file, they replace those blocks in the store
 * (audited as `apisec.config.seed` by the system); otherwise the store, changed through the API,
 * stands. An operator who edits the file therefore sees the edit applied at the next start, and
 * an API change is not undone by every restart.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { AuditContext, PolicyObjects } from "../protection/policy_objects.ts";
import { parseStored } from "../protection/protection_schema.ts";
import { AppError, badRequest } from "../core/errors.ts";
import type { SecretBox } from "../core/secret_box.ts";
import {
  type ApiSecConfigDoc,
  type ApiSecConfigInput,
  apisecConfigSchema,
  apisecStoredSchema,
  type AuthDoc,
  authProblems,
  type SchemaEntry,
} from "./apisec_schema.ts";
import { parseJwks } from "./jwt.ts";

export const APISEC_KIND = "apisec_config";
/** The hash of the file's blocks last written to the store. */
const SEED_KIND = "apisec_file_seed";
const SYSTEM: AuditContext = { actor: { type: "system" } };
/** Additional data binding the sealed secret to its purpose. */
export const SECRET_OWNER = "apisec.auth.secret";
const encoder = new TextEncoder();

/** The blocks of `waf.yaml`'s `apisec` section that the store also keeps (each optional). */
export type ApiSecFileBlocks = Partial<ApiSecConfigInput>;

/** The settings as the API answers them: the secret replaced by whether one is set. */
export type ApiSecConfigView = Omit<ApiSecConfigDoc, "auth"> & {
  readonly auth: Omit<AuthDoc, "secret_sealed"> & { readonly secret_set: boolean };
};

export interface ApiSecSettingsDeps {
  readonly objects: PolicyObjects;
  readonly siteExists: (id: string) => boolean;
  readonly box: SecretBox;
}

function bad(field: string, message: string): AppError {
  return badRequest(`Invalid field "${field}": ${message}`, field);
}

function siteIds(doc: ApiSecConfigDoc): Array<{ field: string; site: string }> {
  const out: Array<{ field: string; site: string }> = [];
  const add = (list: ReadonlyArray<{ site_id: string | null }>, at: string) =>
    list.forEach((e, i) => {
      if (e.site_id !== null) out.push({ field: `${at}[${i}].site_id`, site: e.site_id });
    });
  add(doc.validation.schemas, "validation.schemas");
  add(doc.auth.routes, "auth.routes");
  add(doc.rate_limits, "rate_limits");
  return out;
}

/** Key files are read when written, so a wrong path is refused now rather than failing tokens. */
function checkKeyFiles(a: AuthDoc): void {
  if (a.pem_file !== null) {
    let text = "";
    try {
      text = Deno.readTextFileSync(a.pem_file);
    } catch (err) {
      throw bad("auth.pem_file", `cannot read "${a.pem_file}": ${(err as Error).message}`);
    }
    if (!/-----BEGIN [A-Z ]+-----/.test(text)) {
      throw bad("auth.pem_file", `"${a.pem_file}" holds no PEM public key or certificate`);
    }
  }
  if (a.jwks_file !== null) {
    let text = "";
    try {
      text = Deno.readTextFileSync(a.jwks_file);
    } catch (err) {
      throw bad("auth.jwks_file", `cannot read "${a.jwks_file}": ${(err as Error).message}`);
    }
    if (parseJwks(text) === undefined) {
      throw bad("auth.jwks_file", `"${a.jwks_file}" is not a JWKS document ({"keys": [...]})`);
    }
  }
}

/** What the audit record says about a change (counts and switches, never secrets). */
function summary(doc: ApiSecConfigDoc, secretChanged: boolean): Record<string, unknown> {
  return {
    validation: { enabled: doc.validation.enabled, schemas: doc.validation.schemas.length },
    auth: {
      enabled: doc.auth.enabled,
      routes: doc.auth.routes.length,
      algorithms: doc.auth.algorithms,
      secret_changed: secretChanged,
    },
    rate_limits: doc.rate_limits.length,
  };
}

export function createApiSecSettings(deps: ApiSecSettingsDeps) {
  const { objects, box } = deps;

  function stored(): ApiSecConfigDoc {
    return parseStored(apisecStoredSchema, objects.singleton(APISEC_KIND));
  }

  function view(doc: ApiSecConfigDoc): ApiSecConfigView {
    const { secret_sealed, ...auth } = doc.auth;
    return { ...doc, auth: { ...auth, secret_set: secret_sealed !== null } };
  }

  /** The input with its secret sealed (omitted: the stored one stays; "": cleared). */
  async function toStored(
    input: ApiSecConfigInput,
  ): Promise<{ doc: ApiSecConfigDoc; secretChanged: boolean }> {
    const { secret, secret_set: _ignored, ...auth } = input.auth;
    let sealed = stored().auth.secret_sealed;
    if (secret === "") sealed = null;
    else if (secret !== undefined) sealed = await box.seal(encoder.encode(secret), SECRET_OWNER);
    const doc = { ...input, auth: { ...auth, secret_sealed: sealed } };
    for (const { field, site } of siteIds(doc)) {
      if (!deps.siteExists(site)) throw bad(field, `no site "${site}"`);
    }
    const problem = authProblems(doc.auth, sealed !== null)[0];
    if (problem) throw bad(`auth.${problem.field}`, problem.message);
    checkKeyFiles(doc.auth);
    return { doc, secretChanged: secret !== undefined };
  }

  /** True when `secret` is the stored (sealed) one. */
  async function sameSecret(secret: string): Promise<boolean> {
    const sealed = stored().auth.secret_sealed;
    if (sealed === null) return false;
    const plain = await box.open(sealed, SECRET_OWNER).catch(() => undefined);
    const given = encoder.encode(secret);
    return plain !== undefined && plain.length === given.length && timingSafeEqual(plain, given);
  }

  return {
    get: (): ApiSecConfigView => view(stored()),

    /** Replaces the settings (validated by the caller's schema), audited, then rebuilds. */
    async put(
      input: ApiSecConfigInput,
      ctx: AuditContext,
      auditName = "apisec.config",
    ): Promise<ApiSecConfigView> {
      const { doc, secretChanged } = await toStored(input);
      objects.putSingleton(
        { kind: APISEC_KIND, audit: auditName },
        doc,
        ctx,
        summary(doc, secretChanged),
      );
      return view(doc);
    },

    /**
     * Adds schema entries (an OpenAPI import): `merge` replaces entries of the same id and keeps
     * the others, `replace` drops every existing entry. Audited as `apisec.openapi.update`.
     */
    async addSchemas(
      entries: readonly SchemaEntry[],
      mode: "merge" | "replace",
      ctx: AuditContext,
    ): Promise<ApiSecConfigView> {
      const current = view(stored());
      const ids = new Set(entries.map((e) => e.id));
      const schemas = mode === "replace"
        ? entries
        : [...current.validation.schemas.filter((e) => !ids.has(e.id)), ...entries];
      const { secret_set: _set, ...auth } = current.auth;
      const parsed = apisecConfigSchema.safeParse({
        ...current,
        auth,
        validation: { ...current.validation, schemas },
      });
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw bad(issue.path.map(String).join("."), issue.message);
      }
      return await this.put(parsed.data, ctx, "apisec.openapi");
    },

    /**
     * Applies the file's blocks when they changed since they were last applied. The secret is
     * compared with the stored one, never hashed into the store.
     *
     * @returns whether the store was written
     */
    async seed(file: ApiSecFileBlocks): Promise<boolean> {
      const present = Object.fromEntries(
        Object.entries(file).filter(([, v]) => v !== undefined),
      ) as ApiSecFileBlocks;
      if (Object.keys(present).length === 0) return false;
      const secret = present.auth?.secret;
      const hashed = present.auth === undefined
        ? present
        : { ...present, auth: { ...present.auth, secret: secret === undefined ? null : "set" } };
      const hash = createHash("sha256").update(JSON.stringify(hashed)).digest("hex");
      const sameFile = objects.singletonOf(SEED_KIND, SEED_KIND) === JSON.stringify({ hash });
      if (sameFile && (secret === undefined || await sameSecret(secret))) return false;
      const current = view(stored());
      const { secret_set: _set, ...currentAuth } = current.auth;
      const input = apisecConfigSchema.parse({
        ...current,
        auth: currentAuth,
        ...present,
      });
      const { doc, secretChanged } = await toStored(input);
      objects.putSingleton(
        { kind: APISEC_KIND, audit: "apisec.config.seed" },
        doc,
        SYSTEM,
        summary(doc, secretChanged),
      );
      objects.putInternal(SEED_KIND, SEED_KIND, { hash });
      return true;
    },
  };
}

export type ApiSecSettings = ReturnType<typeof createApiSecSettings>;
