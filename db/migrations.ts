/**
 * Ordered schema migrations of the management store. Each runs once, inside a transaction,
 * and is recorded in `schema_migrations`. Migrations never trim, lowercase, merge or rewrite
 * accounts: usernames are copied byte for byte.
 */

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Refuses UPDATE and DELETE on an append-only table. */
function appendOnly(table: string): string {
  return `
CREATE TRIGGER ${table}_no_update BEFORE UPDATE ON ${table}
BEGIN SELECT RAISE(ABORT, '${table} is append-only'); END;
CREATE TRIGGER ${table}_no_delete BEFORE DELETE ON ${table}
BEGIN SELECT RAISE(ABORT, '${table} is append-only'); END;`;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "accounts, sessions, settings and the audit trail",
    sql: `
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  role TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE admin_sessions (
  id_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  revoked_at INTEGER,
  client_ip TEXT,
  user_agent TEXT
);
CREATE INDEX admin_sessions_user ON admin_sessions(user_id);
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time INTEGER NOT NULL,
  actor_type TEXT NOT NULL,
  actor_id TEXT,
  actor_name TEXT,
  action TEXT NOT NULL,
  target TEXT,
  result TEXT NOT NULL,
  client_ip TEXT,
  trace_id TEXT,
  detail TEXT
);
CREATE INDEX audit_log_time ON audit_log(time);
CREATE INDEX audit_log_action ON audit_log(action, time);
${appendOnly("audit_log")}`,
  },
  {
    version: 2,
    name: "API tokens, notifications and two-factor secrets",
    sql: `
ALTER TABLE users ADD COLUMN totp_enabled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN totp_secret_enc TEXT;
ALTER TABLE users ADD COLUMN totp_last_step INTEGER;
CREATE TABLE api_tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL UNIQUE,
  note TEXT NOT NULL,
  permissions TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER,
  last_used_at INTEGER,
  last_used_ip TEXT
);
CREATE TABLE notifications (
  id TEXT PRIMARY KEY,
  time INTEGER NOT NULL,
  audience TEXT NOT NULL,
  level TEXT NOT NULL,
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  body TEXT NOT NULL,
  read_at INTEGER
);
CREATE INDEX notifications_time ON notifications(audience, time);`,
  },
  {
    version: 3,
    name: "sites, policy objects and access logs",
    sql: `
CREATE TABLE sites (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  config TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE policy_objects (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  site_id TEXT REFERENCES sites(id) ON DELETE CASCADE,
  position INTEGER NOT NULL DEFAULT 0,
  config TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX policy_objects_kind ON policy_objects(kind, site_id, position);
CREATE TABLE access_logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  trace_id TEXT NOT NULL UNIQUE,
  time INTEGER NOT NULL,
  site_id TEXT,
  client_ip TEXT,
  method TEXT,
  host TEXT,
  path TEXT,
  status INTEGER,
  action TEXT NOT NULL,
  attack_class TEXT,
  record TEXT NOT NULL
);
CREATE INDEX access_logs_time ON access_logs(time);
CREATE INDEX access_logs_site ON access_logs(site_id, time);
CREATE INDEX access_logs_client ON access_logs(client_ip, time);
CREATE INDEX access_logs_action ON access_logs(action, time);`,
  },
  {
    version: 4,
    name: "append-only username repair audit",
    sql: `
CREATE TABLE username_repairs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id TEXT NOT NULL,
  old_username TEXT NOT NULL,
  new_username TEXT NOT NULL,
  reason TEXT NOT NULL,
  os_user TEXT NOT NULL,
  revoked_sessions INTEGER NOT NULL,
  time INTEGER NOT NULL
);
${appendOnly("username_repairs")}`,
  },
  {
    version: 5,
    name:
      "credential epoch; unused access-log indexes dropped; notification read state per reader; AI assistant; aggregated authentication failures; monitoring rollups; notification channels and deliveries; cluster join tokens and nodes",
    // The access-log listing filters with "(:x IS NULL OR col = :x)", which SQLite's planner
    // cannot serve from the site, client and action indexes of version 3 (it walks the rowid,
    // newest first), while every access-log insert paid for three more B-tree updates. The time
    // index stays for retention, the trace_id one for lookups by trace id. (A development build
    // had this as a version 6; nothing was released, so it lives here.) Marking a notification
    // read changes only the reader's own inbox, which is why `read:monitor` may do it. The AI
    // assistant's tables joined before any release too: conversations and their messages belong
    // to one principal; approvals hold the exact change a high-risk tool proposed and survive
    // their conversation. Refused anonymous authentications are aggregated into one audit record
    // per client, username and window (`retention = 'auth_failure'`): only such a record's count,
    // detail and latest trace id may change, and only such records may be deleted (by
    // retention); administrative changes and repairs stay append-only forever. Monitoring keeps
    // per-minute and per-hour rollups (docs/monitoring.md); notification channels keep their
    // secrets sealed, and every delivery with each of its attempts.
    sql: `
ALTER TABLE users ADD COLUMN credential_epoch INTEGER NOT NULL DEFAULT 1;
ALTER TABLE admin_sessions ADD COLUMN credential_epoch INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS access_logs_site;
DROP INDEX IF EXISTS access_logs_client;
DROP INDEX IF EXISTS access_logs_action;
CREATE TABLE notification_reads (
  notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
  reader TEXT NOT NULL,
  read_at INTEGER NOT NULL,
  PRIMARY KEY (notification_id, reader)
) WITHOUT ROWID;
ALTER TABLE notifications DROP COLUMN read_at;
-- A notification's reason as data (#36): the parameters its text is made of, so the console
-- writes it in its own language, and the console page it is about.
ALTER TABLE notifications ADD COLUMN params TEXT;
ALTER TABLE notifications ADD COLUMN link TEXT;
CREATE TABLE ai_conversations (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  title TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX ai_conversations_owner ON ai_conversations(owner, updated_at);
CREATE TABLE ai_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id TEXT NOT NULL REFERENCES ai_conversations(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  tool_calls TEXT,
  tool_call_id TEXT,
  tool_name TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX ai_messages_conversation ON ai_messages(conversation_id, id);
CREATE TABLE ai_approvals (
  id TEXT PRIMARY KEY,
  conversation_id TEXT REFERENCES ai_conversations(id) ON DELETE SET NULL,
  tool TEXT NOT NULL,
  permission TEXT NOT NULL,
  summary TEXT NOT NULL,
  change TEXT NOT NULL,
  status TEXT NOT NULL,
  requested_by TEXT NOT NULL,
  requested_by_human TEXT NOT NULL,
  requested_by_name TEXT NOT NULL,
  requested_at INTEGER NOT NULL,
  decided_by TEXT,
  decided_by_name TEXT,
  decided_at INTEGER,
  result TEXT
);
CREATE INDEX ai_approvals_status ON ai_approvals(status, requested_at);
CREATE TABLE ai_usage (
  owner TEXT NOT NULL,
  owner_name TEXT NOT NULL,
  day TEXT NOT NULL,
  requests INTEGER NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  PRIMARY KEY (owner, day)
);
ALTER TABLE audit_log ADD COLUMN retention TEXT NOT NULL DEFAULT 'forever';
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
DROP TRIGGER audit_log_no_update;
DROP TRIGGER audit_log_no_delete;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN OLD.retention IS NOT 'auth_failure' OR NEW.retention IS NOT OLD.retention
  OR NEW.id IS NOT OLD.id OR NEW.time IS NOT OLD.time OR NEW.actor_type IS NOT OLD.actor_type
  OR NEW.actor_id IS NOT OLD.actor_id OR NEW.actor_name IS NOT OLD.actor_name
  OR NEW.action IS NOT OLD.action OR NEW.target IS NOT OLD.target OR NEW.result IS NOT OLD.result
  OR NEW.client_ip IS NOT OLD.client_ip
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN OLD.retention IS NOT 'auth_failure'
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE INDEX audit_log_retention ON audit_log(retention, time);
CREATE TABLE monitor_rollups (
  resolution TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  site_id TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (resolution, bucket, site_id)
) WITHOUT ROWID;
CREATE TABLE notification_channels (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  events TEXT NOT NULL,
  config TEXT NOT NULL,
  secret_sealed TEXT,
  secret_hint TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE notification_deliveries (
  id TEXT PRIMARY KEY,
  channel_id TEXT NOT NULL REFERENCES notification_channels(id) ON DELETE CASCADE,
  event TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  next_attempt_at INTEGER,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  last_error TEXT
);
CREATE INDEX notification_deliveries_channel ON notification_deliveries(channel_id, created_at);
CREATE INDEX notification_deliveries_due ON notification_deliveries(status, next_attempt_at);
CREATE TABLE notification_attempts (
  delivery_id TEXT NOT NULL REFERENCES notification_deliveries(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  time INTEGER NOT NULL,
  ok INTEGER NOT NULL,
  status INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
-- Cluster (issue #19): one-time join tokens (the SHA-256 of the secret only; the token's id is
-- the id of the node it enrols) and the nodes a controller manages.
CREATE TABLE cluster_join_tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  note TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
CREATE TABLE cluster_nodes (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  cert_serial TEXT NOT NULL,
  cert_fingerprint TEXT NOT NULL,
  cert_not_after INTEGER NOT NULL,
  enrolled_at INTEGER NOT NULL,
  revoked_at INTEGER,
  status TEXT NOT NULL,
  last_heartbeat_at INTEGER,
  last_ip TEXT,
  report TEXT
);
-- API security (issue #15): the discovered API inventory, one row per endpoint template and
-- site, written in batches off the request path (the statistics are JSON in data).
CREATE TABLE apisec_endpoints (
  site_id TEXT NOT NULL,
  template TEXT NOT NULL,
  data TEXT NOT NULL,
  last_seen INTEGER NOT NULL,
  PRIMARY KEY (site_id, template)
) WITHOUT ROWID;
-- Operations (#17): the task scheduler's persisted schedules and its run history.
CREATE TABLE ops_tasks (
  id TEXT PRIMARY KEY,
  schedule TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  jitter_ms INTEGER NOT NULL,
  settings TEXT NOT NULL,
  next_run_at INTEGER,
  updated_at INTEGER NOT NULL
);
CREATE TABLE ops_task_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT NOT NULL,
  trigger TEXT NOT NULL,
  actor TEXT,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  result TEXT NOT NULL,
  duration_ms INTEGER,
  error TEXT,
  detail TEXT
);
CREATE INDEX ops_task_runs_task ON ops_task_runs(task_id, id);
-- The PostgreSQL access-log sink (#22 item 5) ships from access_logs by this persisted cursor.
CREATE TABLE access_log_cursors (
  name TEXT PRIMARY KEY,
  last_id INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
-- Cluster (#19): a node's renewed certificate, signed but not presented yet. Its first use
-- replaces the registered one, so a node that lost the answer keeps working with its old one.
CREATE TABLE cluster_node_renewals (
  node_id TEXT PRIMARY KEY REFERENCES cluster_nodes(id) ON DELETE CASCADE,
  cert_serial TEXT NOT NULL,
  cert_fingerprint TEXT NOT NULL,
  cert_not_after INTEGER NOT NULL,
  issued_at INTEGER NOT NULL
);`,
  },
];

/** A column a schema version has that a store at that version may still lack. */
export interface AddedColumn {
  readonly version: number;
  readonly table: string;
  readonly column: string;
  /** The column's type and constraints as `ALTER TABLE ... ADD COLUMN` takes them. */
  readonly definition: string;
}

/**
 * Columns that joined a migration after stores had already applied it (before any release,
 * development stores reached a version, and then the version's SQL grew). Opening a store at
 * or past `version` adds each one that is missing; a store that has them is left as it is.
 */
export const ADDED_COLUMNS: readonly AddedColumn[] = [
  // #36: a notification's text parameters and console link, added to version 5 afterwards.
  { version: 5, table: "notifications", column: "params", definition: "TEXT" },
  { version: 5, table: "notifications", column: "link", definition: "TEXT" },
];

/** The schema version this binary knows. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1]!.version;
