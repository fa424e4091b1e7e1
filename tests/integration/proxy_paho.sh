#!/usr/bin/env bash
# Transparency with a second, independent client library: the Paho C client
# (MQTTVERSION_5) runs one scenario (wills, persistent session across a
# reconnect, shared subscription, client->broker topic aliases, overlapping
# subscriptions with identifiers, retained messages, a subscriber's Maximum
# Packet Size, QoS 0/1/2 with user properties; see proxy_paho.c) straight to
# mosquitto and through wirematch-proxy: both runs must complete and print
# the same lines (15 deliveries: will 1, persistent 3, aliases 3, overlap 2, retained 2,
# max packet 1, QoS 3; plus 20 shared). 127.0.0.1 only, bounded, stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
PAHO=$BUILD/tests/proxy_paho   # built by the Makefile
[ -x "$PAHO" ] || fail "$PAHO not built"

px_broker
px_proxy p --threads 2
px_deploy f --threads 2
timeout 60 "$PAHO" 127.0.0.1 "$BPORT" wm/direct > "$TMP/direct.out" || fail "direct run: $(grep FAIL "$TMP/direct.out")"
timeout 60 "$PAHO" 127.0.0.1 "$PORT_p" wm/proxied > "$TMP/proxied.out" || fail "proxied run: $(grep FAIL "$TMP/proxied.out")"
diff "$TMP/direct.out" "$TMP/proxied.out" >&2 || fail "Paho saw different results through the proxy"
# The deployment mode: --resolution and --schemas loaded, no nbhd/xpath used.
timeout 60 "$PAHO" 127.0.0.1 "$PORT_f" wm/filtered > "$TMP/filtered.out" || fail "deployment-mode run: $(grep FAIL "$TMP/filtered.out")"
diff "$TMP/direct.out" "$TMP/filtered.out" >&2 || fail "Paho saw different results through the proxy in the deployment mode"
n=$(grep -c ' got ' "$TMP/proxied.out")
[ "$n" -eq 15 ] || fail "expected 15 deliveries in the scenario, got $n"
grep -q '^shared total=20$' "$TMP/proxied.out" || fail "shared subscription lost messages"
px_stop "$PID_p" || fail "proxy exited with rc $?"
px_stop "$PID_f" || fail "deployment-mode proxy exited with rc $?"
[ "$(jq '.filter.sid_stripped' "$TMP/f.json")" -ge 1 ] && [ "$(jq '[.filter.withheld[]] | add' "$TMP/f.json")" -eq 0 ] \
  || fail "deployment mode: $(jq -c .filter "$TMP/f.json")"
S=$TMP/p.json
[ "$(jq '.malformed.client_to_upstream + .malformed.upstream_to_client' "$S")" -eq 0 ] || fail "malformed counted"
[ "$(jq '.connections.open_at_exit' "$S")" -eq 0 ] || fail "connections left open"
echo "proxy_paho: Paho C (MQTT v5) scenario identical with and without the proxy (also with --resolution --schemas) ($n deliveries + 20 shared, $(jq .connections.accepted "$S") connections)"
