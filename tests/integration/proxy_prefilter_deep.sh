#!/usr/bin/env bash
# wirematch-proxy --prefilter when the subscription registry cannot index a
# filter exactly (REVIEW14 finding 1), against a real mosquitto on 127.0.0.1
# with mosquitto_sub/mosquitto_pub:
#  1. a valid SUBSCRIBE of 65 levels (MQTT 5.0 §4.7 sets no limit; the
#     matcher indexes 64) is granted and registered widened (its first 63
#     levels + '#'): prefiltering stays on for everyone (a publication
#     outside every neighborhood is still kept from the broker, PUBACK 0x10;
#     before: the registry was marked broken and it passed, 0x00, for every
#     client until restart), a publication to a 65-level topic reaches the
#     deep subscriber, the log names the reason (too_deep), the summary counts
#     it (prefilter.registry.widened_too_deep) and says broken false;
#  2. the matcher's wildcard trie full (lowered by the test hook
#     WM_PROXY_TEST_MATCHER_NODES=48; not for production use): the SUBSCRIBE
#     that does not fit is refused to that client alone, SUBACK 0x97 Quota
#     exceeded (before: granted, and prefiltering off for everyone), counted
#     (prefilter.suback_refused, registry.refused_full); prefiltering stays on.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
OUT=r124149681.0   # a peid of the world outside X1
python3 - "$TMP/m.json" "$OUT" <<'PY' || fail "$OUT is in X1: the scenario cannot tell"
import json, sys
assert sys.argv[2] not in json.load(open(sys.argv[1]))["X1"]["result"]
PY
levels() { python3 -c "import sys; print('/'.join([sys.argv[1]] * int(sys.argv[2])) + sys.argv[3])" "$@"; }
# puback PORT TOPIC: the reason code of the PUBACK to a QoS 1 publication with peid $OUT
puback() {
  timeout 10 mosquitto_pub -V mqttv5 -p "$1" -t "$2" -m m -q 1 -D publish user-property peid "$OUT" -d 2>&1 \
    | sed -n 's/.*received PUBACK (Mid: [0-9]*, RC:\([0-9]*\)).*/\1/p'
}
# subscribed NAME: waits for NAME's SUBACK line (mosquitto_sub -d) and prints its reason code
subscribed() {
  for _ in $(seq 100); do
    grep -q 'Subscribed (mid' "$TMP/$1.sub" 2>/dev/null && break; sleep 0.1
  done
  sed -n 's/.*Subscribed (mid: [0-9]*): \([0-9]*\).*/\1/p' "$TMP/$1.sub" | head -1
}

# 1. Too deep: widened, prefiltering stays on.
px_proxy d --resolution "$TMP/m.wmr" --prefilter
P=$PORT_d
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -p "$P" -t 'traffic/#' -D subscribe user-property nbhd X1 -d > "$TMP/s1.sub" 2>&1 &
[ "$(subscribed s1)" = 0 ] || fail "X1 subscriber not granted: $(cat "$TMP/s1.sub")"
[ "$(puback "$P" traffic/out1)" = 16 ] || fail "outside X1 before the deep SUBSCRIBE: not kept (want PUBACK 0x10)"
DEEP=$(levels l 64 /+)
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -p "$P" -t "$DEEP" -C 1 -d > "$TMP/deep.sub" 2>&1 & DS=$!
[ "$(subscribed deep)" = 0 ] || fail "65-level SUBSCRIBE not granted: $(cat "$TMP/deep.sub")"
[ "$(puback "$P" traffic/out2)" = 16 ] || fail "outside X1 after a 65-level SUBSCRIBE: passed (prefiltering turned off)"
[ "$(puback "$P" "$(levels l 64 /x)")" = 0 ] || fail "65-level publication for the deep subscriber: kept"
wait "$DS" || fail "deep subscriber: no delivery"
grep -q ' m$\|^m$' "$TMP/deep.sub" || fail "deep subscriber: $(tail -3 "$TMP/deep.sub")"
grep -q 'too_deep' "$TMP/d.err" || fail "no log line naming too_deep: $(cat "$TMP/d.err")"
grep -q 'prefiltering is off' "$TMP/d.err" && fail "prefiltering turned off: $(cat "$TMP/d.err")"
px_stop "$PID_d" || fail "proxy d exit status"
jq -e '.prefilter.registry | .widened_too_deep == 1 and .refused == 0 and (.broken | not)' "$TMP/d.json" > /dev/null \
  || fail "summary: $(jq -c .prefilter "$TMP/d.json")"
jq -e '.prefilter.dropped.qos1 == 2' "$TMP/d.json" > /dev/null || fail "prefiltered: $(jq -c .prefilter "$TMP/d.json")"

# 2. The trie full: the SUBSCRIBE that does not fit is refused to its client (0x97), prefiltering stays on.
export WM_PROXY_TEST_MATCHER_NODES=48
px_proxy f --resolution "$TMP/m.wmr" --prefilter
unset WM_PROXY_TEST_MATCHER_NODES
P=$PORT_f
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -p "$P" -t 'traffic/#' -D subscribe user-property nbhd X1 -d > "$TMP/s2.sub" 2>&1 &
[ "$(subscribed s2)" = 0 ] || fail "X1 subscriber not granted: $(cat "$TMP/s2.sub")"
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -p "$P" -t "$(levels f1 29 /+)" -d > "$TMP/f1.sub" 2>&1 &
[ "$(subscribed f1)" = 0 ] || fail "30-level SUBSCRIBE within the trie not granted: $(cat "$TMP/f1.sub")"
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -p "$P" -t "$(levels f2 29 /+)" -d > "$TMP/f2.sub" 2>&1 &
[ "$(subscribed f2)" = 151 ] || fail "SUBSCRIBE beyond the trie: want SUBACK 151 (0x97): $(cat "$TMP/f2.sub")"
[ "$(puback "$P" traffic/out3)" = 16 ] || fail "outside X1 after the trie filled: passed (prefiltering turned off)"
grep -q 'full_nodes' "$TMP/f.err" || fail "no log line naming full_nodes: $(cat "$TMP/f.err")"
px_stop "$PID_f" || fail "proxy f exit status"
jq -e '.prefilter | .suback_refused == 1 and .registry.refused_full == 1 and (.registry.broken | not)' "$TMP/f.json" \
  > /dev/null || fail "summary: $(jq -c .prefilter "$TMP/f.json")"
echo "proxy_prefilter_deep: 65-level filter registered widened (prefilter stays on, its deep publication passes, too_deep named); trie full: SUBACK 0x97 to that client alone, prefilter stays on"
