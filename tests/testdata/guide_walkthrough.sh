# docs/guide.md's curl examples, verbatim and in order, run by tests/e2e/guide_test.ts against a
# real server, after the README's "Try it" steps they continue (setup, sign-in, the site shop):
# every command line of the guide's curl blocks must appear here unchanged (the test checks it).
# The test swaps the addresses for the test server's, `./data/` for its data directory and the
# authenticator placeholders for codes, and turns each `#> name` line into a redirection of what
# follows to a file it inspects.

#> health
curl -s http://127.0.0.1:9443/health        # {"status":"ok","version":"0.1.0",...}
#> ready
curl -s http://127.0.0.1:9443/health/ready  # 200 when store and both listeners are up
#> no_site
curl -si http://127.0.0.1:8080/              # 404 "No site is configured for this host" + traceId

#> setup_url
cat ./data/runtime/setup.url                  # http://127.0.0.1:9443/setup#token=...
# Without a browser: the token is the part after "#token=".
TOKEN=$(sed 's/.*#token=//' ./data/runtime/setup.url)
#> setup
curl -s -X POST http://127.0.0.1:9443/api/setup -H "X-WAF-Setup-Token: $TOKEN" \
  -H 'content-type: application/json' -d '{"username":"admin","password":"Correct-Horse-9"}'
#> login
curl -s -c cookies -X POST http://127.0.0.1:9443/api/auth/login \
  -H 'content-type: application/json' -d '{"username":"admin","password":"Correct-Horse-9"}'
#> users
curl -s -b cookies http://127.0.0.1:9443/api/users

CSRF=$(awk '$6=="waf_csrf"{print $7}' cookies)
#> site_create
curl -s -b cookies -H "x-csrf-token: $CSRF" -H 'content-type: application/json' \
  -X POST http://127.0.0.1:9443/api/sites \
  -d '{"name":"shop","hosts":["shop.example","*.shop.example"],"upstreams":["http://127.0.0.1:3000"]}' \
  | tee site.json                                                 # 201 {"id":"...","name":"shop",...}
#> pass
curl -si -H 'host: shop.example' 'http://127.0.0.1:8080/products?id=42'          # 200 from the upstream
#> sqli
curl -si -H 'host: shop.example' "http://127.0.0.1:8080/products?id=1'%20or%201=1--"  # 403 + traceId
TRACE=$(tr -d '\r' < "$OUT/sqli" | awk 'tolower($1)=="x-waf-trace-id:"{print $2}')
#> chain
curl -s -b cookies http://127.0.0.1:9443/api/logs/$TRACE    # the evaluation chain of that request

CSRF=$(awk '$6=="waf_csrf"{print $7}' cookies)
#> ip_block
curl -s -b cookies -H "x-csrf-token: $CSRF" -H 'content-type: application/json' \
  -X POST http://127.0.0.1:9443/api/protection/ip-lists -d '{"action":"block","cidr":"203.0.113.0/24"}'
#> trust_proxy
curl -s -b cookies -H "x-csrf-token: $CSRF" -H 'content-type: application/json' \
  -X PUT http://127.0.0.1:9443/api/sites/$(jq -r .id site.json) \
  -d '{"name":"shop","hosts":["shop.example","*.shop.example"],"upstreams":["http://127.0.0.1:3000"],"trusted_proxies":["127.0.0.1/32"]}'
#> ip_blocked
curl -si -H 'host: shop.example' -H 'x-forwarded-for: 203.0.113.9' http://127.0.0.1:8080/

# API security (README "API security")
#> apisec_config
curl -s -b cookies -H "x-csrf-token: $CSRF" -H 'content-type: application/json' \
  -X PUT http://127.0.0.1:9443/api/apisec/config \
  -d '{"discovery":{"enabled":true},"validation":{"enabled":true,"schemas":[{"id":"create-order","method":"POST","path_pattern":"^/api/orders$","required_headers":["x-api-key"]}]},"auth":{"enabled":true,"algorithms":["HS256"],"secret":"change-me-to-32-random-characters","routes":[{"id":"admin","method":"*","path_pattern":"^/api/admin/"}]},"rate_limits":[{"id":"login","method":"POST","path_pattern":"^/login$","requests":2,"window":"1m"}]}'
#> apisec_schema
curl -si -H 'host: shop.example' -X POST http://127.0.0.1:8080/api/orders -d '{}'  # 403: no x-api-key
#> apisec_auth
curl -si -H 'host: shop.example' http://127.0.0.1:8080/api/admin/stats  # 401 + WWW-Authenticate: Bearer
#> apisec_limit
for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code} ' -H 'host: shop.example' -X POST http://127.0.0.1:8080/login; done  # the upstream's status twice, then 429
#> apisec_validate
curl -s -b cookies -H "x-csrf-token: $CSRF" -H 'content-type: application/json' \
  -X POST http://127.0.0.1:9443/api/apisec/validate -d '{"method":"POST","path":"/api/orders"}'
#> apisec_endpoints
curl -s -b cookies 'http://127.0.0.1:9443/api/apisec/endpoints?limit=10'  # templates, hits, coverage

B=http://127.0.0.1:9443
#> jar_login
curl -s -c jar -X POST $B/api/auth/login -H 'content-type: application/json' \
  -d '{"username":"admin","password":"Correct-Horse-9"}'
CSRF=$(awk '$6=="waf_csrf"{print $7}' jar)

#> token_create
curl -s -b jar -X POST $B/api/system/api-tokens -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' \
  -d '{"note":"deploy script","permissions":["read:sites","write:sites"],"expires_in_days":30}' \
  | tee token.json
WAF_TOKEN=$(jq -r .token token.json); ID=$(jq -r .item.id token.json)

#> token_sites
curl -s $B/api/sites -H "Authorization: Bearer $WAF_TOKEN"
#> token_site_create
curl -s -X POST $B/api/sites -H "Authorization: Bearer $WAF_TOKEN" \
  -H 'content-type: application/json' \
  -d '{"name":"blog","hosts":["blog.example"],"upstreams":["http://127.0.0.1:3000"]}'
#> token_users
curl -s $B/api/users -H "Authorization: Bearer $WAF_TOKEN"           # 403: no read:users
#> token_audit
curl -s -b jar "$B/api/audit?action=site.create" | jq '.items[0].actor'  # {"type":"token","id":...}

#> token_list
curl -s -b jar $B/api/system/api-tokens
#> token_revoke
curl -s -b jar -X DELETE $B/api/system/api-tokens/$ID -H "X-CSRF-Token: $CSRF"
#> token_revoked
curl -s $B/api/sites -H "Authorization: Bearer $WAF_TOKEN"           # 401: revoked

ME=$(curl -s -b jar $B/api/auth/session | jq -r .user.id)
#> totp_setup
curl -s -b jar -X POST $B/api/users/$ME/2fa/setup -H "X-CSRF-Token: $CSRF" | tee setup.json
jq -r .qr_code setup.json | sed 's/^data:image\/svg+xml;base64,//' | base64 -d > qr.svg
#> totp_enable
curl -s -b jar -X POST $B/api/users/$ME/2fa/enable -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' -d '{"code":"<6 digits from the app>"}'
#> totp_login
curl -s -c jar -X POST $B/api/auth/login -H 'content-type: application/json' \
  -d '{"username":"admin","password":"Correct-Horse-9","totp_code":"<next code>"}'
CSRF=$(awk '$6=="waf_csrf"{print $7}' jar)
#> totp_disable
curl -s -b jar -X POST $B/api/users/$ME/2fa/disable -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' -d '{"password":"Correct-Horse-9","code":"<a later code>"}'
# Disabling ends your sessions too: sign in again, with the password alone.
#> relogin
curl -s -c jar -X POST $B/api/auth/login -H 'content-type: application/json' \
  -d '{"username":"admin","password":"Correct-Horse-9"}'
CSRF=$(awk '$6=="waf_csrf"{print $7}' jar)

#> version
curl -s -b jar $B/api/system/version
#> data_plane
curl -s -b jar $B/api/system/data-plane   # server.data.workers, and each worker's policy version
#> notifications
curl -s -b jar "$B/api/notifications?unread=true"
#> backup
curl -s -b jar -X POST $B/api/backup/export -H "X-CSRF-Token: $CSRF"     # 501 BACKUP_EXPORT_NOT_IMPLEMENTED
#> ota
curl -s -b jar -X PUT $B/api/system/ota -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' -d '{"enabled":true}'             # 501 OTA_UPDATES_UNAVAILABLE

#> ai_config
curl -s -b jar -H "X-CSRF-Token: $CSRF" -H 'content-type: application/json' -X PUT $B/api/ai/config \
  -d '{"enabled":true,"base_url":"https://api.openai.com/v1","model":"gpt-4o-mini","api_key":"sk-..."}'
CONV=$(curl -s -b jar -H "X-CSRF-Token: $CSRF" -H 'content-type: application/json' \
  -X POST $B/api/ai/conversations -d '{}' | jq -r .id)
#> ai_message
curl -sN -b jar -H "X-CSRF-Token: $CSRF" -H 'content-type: application/json' \
  -X POST $B/api/ai/conversations/$CONV/messages -d '{"content":"What was blocked today?"}'

#> metrics
curl -s -b jar $B/metrics | grep '^waf_requests_total'
#> monitor_summary
curl -s -b jar "$B/api/monitor/summary?period=1h" | jq '{requests, blocked, blocked_classes}'
#> monitor_series
curl -s -b jar "$B/api/monitor/series?period=1h&step=minute" | jq '.points[-1]'
#> realtime
curl -sN -b jar --max-time 2 -H 'Last-Event-ID: 0' "$B/api/realtime/events?kinds=access.blocked" || true
#> channel_create
curl -s -b jar -X POST $B/api/notification-channels -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' \
  -d '{"name":"ops","type":"webhook","events":["attack.spike","upstream.down","login.lockout"],"settings":{"url":"http://127.0.0.1:3000/hooks/waf","secret":"s3cret-signing-key"}}' \
  | tee channel.json
CH=$(jq -r .item.id channel.json)
#> channel_test
curl -s -b jar -X POST $B/api/notification-channels/$CH/test -H "X-CSRF-Token: $CSRF"
#> channel_deliveries
curl -s -b jar $B/api/notification-channels/$CH/deliveries | jq '.items[0] | {event, status, attempts}'
#> time_sync
curl -s -b jar $B/api/system/time-sync | jq '{active, offset_ms, servers}'
#> time_reselect
curl -s -b jar -X POST $B/api/system/time-sync/reselect -H "X-CSRF-Token: $CSRF"  # 409 without time.servers

#> cluster_token
curl -s -b jar -X POST $B/api/cluster/join-tokens -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' -d '{"note":"edge-1"}'   # {"token":"wafjoin.…","expires_at":…}: shown once
#> cluster_nodes
curl -s -b jar $B/api/cluster/nodes                             # state, last heartbeat, policy, counters
#> cluster_health
curl -s $B/health/cluster                                       # public summary, no secrets

#> ops_tasks
curl -s -b jar $B/api/ops/tasks | jq -r '.items[] | "\(.id) \(.schedule | tostring) next \(.next_run_at)"'
#> ops_backup
curl -s -b jar -X POST $B/api/ops/tasks/store-backup/run -H "X-CSRF-Token: $CSRF" | jq '.run | {result, detail}'
#> storage
curl -s -b jar $B/api/storage | jq '{store, disk, access_log, sink}'
#> storage_sink
curl -s -b jar -X PUT $B/api/storage/sink -H "X-CSRF-Token: $CSRF" -H 'content-type: application/json' \
  -d '{"enabled":false,"dsn":"postgres://waf:secret@127.0.0.1:5432/waf"}' | jq .sink
#> storage_cleanup
curl -s -b jar -X POST $B/api/storage/cleanup -H "X-CSRF-Token: $CSRF" -H 'content-type: application/json' \
  -d '{"runtime_logs_older_than_days":30,"backups_older_than_days":90,"dry_run":true}' | jq '{dry_run, freed_bytes}'
BLOG=$(curl -s -b jar $B/api/sites | jq -r '.items[] | select(.name=="blog") | .id')
#> acme_order
curl -s -b jar -X POST $B/api/sites/$BLOG/certificate/acme -H "X-CSRF-Token: $CSRF" \
  -H 'content-type: application/json' -d '{"directory":"staging","email":"ops@example.com"}' | jq '.acme // .error'
#> acme_state
curl -s -b jar $B/api/sites/$BLOG/certificate/acme | jq '.acme | {status, issuer, not_after, renew_after, last_error}'
