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
    # Data-plane worker threads sharing these ports: auto (one per core, at most 32) or a
    # number. 1 runs the data plane on the main thread.
    workers: auto
    # Connection limits of this listener (nginx's client_header_timeout, client_body_timeout,
    # keepalive_timeout and limit_conn). A connection past a cap is closed on arrival; one past a
    # deadline is closed; both are counted (waf_connections_* metrics). The total is also bounded
    # by the process's descriptor limit.
    limits:
      header_timeout: "60s"      # the whole request head, from its first byte
      body_timeout: "60s"        # the longest pause between two reads of a body
      body_min_rate: 500         # bytes a second a body must average once ...
      body_min_rate_after: "10s" # ... this much of it passed (0 = no minimum)
      keepalive_timeout: "75s"   # silence allowed between requests
      max_connections: 10000
      max_connections_per_client: 256   # per IPv4 address or IPv6 /64; 0 = no cap
  management:
    # REST API (/api), health probes (/health) and the console.
    listen: "127.0.0.1:9443"
    # off | auto (local CA and server certificate generated into the data directory)
    # | { cert_file: PATH, key_file: PATH }. A non-loopback listen address requires TLS.
    tls: "off"
    # Public base URL of the console (used in the setup link). Derived from listen when unset.
    # base_url: "https://waf.example.com:9443"
    # The same connection limits as the data listener, smaller caps.
    limits:
      header_timeout: "60s"      # the whole request head, from its first byte
      body_timeout: "60s"        # the longest pause between two reads of a body
      body_min_rate: 500         # bytes a second a body must average once ...
      body_min_rate_after: "10s" # ... this much of it passed (0 = no minimum)
      keepalive_timeout: "75s"   # silence allowed between requests
      max_connections: 1000
      max_connections_per_client: 64
  # How long in-flight requests may finish after SIGINT/SIGTERM.
  shutdown_timeout: "10s"

storage:
  # temporary: embedded SQLite under the data directory (no other service needed).
  # production: the management state in PostgreSQL, shared by every controller of the
  # deployment (README "Production profile"); without its database or key file, or with the
  # database unreachable, start-up fails closed (ErrProductionStorageUnavailable).
  profile: temporary
  # production:
  #   postgresql:
  #     dsn: "postgres://waf@db.internal:5432/waf"
  #     pool_size: 10
  #     connect_timeout: 5s
  #     statement_timeout: 10s
  #     schema: public
  #   secrets_file: /etc/waf/deployment.key   # the same file on every controller
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
  # The blocks below are managed through /api/apisec/config; set here, they seed the store
  # at start whenever they differ from what the file last set (docs/api-security.md).
  # validation:
  #   enabled: true
  #   schemas:
  #     - { id: create-order, method: POST, path_pattern: "^/api/orders$",
  #         required_params: [sku], required_headers: [x-api-key], max_body_bytes: 65536,
  #         enabled: true }
  # auth:
  #   enabled: true
  #   issuer: https://issuer.example
  #   audience: [orders]
  #   algorithms: [RS256, ES256, EdDSA]   # "none" is never accepted
  #   clock_skew: 30s
  #   jwks_url: https://issuer.example/.well-known/jwks.json
  #   jwks_cache_file: /var/lib/waf/jwks-cache.json
  #   jwks_refresh_interval: 10m
  #   # or: secret (HS*), pem (inline), pem_file, jwks_file
  #   routes:
  #     - { id: api, method: "*", path_pattern: "^/api/" }
  # rate_limits:
  #   - { id: login, method: POST, path_pattern: "^/login$", requests: 5, window: 1m,
  #       enabled: true }

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

cluster:
  # "controller" (standalone until a node joins) or "node" (a data-plane node managed by a
  # controller; its own management API is read-only). See docs/cluster.md.
  role: controller
  # Controller: the mTLS listener nodes join and report to (unset: no node can connect).
  # listen: "0.0.0.0:9444"
  # Controller: extra names in the cluster listener's certificate (the address nodes dial).
  server_names: []
  # Controller: a node silent this long is "offline" (after half of it: "stale").
  offline_after: "30s"
  # Node: the controller's cluster listener and the one-time join token (the token may also
  # come from --join-token or WAF_CLUSTER_JOIN_TOKEN; it is never logged).
  # controller_url: "https://controller.example:9444"
  # join_token: "wafjoin...."
  # name: edge-1
  heartbeat_interval: "5s"

crp:
  # Ed25519 public keys trusted to sign content packages ("waf crp verify"): base64 of the
  # 32-byte key (as printed by "deno task crp:build keygen") or a PEM "PUBLIC KEY" block.
  public_keys: []
`;
