#!/usr/bin/env bash
# wirematch-proxy live telemetry (REVIEW14 finding 3), against a real
# mosquitto on 127.0.0.1 with mosquitto_sub/mosquitto_pub: SIGUSR1 writes the
# summary of the moment without disconnecting anyone (before: the signal was
# taken and dropped, the summary came only at the stop, which ends every
# connection):
#  1. with --summary FILE: FILE is replaced by a summary with "live": true
#     counting what has happened so far (connections, PUBLISHes), the
#     subscriber's connection open in it; the subscriber then still gets a
#     publication made after the signal; the summary at the stop replaces it
#     (no "live"), and only then is the subscriber told DISCONNECT 0x8B;
#  2. without --summary: the live summary is one line on stderr (stdout keeps
#     the one at the stop).
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_broker

# 1. --summary FILE
px_proxy l --threads 2
P=$PORT_l
S=$TMP/l.json
[ ! -s "$S" ] || fail "summary written before any signal: $(cat "$S")"
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -p "$P" -t 'live/#' -v -d > "$TMP/sub.out" 2>&1 & SUB=$!
for _ in $(seq 100); do grep -qs 'Subscribed (mid' "$TMP/sub.out" && break; sleep 0.1; done
grep -q 'Subscribed (mid: 1): 0' "$TMP/sub.out" || fail "subscriber not granted: $(cat "$TMP/sub.out")"
for i in 1 2 3; do timeout 10 mosquitto_pub -V mqttv5 -p "$P" -t live/a -m "before$i" -q 1 || fail "publish $i"; done
for _ in $(seq 100); do grep -q 'before3' "$TMP/sub.out" && break; sleep 0.1; done
kill -USR1 "$PID_l"
for _ in $(seq 50); do [ -s "$S" ] && break; sleep 0.1; done
[ -s "$S" ] || fail "SIGUSR1: nothing written to --summary"
jq -e '.live == true and .late_workers == 0 and .connections.accepted == 5 and .connections.open_at_exit == 1
       and .publishes.client_to_upstream == 3 and .publishes.upstream_to_client == 3' "$S" > /dev/null \
  || fail "live summary: $(jq -c '{live, late_workers, connections, publishes}' "$S")"
kill -0 "$PID_l" || fail "the proxy stopped at SIGUSR1"
grep -q 'DISCONNECT' "$TMP/sub.out" && fail "the subscriber was disconnected by SIGUSR1: $(cat "$TMP/sub.out")"
timeout 10 mosquitto_pub -V mqttv5 -p "$P" -t live/a -m after -q 1 || fail "publish after the signal"
for _ in $(seq 100); do grep -q 'live/a after' "$TMP/sub.out" && break; sleep 0.1; done
grep -q 'live/a after' "$TMP/sub.out" || fail "subscriber did not get the publication after SIGUSR1: $(cat "$TMP/sub.out")"
kill -USR1 "$PID_l"   # a second one replaces the first
for _ in $(seq 50); do [ "$(jq '.publishes.client_to_upstream' "$S" 2>/dev/null)" = 4 ] && break; sleep 0.1; done
[ "$(jq '.publishes.client_to_upstream' "$S")" = 4 ] || fail "second SIGUSR1: $(jq -c .publishes "$S")"
px_stop "$PID_l" || fail "proxy l exit status"
wait "$SUB" || true
grep -q 'Received DISCONNECT (139)' "$TMP/sub.out" || fail "subscriber not told 0x8B at the stop: $(tail -3 "$TMP/sub.out")"
jq -e '(has("live") | not) and .connections.accepted == 6 and .connections.open_at_exit == 0' "$S" > /dev/null \
  || fail "summary at the stop: $(jq -c '{live, connections}' "$S")"
[ "$(wc -l < "$S")" -eq 1 ] || fail "summary file holds $(wc -l < "$S") lines, want 1"

# 2. No --summary: the live one on stderr, the stop's on stdout.
port=$(free_port)
"$PROXY" --listen 127.0.0.1:"$port" --upstream 127.0.0.1:"$BPORT" > "$TMP/e.out" 2> "$TMP/e.err" & E=$!; px_track $E
wait_port "$port" "$E" || fail "proxy e did not start"
timeout 10 mosquitto_pub -V mqttv5 -p "$port" -t live/b -m x || fail "publish to e"
kill -USR1 "$E"
for _ in $(seq 50); do grep -q '"live":true' "$TMP/e.err" && break; sleep 0.1; done
grep '"live":true' "$TMP/e.err" | jq -e '.connections.accepted == 2 and .publishes.client_to_upstream == 1' > /dev/null \
  || fail "live summary on stderr: $(cat "$TMP/e.err")"
[ ! -s "$TMP/e.out" ] || fail "stdout before the stop: $(cat "$TMP/e.out")"
px_stop "$E" || fail "proxy e exit status"
jq -e '(has("live") | not) and .connections.accepted == 2' "$TMP/e.out" > /dev/null || fail "stop summary: $(cat "$TMP/e.out")"
echo "proxy_live_stats: SIGUSR1 writes the live summary (--summary FILE replaced, or stderr), nobody disconnected, the stop's replaces it"
