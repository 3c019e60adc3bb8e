/**
 * The PostgreSQL access-log sink's run-time configuration (`PUT /api/storage/sink`): one settings
 * row (`storage.pg_sink`) that, once written, replaces `storage.postgresql` of `waf.yaml` (which
 * stays the default; `reset` goes back to it). The DSN is sealed with the data directory's key
 * (like TOTP secrets) and never returned whole: reads show it with the password masked. A change
 * that leaves the sink enabled is tested first (`SELECT version()` over the new DSN); a failed
 * test changes nothing. The running shipper is then replaced: the new one continues from the
 * persisted cursor, so disabling and enabling again catches up with what retention still holds.
 */
import { z } from "zod";
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError, badRequest } from "../core/errors.ts";
import { maskUrlPassword } from "../core/redact.ts";
import type { SecretBox } from "../core/secret_box.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

const SETTINGS_KEY = "storage.pg_sink";
/** Additional data binding the sealed DSN to its purpose. */
const DSN_OWNER = "storage.pg_sink.dsn";

/** What a running shipper needs. */
export interface PgSinkSettings {
  readonly dsn: string;
  readonly pool_size: number;
  readonly batch_size: number;
  readonly connect_timeout_ms: number;
  readonly insert_timeout_ms: number;
}

const dsn = z.string().max(4096).regex(
  /^postgres(ql)?:\/\//,
  'expected a DSN such as "postgres://user:password@host:5432/db"',
).refine((v) => !v.includes("***"), {
  message: "looks like the masked DSN, not a DSN: omit dsn to keep the stored one",
});

/** `PUT /api/storage/sink`: every field optional; omitted fields keep their value. */
export const pgSinkInputSchema = z.strictObject({
  enabled: z.boolean().optional(),
  dsn: dsn.optional(),
  pool_size: z.number().int().min(1).max(100).optional(),
  batch_size: z.number().int().min(1).max(10_000).optional(),
  connect_timeout_ms: z.number().int().min(100).max(120_000).optional(),
  insert_timeout_ms: z.number().int().min(100).max(600_000).optional(),
  /** Test the connection before applying an enabled sink (default true). */
  test: z.boolean().optional(),
  /** Forget the run-time configuration: `storage.postgresql` of waf.yaml applies again. */
  reset: z.literal(true).optional(),
}).refine((v) => v.reset === undefined || Object.keys(v).length === 1, {
  message: "reset: true takes no other field",
  path: ["reset"],
});
export type PgSinkInput = z.infer<typeof pgSinkInputSchema>;

interface Stored {
  readonly enabled: boolean;
  readonly dsn_sealed: string | null;
  readonly dsn_masked: string | null;
  readonly pool_size: number;
  readonly batch_size: number;
  readonly connect_timeout_ms: number;
  readonly insert_timeout_ms: number;
}

/** What `GET /api/storage` shows under `sink` and the PUT answers. */
export interface PgSinkView {
  /** `api`: the stored configuration; `file`: waf.yaml's `storage.postgresql`; `none`. */
  readonly source: "api" | "file" | "none";
  readonly enabled: boolean;
  /** The DSN with its password masked, or null. */
  readonly dsn: string | null;
  readonly pool_size: number;
  readonly batch_size: number;
  readonly connect_timeout_ms: number;
  readonly insert_timeout_ms: number;
}

export interface PgSinkTest {
  readonly ok: boolean;
  readonly version: string | null;
  readonly latency_ms: number | null;
  readonly error: string | null;
}

export interface PgSinkConfigDeps {
  readonly settings: SettingsRepo;
  readonly box: SecretBox;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
  /** `storage.postgresql` of waf.yaml, when set. */
  readonly file: PgSinkSettings | undefined;
  /** Connects with `settings` and answers `SELECT version()`; rejects with the exact error. */
  readonly probe: (settings: PgSinkSettings) => Promise<string>;
  /** Replaces the running shipper (null: none). */
  readonly apply: (settings: PgSinkSettings | null) => Promise<void>;
}

const DEFAULTS = {
  pool_size: 4,
  batch_size: 500,
  connect_timeout_ms: 5_000,
  insert_timeout_ms: 10_000,
};

/** Connects with `settings` through `probe`: the server's version and how long it took, or why not. */
async function testSink(
  probe: PgSinkConfigDeps["probe"],
  settings: PgSinkSettings,
): Promise<PgSinkTest> {
  const started = performance.now();
  try {
    const version = await probe(settings);
    return {
      ok: true,
      version,
      latency_ms: Math.round((performance.now() - started) * 100) / 100,
      error: null,
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // The driver may echo the DSN: never let its password out.
    return {
      ok: false,
      version: null,
      latency_ms: null,
      error: message.replaceAll(settings.dsn, maskUrlPassword(settings.dsn)),
    };
  }
}

/** The settings an update asks for: each field given, else as before. */
function nextSettings(input: PgSinkInput, before: PgSinkView, dsn: string | null): PgSinkSettings {
  return {
    dsn: dsn ?? "",
    pool_size: input.pool_size ?? before.pool_size,
    batch_size: input.batch_size ?? before.batch_size,
    connect_timeout_ms: input.connect_timeout_ms ?? before.connect_timeout_ms,
    insert_timeout_ms: input.insert_timeout_ms ?? before.insert_timeout_ms,
  };
}

/** The settings row: the DSN sealed for its purpose and masked for reads. */
async function storedRow(
  box: SecretBox,
  enabled: boolean,
  dsn: string | null,
  next: PgSinkSettings,
): Promise<Stored> {
  return {
    enabled,
    dsn_sealed: dsn === null ? null : await box.seal(new TextEncoder().encode(dsn), DSN_OWNER),
    dsn_masked: dsn === null ? null : maskUrlPassword(dsn),
    pool_size: next.pool_size,
    batch_size: next.batch_size,
    connect_timeout_ms: next.connect_timeout_ms,
    insert_timeout_ms: next.insert_timeout_ms,
  };
}

/**
 * The PostgreSQL sink's configuration: its view, the settings in force, and updates (tested,
 * sealed, audited, then applied to the running shipper).
 *
 * @example
 * ```ts
 * const config = createPgSinkConfig({ settings, box, audit, clock, transaction, file, probe, apply });
 * await config.start(); // the stored configuration, when there is one, replaces the file's
 * await config.update({ enabled: true, dsn: "postgres://waf:pw@db:5432/waf" }, ctx);
 * config.view().dsn; // "postgres://waf:***@db:5432/waf"
 * ```
 */
export function createPgSinkConfig(deps: PgSinkConfigDeps) {
  const stored = () => deps.settings.get(SETTINGS_KEY) as Stored | undefined;

  const view = (): PgSinkView => {
    const s = stored();
    if (s !== undefined) {
      const { dsn_sealed: _, dsn_masked, ...rest } = s;
      return { source: "api", ...rest, dsn: dsn_masked };
    }
    if (deps.file !== undefined) {
      return { source: "file", enabled: true, ...deps.file, dsn: maskUrlPassword(deps.file.dsn) };
    }
    return { source: "none", enabled: false, dsn: null, ...DEFAULTS };
  };

  async function openDsn(s: Stored): Promise<string> {
    try {
      return new TextDecoder().decode(await deps.box.open(s.dsn_sealed!, DSN_OWNER));
    } catch (err) {
      throw new AppError(
        500,
        "SINK_DSN_UNREADABLE",
        "The stored PostgreSQL DSN cannot be opened (the data directory's key changed): set dsn again",
        { cause: err },
      );
    }
  }

  /** The configuration in force (stored, else the file's), or null when no sink runs. */
  async function effective(): Promise<PgSinkSettings | null> {
    const s = stored();
    if (s === undefined) return deps.file ?? null;
    if (!s.enabled || s.dsn_sealed === null) return null;
    const { enabled: _e, dsn_sealed: _d, dsn_masked: _m, ...rest } = s;
    return { ...rest, dsn: await openDsn(s) };
  }

  return {
    view,
    effective,
    /** Applies the stored configuration at start (the file's is applied by the data plane). */
    async start(): Promise<void> {
      if (stored() !== undefined) await deps.apply(await effective());
    },
    /** True when a stored configuration replaces the file's (the data plane then waits for it). */
    overridden: () => stored() !== undefined,

    async update(
      input: PgSinkInput,
      ctx: AuditContext,
    ): Promise<{ sink: PgSinkView; test: PgSinkTest | null }> {
      // Refusals are audited by the route (`auditFailures`), successes here.
      const audit = (result: "success", detail: Record<string, unknown>) =>
        deps.transaction(() =>
          deps.audit.record({
            ...ctx,
            action: "storage.sink.update",
            target: "storage:sink",
            result,
            detail,
          })
        );
      if (input.reset) {
        deps.transaction(() => {
          deps.settings.delete(SETTINGS_KEY);
        });
        audit("success", { reset: true });
        await deps.apply(deps.file ?? null);
        return { sink: view(), test: null };
      }
      const before = view();
      const prior = stored();
      let plainDsn: string | null;
      if (input.dsn !== undefined) plainDsn = input.dsn;
      else if (prior !== undefined) {
        plainDsn = prior.dsn_sealed === null ? null : await openDsn(prior);
      } else plainDsn = deps.file?.dsn ?? null;
      const enabled = input.enabled ?? before.enabled;
      const next = nextSettings(input, before, plainDsn);
      const changed = Object.keys(input).filter((k) => k !== "dsn" && k !== "test");
      const dsnDetail = input.dsn === undefined ? "kept" : "replaced";
      if (enabled && plainDsn === null) {
        throw badRequest('Invalid field "dsn": required to enable the sink', "dsn");
      }
      let result: PgSinkTest | null = null;
      if (enabled && input.test !== false) {
        result = await testSink(deps.probe, next);
        if (!result.ok) {
          throw new AppError(
            422,
            "SINK_TEST_FAILED",
            `The PostgreSQL sink was not changed: the test connection failed: ${result.error}`,
            { details: { test: result } },
          );
        }
      }
      const row = await storedRow(deps.box, enabled, plainDsn, next);
      deps.transaction(() => deps.settings.set(SETTINGS_KEY, row, deps.clock.now()));
      audit("success", {
        changed,
        enabled,
        dsn: dsnDetail,
        endpoint: row.dsn_masked,
        tested: result !== null,
      });
      await deps.apply(enabled ? next : null);
      return { sink: view(), test: result };
    },
  };
}

export type PgSinkConfig = ReturnType<typeof createPgSinkConfig>;
