/** The commented `waf.yaml` written on first start; every value is the built-in default. */
export const DEFAULT_CONFIG_YAML =
  `# waf configuration. Created with the built-in defaults on first start.
# Every key is optional; an unknown key or a bad value stops start-up naming the key.
# Management state (sites, rules, users, tokens, ...) lives in the store, not here.

# Where the store, certificates and runtime files live. The --data-dir flag wins over this.
# data_dir: ./data

server:
  data:
    # Data-plane reverse proxy (the traffic you protect).
    listen: "0.0.0.0:8080"
    # HTTPS data listener: one port, the certificate of each site chosen by SNI (sites without
    # a certificate are not served over HTTPS). Unset: no HTTPS listener.
    # https_listen: "0.0.0.0:8443"
  management:
    # REST API (/api), health probes (/health) and the console.
    listen: "127.0.0.1:9443"
    # off | auto (local CA and server certificate generated into the data directory)
    # | { cert_file: PATH, key_file: PATH }. A non-loopback listen address requires TLS.
    tls: "off"
    # Public base URL of the console (used in the setup link). Derived from listen when unset.
    # base_url: "https://waf.example.com:9443"
  # How long in-flight requests may finish after SIGINT/SIGTERM.
  shutdown_timeout: "10s"

storage:
  # temporary: embedded SQLite under the data directory (no other service needed).
  # production: an external store; this build has none, so it fails closed at start.
  profile: temporary
  # Optional asynchronous access-log sink; never blocks requests.
  # postgresql:
  #   dsn: "postgres://waf@127.0.0.1:5432/waf"
  #   pool_size: 4
  #   batch_size: 500
  # Optional Redis endpoint (connectivity test only; challenge state stays in memory).
  # redis:
  #   url: "redis://127.0.0.1:6379"
  access_logs:
    retention_days: 30
    max_records: 1000000
    queue_size: 10000
    batch_size: 500

logging:
  level: info        # debug | info | warn | error
  format: text       # text | json (the --log-format flag wins)

protection:
  bot:
    # Challenge state is kept in process memory; "redis" is rejected.
    challenge_backend: memory
  # A CSV of "network,country_code" lines (e.g. "203.0.113.0/24,AU") enables the ACL
  # country condition. Without it, rules with a country condition are refused.
  # geoip:
  #   file: /var/lib/waf/geoip.csv

apisec:
  # Role -> permission expressions: "*", "family:*" (e.g. "read:*") or an exact identifier.
  # API callers cannot widen this map.
  permissions:
    admin: ["*"]
    readonly: ["read:*", "read:cluster"]
  management_api:
    # Allows scoped management API tokens (Authorization: Bearer ...).
    enabled: false

monitor:
  prometheus:
    # Prometheus text exposition on the management listener.
    enabled: true
    path: /metrics
    # true: the path needs no credentials; false: a session or token with read:monitor.
    public: false
  alerts:
    # Blocked requests in one minute (all sites) that raise an "attack.spike" notification.
    attack_spike_per_minute: 100
    # Days before a site certificate expires that raise "certificate.expiring".
    certificate_days: 14
  realtime:
    # SSE comment / WebSocket heartbeat when no event was sent for this long.
    heartbeat: "15s"

time:
  # SNTP servers ("host" or "host:port") the host clock is measured against. The service never
  # sets the host clock; it reports the offset and warns above max_offset.
  servers: []
  # true: TOTP, JWT exp/nbf and cluster heartbeats use the host clock plus the measured offset.
  apply_offset: false
  max_offset: "1s"
  sync_interval: "15m"
  query_timeout: "2s"

update:
  ota:
    # Reserved: this build has no updater; enabling OTA is refused.
    enabled: false
    server: ""
    channel: stable
    check_interval: "6h"
    auto_update_rules: true
    auto_update_binary: false
    verify_signature: true
    public_keys: []

crp:
  # Ed25519 public keys trusted to sign content packages ("waf crp verify"): base64 of the
  # 32-byte key (as printed by "deno task crp:build keygen") or a PEM "PUBLIC KEY" block.
  public_keys: []
`;
