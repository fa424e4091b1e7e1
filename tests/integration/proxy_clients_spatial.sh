#!/usr/bin/env bash
# Spatial isolation through wirematch-proxy driven by the two library
# clients (issue 7 "Must show": by all three independent clients; the third,
# mosquitto_sub, is in proxy_spatial.sh): the Paho C library (MQTTVERSION_5,
# BUILD/tests/proxy_paho spatial) and MQTT.js (protocolVersion 5,
# tests/node/proxy_spatial_mqttjs.js, installed with `npm ci` from
# tests/node's lock file into BUILD/node). Each: subscribers to Monaco
# neighborhoods X1..X4 (one with its own Subscription Identifier, one with a
# persistent session that is away while everything is published), 2,000
# random publications (QoS 0/1/2; peids of the neighborhoods, of the world, unknown, or none); proxy_spatial_check.py:
# nobody receives a peid outside its neighborhood, every wanted one arrives
# once (queued QoS 1/2 ones for the persistent subscriber), no proxy
# identifier reaches a client. 127.0.0.1 only, bounded, stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
PAHO=$BUILD/tests/proxy_paho   # built by the Makefile
[ -x "$PAHO" ] || fail "$PAHO not built"
px_mqttjs
N=2000
SUBS=(X1 X2 X3 X4)
CHECK=(python3 "$(dirname "$0")/proxy_spatial_check.py" "$TMP/m.json")

px_monaco
# Peids drawn from: every peid of X1..X4, as many others of the world, and
# some no neighborhood has: about half of the publications are wanted by
# someone (uniform world peids would almost never be: X3 has 3 of 5,955).
python3 - "$TMP/m.json" "$WORLD" "${SUBS[@]}" > "$TMP/peids.txt" <<'PY'
import json, random, sys
res = json.load(open(sys.argv[1]))
inside = sorted({p for nb in sys.argv[3:] for p in res[nb]["result"]})
world = sorted(str(f["id"]) for f in json.load(open(sys.argv[2]))["features"])
rnd = random.Random(5)
print("\n".join(inside + rnd.sample(world, len(inside)) + ["nowhere-%d" % i for i in range(10)]))
PY

px_broker "max_queued_messages 100000"
px_proxy sp --resolution "$TMP/m.wmr" --threads 2
timeout 120 "$PAHO" 127.0.0.1 "$PORT_sp" wm/paho spatial "$TMP/peids.txt" $N 1 "${SUBS[@]}" > "$TMP/paho.out" \
  || fail "paho run: $(grep -m3 FAIL "$TMP/paho.out")"
"${CHECK[@]}" "$TMP/paho.out" paho "${SUBS[@]}" || fail "paho deliveries"
timeout 120 env NODE_PATH="$NODE_DIR/node_modules" node "$WM_ROOT/tests/node/proxy_spatial_mqttjs.js" \
  127.0.0.1 "$PORT_sp" wm/js "$TMP/peids.txt" $N 2 "${SUBS[@]}" > "$TMP/js.out" \
  || fail "MQTT.js run: $(grep -m3 FAIL "$TMP/js.out")"
"${CHECK[@]}" "$TMP/js.out" mqtt.js "${SUBS[@]}" || fail "MQTT.js deliveries"
px_stop "$PID_sp" || fail "proxy exited with rc $?"
S=$TMP/sp.json
w=$(jq '.filter.withheld.qos0 + .filter.withheld.qos1 + .filter.withheld.qos2' "$S")
[ "$w" -gt 0 ] || fail "nothing withheld: was the proxy filtering?"
[ "$(jq '.connections.open_at_exit' "$S")" -eq 0 ] || fail "connections left open"
echo "proxy_clients_spatial: Paho C and MQTT.js: $N publications each, every subscriber exactly its neighborhood ($w withheld)"
