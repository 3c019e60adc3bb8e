/**
 * The production profile's coordinator on PostgreSQL, with a client of its own (at most two
 * connections: one held by LISTEN, one for the heartbeat and the leases), apart from the
 * store's pool so a busy store never delays a heartbeat.
 *
 * - Change feed: LISTEN `waf_store_changes`; every notice another controller's store sends
 *   (`{"controller": "...", "schema": "...", "tables": [...]}`) reaches the listeners; this
 *   controller's own notices, and those of another schema of the database, are ignored. After
 *   the LISTEN connection is lost and made again, the listeners are told "anything changed"
 *   (`null`): notices sent meanwhile are lost.
 * - Realtime relay: LISTEN `waf_realtime_events`; a controller's deployment-wide realtime events
 *   (`{"controller", "schema", "kind", "time", "site", "data"}`) reach the other controllers of
 *   the same schema, never itself. An event too large for a notice is not relayed.
 * - Leases: `task_leases`, one row per scheduled task, its holder renewing it with every
 *   heartbeat; a row not renewed for {@link STALE_MS} is taken by the next controller asking.
 * - Registry: `controllers`, one row per controller process, `last_seen_at` renewed every
 *   {@link HEARTBEAT_MS}; older than {@link STALE_MS} it is shown as not alive, and older than
 *   {@link FORGET_MS} the next heartbeat of any controller deletes it.
 */
import postgres from "postgres";
import { reconnectBackoff } from "../../db/pg/backoff.ts";
import { VERSION } from "../core/version.ts";
import {
  CHANGE_CHANNEL,
  type ChangeListener,
  type ControllerView,
  type Coordinator,
  EVENT_CHANNEL,
  FORGET_MS,
  HEARTBEAT_MS,
  type RelayedEvent,
  STALE_MS,
} from "./coordinator.ts";

export interface PgCoordinatorOptions {
  readonly dsn: string;
  /** The store's `controllerId`: its notices are this controller's own. */
  readonly controllerId: string;
  readonly connectTimeoutMs: number;
  /** The schema the deployment's tables live in (tests use one each); default `public`. */
  readonly schema?: string;
  readonly now: () => number;
  /** Told when the feed or the heartbeat fails (never with the DSN). */
  readonly warn?: (message: string, fields: Record<string, unknown>) => void;
  /** Runs the heartbeat on a timer (default true; tests drive {@link PgCoordinator.heartbeat}). */
  readonly timers?: boolean;
}

export interface PgCoordinator extends Coordinator {
  /** Writes the heartbeat and renews the leases held (the timer calls it). */
  heartbeat(): Promise<void>;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** PostgreSQL refuses a notice payload of 8000 bytes or more. */
const MAX_NOTICE_BYTES = 7_900;
const encoder = new TextEncoder();

const TABLES = [
  `CREATE TABLE IF NOT EXISTS controllers (
     id TEXT PRIMARY KEY, name TEXT, management_address TEXT, version TEXT,
     started_at BIGINT, last_seen_at BIGINT)`,
  `CREATE TABLE IF NOT EXISTS task_leases (
     task TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL)`,
];

export function createPgCoordinator(options: PgCoordinatorOptions): PgCoordinator {
  const schema = options.schema ?? "public";
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}`);
  const sql = postgres(options.dsn, {
    max: 2,
    backoff: reconnectBackoff,
    connect_timeout: Math.max(1, Math.ceil(options.connectTimeoutMs / 1000)),
    connection: {
      search_path: schema,
      application_name: `waf-coordinator ${options.controllerId}`.slice(0, 63),
    },
    onnotice: () => {},
  });
  const id = options.controllerId;
  const listeners: ChangeListener[] = [];
  const relayListeners: ((event: RelayedEvent) => void)[] = [];
  let self = { name: "", managementAddress: "" };
  let startedAt = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  let unlistenEvents: (() => Promise<void>) | undefined;
  let listens = 0;
  const warn = (message: string, err: unknown) =>
    options.warn?.(message, { error: err instanceof Error ? err.message : String(err) });
  const tell = (tables: readonly string[] | null) => {
    for (const l of listeners) {
      try {
        l(tables);
      } catch (err) {
        warn("change listener failed", err);
      }
    }
  };
  const onNotice = (payload: string) => {
    let notice: { controller?: unknown; schema?: unknown; tables?: unknown };
    try {
      notice = JSON.parse(payload);
    } catch {
      tell(null);
      return;
    }
    if (notice.controller === id) return;
    // NOTIFY channels are database-wide: a notice of another schema is another deployment's.
    if (typeof notice.schema === "string" && notice.schema !== schema) return;
    tell(Array.isArray(notice.tables) ? notice.tables.map(String) : null);
  };
  const onEvent = (payload: string) => {
    let e: { controller?: unknown; schema?: unknown } & Partial<RelayedEvent>;
    try {
      e = JSON.parse(payload);
    } catch {
      return;
    }
    // NOTIFY channels are database-wide: another deployment's schema may share the database.
    if (e.schema !== schema || e.controller === id) return;
    if (typeof e.kind !== "string" || typeof e.data !== "string") return;
    const event: RelayedEvent = {
      kind: e.kind,
      time: Number(e.time),
      site: e.site ?? null,
      data: e.data,
    };
    for (const l of relayListeners) {
      try {
        l(event);
      } catch (err) {
        warn("realtime relay listener failed", err);
      }
    }
  };
  const heartbeat = async () => {
    const now = options.now();
    await sql`
      INSERT INTO controllers (id, name, management_address, version, started_at, last_seen_at)
      VALUES (${id}, ${self.name}, ${self.managementAddress}, ${VERSION}, ${startedAt}, ${now})
      ON CONFLICT (id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at,
        name = EXCLUDED.name, management_address = EXCLUDED.management_address`;
    await sql`UPDATE task_leases SET expires_at = ${now + STALE_MS} WHERE holder = ${id}`;
    await sql`DELETE FROM controllers WHERE last_seen_at <= ${now - FORGET_MS}`;
  };
  return {
    profile: "production",
    controllerId: id,
    async start(s) {
      self = { name: s.name, managementAddress: s.managementAddress };
      startedAt = options.now();
      for (const ddl of TABLES) await sql.unsafe(ddl);
      await heartbeat();
      const listening = await sql.listen(CHANGE_CHANNEL, onNotice, () => {
        // Called on every (re)connection of the LISTEN connection: after the first, notices
        // may have been missed while it was down.
        if (listens++ > 0) tell(null);
      });
      unlisten = listening.unlisten;
      unlistenEvents = (await sql.listen(EVENT_CHANNEL, onEvent)).unlisten;
      if (options.timers ?? true) {
        timer = setInterval(
          () => heartbeat().catch((err) => warn("heartbeat failed", err)),
          HEARTBEAT_MS,
        );
        Deno.unrefTimer(timer);
      }
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await unlisten?.().catch(() => {});
      await unlistenEvents?.().catch(() => {});
      await sql`DELETE FROM task_leases WHERE holder = ${id}`.catch(() => {});
      await sql.end({ timeout: 2 });
    },
    onChange(listener) {
      listeners.push(listener);
    },
    relay(event) {
      const payload = JSON.stringify({ controller: id, schema, ...event });
      if (encoder.encode(payload).length > MAX_NOTICE_BYTES) return;
      sql`SELECT pg_notify(${EVENT_CHANNEL}, ${payload})`.catch((err) =>
        warn("realtime relay failed", err)
      );
    },
    onRelay(listener) {
      relayListeners.push(listener);
    },
    async acquire(task) {
      const now = options.now();
      const rows = await sql`
        INSERT INTO task_leases (task, holder, expires_at) VALUES (${task}, ${id}, ${
        now + STALE_MS
      })
        ON CONFLICT (task) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
        WHERE task_leases.holder = EXCLUDED.holder OR task_leases.expires_at <= ${now}
        RETURNING holder`;
      return rows.length === 1;
    },
    async controllers(): Promise<ControllerView[]> {
      const now = options.now();
      const rows = await sql<
        {
          id: string;
          name: string | null;
          management_address: string | null;
          version: string | null;
          started_at: string | null;
          last_seen_at: string | null;
        }[]
      >`SELECT id, name, management_address, version, started_at, last_seen_at
        FROM controllers ORDER BY started_at, id`;
      const leases = await sql<{ task: string; holder: string }[]>`
        SELECT task, holder FROM task_leases WHERE expires_at > ${now} ORDER BY task`;
      return rows.map((r) => {
        const lastSeen = Number(r.last_seen_at ?? 0);
        return {
          id: r.id,
          name: r.name ?? "",
          management_address: r.management_address ?? "",
          version: r.version ?? "",
          started_at: Number(r.started_at ?? 0),
          last_seen_at: lastSeen,
          alive: now - lastSeen < STALE_MS,
          self: r.id === id,
          tasks: leases.filter((l) => l.holder === r.id).map((l) => l.task),
        };
      });
    },
    heartbeat,
  };
}
