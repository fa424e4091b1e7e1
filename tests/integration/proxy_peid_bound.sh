#!/usr/bin/env bash
# One rule for a PUBLISH's peids (control/peid_props.h), checked in the
# three places that read them: at most 64 `peid` User Properties; a PUBLISH
# with more reaches no subscriber and is counted under too_many_peids.
#  - wirematch-proxy --resolution, real mosquitto on 127.0.0.1, mosquitto_sub
#    on traffic/# with nbhd X1: a peid of X1 alone, and last of 64, is
#    delivered; last of 65 (the proxy used to read 64 and withhold silently)
#    and first of 65 (it used to deliver) are withheld, filter.too_many_peids 4
#    (two deliveries each: to it and to a plain subscriber on traffic/#).
#  - --prefilter: a 65-peid PUBLISH never reaches the broker (a subscriber
#    straight on the broker sees only the 64-peid one), prefilter.too_many_peids 1
#    (it used to pass).
#  - build/wirematch on a crafted capture: p/64 matched, p/65
#    publish.dropped_too_many_peids.
# An empty peid value names no entity (world ids and neighborhood peids are
# never empty): it is no peid, in all three places (REVIEW12 #17: the data
# plane counted it dropped_match_error while the proxy delivered it). A
# plain subscriber gets a PUBLISH whose only peid is empty, the X1 one does
# not; 64 peids plus an empty one are 64 (delivered, matched), not 65.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
read -r IN OUT < <(python3 - "$TMP/m.json" "$WORLD" <<'PY'
import json, sys
x1 = set(json.load(open(sys.argv[1]))["X1"]["result"])
world = sorted(str(f["id"]) for f in json.load(open(sys.argv[2]))["features"])
out = [p for p in world if p not in x1][:64]
print(sorted(x1)[0], ",".join(out))
PY
)
IFS=, read -r -a OUTS <<< "$OUT"
[ ${#OUTS[@]} -eq 64 ] || fail "64 peids outside X1: got ${#OUTS[@]}"
args() { local p; for p in "$@"; do printf -- '-D\npublish\nuser-property\npeid\n%s\n' "$p"; done; }
mapfile -t O64 < <(args "${OUTS[@]}")
mapfile -t O63 < <(args "${OUTS[@]:0:63}")
mapfile -t I1 < <(args "$IN")
mapfile -t E1 < <(args "")
px_broker
px_proxy sp --resolution "$TMP/m.wmr"
timeout 20 mosquitto_sub -V mqttv5 -p "$PORT_sp" -t 'traffic/#' -D subscribe user-property nbhd X1 -F '%p' -W 15 \
  > "$TMP/sub.out" 2> "$TMP/sub.err" & SUB=$!
timeout 20 mosquitto_sub -V mqttv5 -p "$PORT_sp" -t 'traffic/#' -F '%p' -W 15 > "$TMP/plain.out" 2> "$TMP/plain.err" &
PLAIN=$!
sleep 1
pub() { timeout 10 mosquitto_pub -V mqttv5 -p "$1" -t traffic/a -m "$2" "${@:3}" || fail "mosquitto_pub $2"; }
pub "$PORT_sp" alone "${I1[@]}"
pub "$PORT_sp" last-of-64 "${O63[@]}" "${I1[@]}"
pub "$PORT_sp" last-of-65 "${O64[@]}" "${I1[@]}"
pub "$PORT_sp" first-of-65 "${I1[@]}" "${O64[@]}"
pub "$PORT_sp" empty "${E1[@]}"
pub "$PORT_sp" 64-and-empty "${O63[@]}" "${E1[@]}" "${I1[@]}"
pub "$PORT_sp" end "${I1[@]}"
for _ in $(seq 100); do grep -q '^end$' "$TMP/sub.out" 2>/dev/null && grep -q '^end$' "$TMP/plain.out" 2>/dev/null && break
  sleep 0.1; done
kill "$SUB" "$PLAIN" 2>/dev/null || true; wait "$SUB" "$PLAIN" 2>/dev/null || true
got=$(tr '\n' ' ' < "$TMP/sub.out")
[ "$got" = "alone last-of-64 64-and-empty end " ] || fail "subscriber got '$got', want 'alone last-of-64 64-and-empty end '"
got=$(tr '\n' ' ' < "$TMP/plain.out")
[ "$got" = "alone last-of-64 empty 64-and-empty end " ] \
  || fail "plain subscriber got '$got', want 'alone last-of-64 empty 64-and-empty end '"
px_stop "$PID_sp" || fail "proxy exit status"
[ "$(jq '.filter.too_many_peids' "$TMP/sp.json")" = 4 ] || fail "filter: $(jq -c .filter "$TMP/sp.json")"

px_proxy pf --resolution "$TMP/m.wmr" --prefilter
timeout 20 mosquitto_sub -V mqttv5 -p "$BPORT" -t 'traffic/#' -F '%p' -W 15 > "$TMP/direct.out" 2> "$TMP/direct.err" & SUB=$!
timeout 20 mosquitto_sub -V mqttv5 -p "$PORT_pf" -t 'traffic/#' -D subscribe user-property nbhd X1 -F '%p' -W 15 \
  > "$TMP/sub2.out" 2> "$TMP/sub2.err" & SUB2=$!
sleep 1
pub "$PORT_pf" pf-last-of-65 "${O64[@]}" "${I1[@]}"
pub "$PORT_pf" pf-last-of-64 "${O63[@]}" "${I1[@]}"
pub "$BPORT" end
for _ in $(seq 100); do grep -q '^end$' "$TMP/direct.out" 2>/dev/null && break; sleep 0.1; done
kill "$SUB" "$SUB2" 2>/dev/null || true; wait "$SUB" "$SUB2" 2>/dev/null || true
got=$(tr '\n' ' ' < "$TMP/direct.out")
[ "$got" = "pf-last-of-64 end " ] || fail "broker-side subscriber got '$got', want 'pf-last-of-64 end '"
px_stop "$PID_pf" || fail "prefilter proxy exit status"
[ "$(jq '.prefilter.too_many_peids' "$TMP/pf.json")" = 1 ] || fail "prefilter: $(jq -c .prefilter "$TMP/pf.json")"

python3 "$WM_ROOT/tests/integration/dataplane_mqtt_pcap.py" peids "$TMP/peids.pcap" 1883 > /dev/null
echo '{"id":"pre","client":"zz","filter":"zz"}' > "$TMP/subs.jsonl"
timeout 60 "$BUILD/wirematch" -l 0 --no-huge --no-pci --no-shconf --file-prefix "wmpb$$" --log-level=lib.eal:error \
  --log-level=user1:error --vdev "net_pcap0,rx_pcap=$TMP/peids.pcap" -- --mqtt-port 1883 --subs "$TMP/subs.jsonl" \
  --match-log "$TMP/match.jsonl" --summary "$TMP/dp.json" 2> "$TMP/dp.err" || fail "wirematch exited $?"
rm -rf /var/run/dpdk/wmpb$$* 2>/dev/null || true
[ "$(jq -c '[.topic, (.peids | length), .matched]' "$TMP/match.jsonl" | tr '\n' ' ')" = \
  '["p/64",64,["S#1"]] ["p/empty",0,["S#1"]] ["p/64-and-empty",64,["S#1"]] ' ] \
  || fail "data plane match log: $(cat "$TMP/match.jsonl")"
[ "$(jq -c '.publish | [.dropped_too_many_peids, .dropped_match_error]' "$TMP/dp.json")" = '[1,0]' ] \
  || fail "data plane: $(jq -c .publish "$TMP/dp.json")"
echo "proxy_peid_bound: 64 peids taken, 65 refused alike by the proxy (2 withheld from 2 subscribers), --prefilter (1 kept from the broker) and the data plane (1 dropped); an empty peid is no peid in both"
