#!/usr/bin/env bash
# Transparency with a third, independent client: MQTT.js (npm "mqtt",
# protocolVersion 5) runs tests/node/proxy_mqttjs.js (QoS 0/1/2 with user
# properties, client->broker topic aliases, retained, overlapping
# subscription identifiers, shared subscription, will) straight to mosquitto
# and through wirematch-proxy; both must complete with the same lines.
# MQTT.js is installed once with `npm ci` from tests/node's lock file into
# BUILD/node (network needed the first time). 127.0.0.1 only, bounded,
# stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_mqttjs
JS=(env NODE_PATH="$NODE_DIR/node_modules" timeout 60 node "$WM_ROOT/tests/node/proxy_mqttjs.js")

px_broker
px_proxy p --threads 2
px_deploy f --threads 2
"${JS[@]}" 127.0.0.1 "$BPORT" wm/direct > "$TMP/direct.out" || fail "direct run: $(tail -2 "$TMP/direct.out")"
"${JS[@]}" 127.0.0.1 "$PORT_p" wm/proxied > "$TMP/proxied.out" || fail "proxied run: $(tail -2 "$TMP/proxied.out")"
diff "$TMP/direct.out" "$TMP/proxied.out" >&2 || fail "MQTT.js saw different results through the proxy"
# The deployment mode: --resolution and --schemas loaded, no nbhd/xpath used.
"${JS[@]}" 127.0.0.1 "$PORT_f" wm/filtered > "$TMP/filtered.out" || fail "deployment-mode run: $(tail -2 "$TMP/filtered.out")"
diff "$TMP/direct.out" "$TMP/filtered.out" >&2 || fail "MQTT.js saw different results through the proxy in the deployment mode"
n=$(grep -c ' got ' "$TMP/proxied.out")
[ "$n" -eq 10 ] || fail "expected 10 deliveries (6 QoS, 1 retained, 2 overlapping, 1 will), got $n"
grep -q '^shared total=20$' "$TMP/proxied.out" || fail "shared subscription lost messages"
grep -q '^alias-only publications: yes$' "$TMP/proxied.out" || fail "MQTT.js did not use topic aliases"
px_stop "$PID_p" || fail "proxy exited with rc $?"
px_stop "$PID_f" || fail "deployment-mode proxy exited with rc $?"
[ "$(jq '.filter.sid_stripped' "$TMP/f.json")" -ge 1 ] && [ "$(jq '[.filter.withheld[]] | add' "$TMP/f.json")" -eq 0 ] \
  || fail "deployment mode: $(jq -c .filter "$TMP/f.json")"
S=$TMP/p.json
[ "$(jq '.malformed.client_to_upstream + .malformed.upstream_to_client' "$S")" -eq 0 ] || fail "malformed counted"
[ "$(jq '.connections.open_at_exit' "$S")" -eq 0 ] || fail "connections left open"
echo "proxy_mqttjs: MQTT.js $(jq -r .version "$NODE_DIR/node_modules/mqtt/package.json") scenario identical with and without the proxy (also with --resolution --schemas) ($n deliveries + 20 shared, topic aliases used)"
