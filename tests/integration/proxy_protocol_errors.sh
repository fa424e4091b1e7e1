#!/usr/bin/env bash
# Clients that break the proxy's protocol (README "Front-end proxy"), through a
# plain relay in front of real mosquitto 2:
#  - MQTT 3.1.1 and 3.1 clients: the proxy is v5-only; their CONNECT gets the
#    CONNACK of their own version, return code 0x01 unacceptable protocol
#    version (MQTT 3.1.1 §3.2.2.3; MQTT 5.0 §3.1.2.2), which they can read
#    (before 2026-12-02: a v5 CONNACK 0x84, "unknown reason" to them,
#    REVIEW12 #27), counted connections.refused_protocol_version;
#    mosquitto_pub -V mqttv311 says "unacceptable protocol version";
#  - a client's second CONNECT (a Protocol Error, [MQTT-3.1.0-2]): the proxy
#    ends the connection itself with DISCONNECT 0x82, counted as the
#    client's (malformed, closed_by_client), not relayed for the broker to
#    close and blamed on a lost broker (before: DISCONNECT 0x80 and
#    upstream_failures.lost, REVIEW12 #12).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_broker
px_proxy a
run() { timeout 20 python3 "$HERE/proxy_protocol_errors.py" "$PORT_a" "$1" || fail "client $1"; }

[ "$(run v311)" = 20020001 ] || fail "3.1.1 CONNECT: got '$(run v311)', want 20020001 (CONNACK, return code 1)"
[ "$(run v31)" = 20020001 ] || fail "3.1 CONNECT: got '$(run v31)', want 20020001"
out=$(timeout 20 mosquitto_pub -V mqttv311 -h 127.0.0.1 -p "$PORT_a" -t t/x -m hi 2>&1) && fail "mosquitto_pub 3.1.1 through the proxy succeeded"
case "$out" in *"unacceptable protocol version"*) ;; *) fail "mosquitto_pub 3.1.1: '$out'" ;; esac
[ "$(run again)" = e00182 ] || fail "second CONNECT: got '$(run again)', want e00182 (DISCONNECT 0x82)"

px_stop "$PID_a" || fail "proxy exited with rc $?"
got=$(jq -c '{v: .connections.refused_protocol_version, m: .malformed.client_to_upstream,
              t: .told_clients.disconnect_0x82_second_connect, lost: .upstream_failures.lost,
              up: .connections.closed_by_upstream}' "$TMP/a.json")
[ "$got" = '{"v":3,"m":1,"t":1,"lost":0,"up":0}' ] || fail "summary: $got"
echo "proxy_protocol_errors: 3.1.1/3.1 CONNECTs get CONNACK 20 02 00 01 (3 counted), a second CONNECT gets DISCONNECT 0x82 (the client's, not a lost broker)"
