/**
 * The `waf.yaml` schema: deployment settings validated with zod at start-up.
 * Every object is strict, so an unknown key stops the process with its path.
 */
import { z } from "zod";
import { DURATION_HELP } from "../core/duration.ts";
import { apisecFileBlocks } from "../apisec/apisec_schema.ts";

const LISTEN = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/;

/** Splits `host:port` / `[v6]:port`; undefined when malformed or the port is out of range. */
export function parseListen(value: string): { hostname: string; port: number } | undefined {
  const m = LISTEN.exec(value);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { hostname: (m[1] ?? m[2])!, port };
}

const listen = (fallback: string) =>
  z.string().refine((v) => parseListen(v) !== undefined, {
    message: 'expected "host:port" with a port from 0 to 65535, for example "127.0.0.1:9443"',
  }).default(fallback);

export { DURATION_HELP };

/** The most data-plane workers `server.data.workers` allows (and `auto` picks). */
export const MAX_DATA_WORKERS = 32;
const WORKERS_HELP = `expected "auto" or a whole number from 1 to ${MAX_DATA_WORKERS}`;

/** The worker count `server.data.workers` means on this machine. */
export function dataWorkerCount(setting: "auto" | number, cores: number): number {
  return setting === "auto" ? Math.max(1, Math.min(MAX_DATA_WORKERS, cores)) : setting;
}

const duration = (fallback: string) =>
  z.string({ error: `expected a duration: ${DURATION_HELP}` }).regex(/^\d+(ms|s|m|h|d)$/, {
    error: (issue) => `expected a duration: ${DURATION_HELP}; got ${JSON.stringify(issue.input)}`,
  }).default(fallback);

/** `*`, `family:*` or `family:name` (lower-case letters and underscores). */
export const PERMISSION_EXPRESSION = /^(\*|[a-z_]+:\*|[a-z_]+:[a-z_]+)$/;

/** Role names: ASCII letters, digits, `.`, `_`, `-`; never `*`, `/`, `:` or whitespace. */
export const ROLE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const tls = z.union([
  z.enum(["off", "auto"]),
  z.strictObject({
    cert_file: z.string().min(1, "expected the path of a PEM certificate file"),
    key_file: z.string().min(1, "expected the path of a PEM private key file"),
  }),
], { error: 'expected "off", "auto" or { cert_file, key_file }' });

/**
 * Connection limits of one listener (its connection front, net/conn_front.ts); the defaults
 * are nginx's (`client_header_timeout`, `client_body_timeout`, `keepalive_timeout`), the caps
 * `limit_conn`-like.
 */
const connectionLimits = (caps: { total: number; perClient: number }) =>
  z.strictObject({
    /** Off: `Deno.serve` takes the port itself, with none of these limits (benchmarks only). */
    enabled: z.boolean().default(true),
    /** The whole request head must arrive within this time of its first byte. */
    header_timeout: duration("60s"),
    /** Longest pause between two reads of a request body. */
    body_timeout: duration("60s"),
    /**
     * The least average rate of a request body, bytes a second of the client's time, once
     * `body_min_rate_after` of it passed (Apache's mod_reqtimeout `MinRate`); 0 = none.
     */
    body_min_rate: z.number().int().min(0).max(1_000_000_000).default(500),
    body_min_rate_after: duration("10s"),
    /** How long a connection may stay silent between requests. */
    keepalive_timeout: duration("75s"),
    /** Open connections on the listener (the descriptor limit may lower it); 0 = that bound only. */
    max_connections: z.number().int().min(0).max(1_000_000).default(caps.total),
    /** Open connections from one client (an IPv4 address, an IPv6 /64); 0 = no cap. */
    max_connections_per_client: z.number().int().min(0).max(1_000_000).default(caps.perClient),
  }).prefault({});

export const configSchema = z.strictObject({
  data_dir: z.string().min(1).optional(),
  server: z.strictObject({
    data: z.strictObject({
      listen: listen("0.0.0.0:8080"),
      /** HTTPS data listener (a certificate per site by SNI); unset = no HTTPS listener. */
      https_listen: z.string().refine((v) => parseListen(v) !== undefined, {
        message: 'expected "host:port" with a port from 0 to 65535, for example "0.0.0.0:8443"',
      }).optional(),
      /**
       * Data-plane worker threads sharing the listeners (`reusePort`): `auto` = one per
       * available core (at most 32), or a number; 1 runs the data plane on the main thread.
       */
      workers: z.union([
        z.literal("auto"),
        z.number().int(WORKERS_HELP).min(1, WORKERS_HELP).max(MAX_DATA_WORKERS, WORKERS_HELP),
      ], { error: WORKERS_HELP }).default("auto"),
      limits: connectionLimits({ total: 10_000, perClient: 256 }),
    }).prefault({}),
    management: z.strictObject({
      listen: listen("127.0.0.1:9443"),
      tls: tls.default("off"),
      /** Public base URL of the console, used in the setup link; derived from listen when empty. */
      base_url: z.string().url().optional(),
      limits: connectionLimits({ total: 1_000, perClient: 64 }),
    }).prefault({}),
    shutdown_timeout: duration("10s"),
  }).prefault({}),
  storage: z.strictObject({
    profile: z.enum(["temporary", "production"]).default("temporary"),
    /** The production profile's dependencies (specification 1.8); read only when chosen. */
    production: z.strictObject({
      /** The management store: every controller of the deployment names the same database. */
      postgresql: z.strictObject({
        dsn: z.string().regex(
          /^postgres(ql)?:\/\//,
          'expected a DSN such as "postgres://waf@db.internal:5432/waf"',
        ),
        pool_size: z.number().int().min(1).max(100).default(10),
        /** A connection attempt that takes longer fails (at start-up: start-up fails). */
        connect_timeout: duration("5s"),
        /** A statement without an answer by then fails (the store answers 503 meanwhile). */
        statement_timeout: duration("10s"),
        /** The PostgreSQL schema holding the store (tests give each run its own). */
        schema: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, "expected a lower-case SQL name")
          .default("public"),
      }).optional(),
      /** The deployment's sealing and signing keys; the same file on every controller. */
      secrets_file: z.string().min(1, "expected the path of the deployment key file").optional(),
    }).optional(),
    postgresql: z.strictObject({
      dsn: z.string().regex(
        /^postgres(ql)?:\/\//,
        'expected a DSN such as "postgres://user@host:5432/db"',
      ),
      pool_size: z.number().int().min(1).max(100).default(4),
      batch_size: z.number().int().min(1).max(10000).default(500),
      /** A connection attempt that takes longer fails (then retried with back-off). */
      connect_timeout: duration("5s"),
      /** An insert without an answer by then fails and its connections are dropped. */
      insert_timeout: duration("10s"),
    }).optional(),
    redis: z.strictObject({
      url: z.string().regex(/^rediss?:\/\//, 'expected a URL such as "redis://127.0.0.1:6379"'),
    }).optional(),
    access_logs: z.strictObject({
      retention_days: z.number().int().min(1).max(3650).default(30),
      max_records: z.number().int().min(1000).default(1_000_000),
      queue_size: z.number().int().min(100).max(1_000_000).default(10_000),
      batch_size: z.number().int().min(1).max(10_000).default(500),
    }).prefault({}),
  }).prefault({}),
  logging: z.strictObject({
    level: z.enum(["debug", "info", "warn", "error"]).default("info"),
    format: z.enum(["text", "json"]).default("text"),
  }).prefault({}),
  protection: z.strictObject({
    bot: z.strictObject({
      challenge_backend: z.literal("memory", {
        error:
          'expected "memory": challenge state stays in process memory; "redis" is not supported',
      }).default("memory"),
    }).prefault({}),
    geoip: z.strictObject({
      /** CSV of `network,country_code` lines; enables the ACL country condition. */
      file: z.string().min(1).optional(),
    }).prefault({}),
  }).prefault({}),
  apisec: z.strictObject({
    permissions: z.record(
      z.string().regex(ROLE_NAME, "expected a role name of ASCII letters, digits, '.', '_' or '-'"),
      z.array(
        z.string().regex(PERMISSION_EXPRESSION, 'expected "*", "family:*" or "family:name"'),
      ),
    ).default({ admin: ["*"], readonly: ["read:*", "read:cluster"] }),
    management_api: z.strictObject({
      enabled: z.boolean().default(false),
    }).prefault({}),
    /** Seed the store's API-security settings (docs/api-security.md); the API manages them. */
    ...apisecFileBlocks,
  }).prefault({}),
  monitor: z.strictObject({
    prometheus: z.strictObject({
      enabled: z.boolean().default(true),
      /** Served on the management listener, outside /api. */
      path: z.string().regex(/^\/[A-Za-z0-9._~-][A-Za-z0-9._~/-]*$/, {
        message: 'expected a path such as "/metrics"',
      }).refine((v) => !/^\/(api|health|console|setup|login)(\/|$)/.test(v), {
        message: "expected a path outside /api, /health, /console, /setup and /login",
      }).default("/metrics"),
      /** Without credentials (specification 4.1); otherwise `read:monitor`. */
      public: z.boolean().default(false),
    }).prefault({}),
    alerts: z.strictObject({
      /** Blocked requests in one minute (all sites) that raise an `attack.spike` notification. */
      attack_spike_per_minute: z.number().int().min(1).default(100),
      /** Days before a site certificate expires that raise `certificate.expiring`. */
      certificate_days: z.number().int().min(1).max(365).default(14),
    }).prefault({}),
    realtime: z.strictObject({
      /** Comment (SSE) or heartbeat message (WebSocket) sent when nothing else was. */
      heartbeat: duration("15s"),
    }).prefault({}),
  }).prefault({}),
  time: z.strictObject({
    /** SNTP servers: "host" or "host:port" (port 123 by default), "[v6]:port". */
    servers: z.array(
      z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$|^[0-9a-fA-F:]+$/, {
        message: 'expected "host" or "host:port", for example "pool.ntp.org" or "10.0.0.1:123"',
      }),
    ).default([]),
    /** Add the measured offset to the clock of TOTP, JWT checks and cluster heartbeats. */
    apply_offset: z.boolean().default(false),
    /** An offset above this raises a `time.offset` notification and the metric. */
    max_offset: duration("1s"),
    /** How often the active server is measured. */
    sync_interval: duration("15m"),
    /** How long to wait for one server's answer. */
    query_timeout: duration("2s"),
  }).prefault({}),
  update: z.strictObject({
    ota: z.strictObject({
      enabled: z.boolean().default(false),
      server: z.string().default(""),
      channel: z.enum(["stable", "beta"]).default("stable"),
      check_interval: duration("6h"),
      auto_update_rules: z.boolean().default(true),
      auto_update_binary: z.boolean().default(false),
      verify_signature: z.boolean().default(true),
      public_keys: z.array(z.string()).default([]),
    }).prefault({}),
  }).prefault({}),
  /** One controller and many data-plane nodes (docs/cluster.md). */
  cluster: z.strictObject({
    /** `controller` (the default; standalone while no node joined) or `node`. */
    role: z.enum(["controller", "node"]).default("controller"),
    /** Controller: the mTLS listener nodes join and report to; unset = no node can connect. */
    listen: z.string().refine((v) => parseListen(v) !== undefined, {
      message: 'expected "host:port" with a port from 0 to 65535, for example "0.0.0.0:9444"',
    }).optional(),
    /** Controller: extra DNS names or IP addresses in the cluster listener's certificate. */
    server_names: z.array(
      z.string().regex(/^[A-Za-z0-9.:-]+$/, "expected a DNS name or an IP address"),
    ).default([]),
    /** Controller: a node silent for this long is `offline` (half of it: `stale`). */
    offline_after: duration("30s"),
    /** Node: the controller's cluster listener, e.g. "https://controller.example:9444". */
    controller_url: z.string().regex(/^https:\/\/[^/?#\s]+$/, {
      message: 'expected "https://host:port" of the controller\'s cluster listener',
    }).optional(),
    /** Node: the one-time join token (also `--join-token` or WAF_CLUSTER_JOIN_TOKEN). */
    join_token: z.string().min(1).optional(),
    /** Node: its display name (default: the host name). */
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
      message: "expected 1 to 64 ASCII letters, digits, '.', '_' or '-'",
    }).optional(),
    /** Node: how often it reports to the controller. */
    heartbeat_interval: duration("5s"),
  }).prefault({}),
  /** Offline content packages (`waf crp`): Ed25519 public keys trusted to sign them. */
  crp: z.strictObject({
    public_keys: z.array(
      z.string().regex(
        /^(ed25519:)?[A-Za-z0-9+/]{43}=$|^-----BEGIN PUBLIC KEY-----[A-Za-z0-9+/=\s]+-----END PUBLIC KEY-----\s*$/,
        'expected an Ed25519 public key: base64 of 32 bytes (optionally "ed25519:" first) or a PEM "PUBLIC KEY"',
      ),
    ).default([]),
  }).prefault({}),
});

export type Config = z.infer<typeof configSchema>;
