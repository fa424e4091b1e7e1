#!/usr/bin/env bash
# A re-SUBSCRIBE that wirematch-proxy or the data plane refuses (an unknown
# neighborhood) for a filter the client already subscribed to: the existing
# subscription stays as it was, with its neighborhood (§3.8.4 replaces a
# subscription only with one that is made; mosquitto keeps the old one when
# its ACL refuses a re-subscription too), and this is reported (REVIEW12 #29:
# before 2026-12-02 the old spatial filter stayed in place silently).
#  - wirematch-proxy --resolution, real mosquitto: "r" has t/# on X1 and
#    plain/# without neighborhood; SUBSCRIBE t/# with nbhd NOPE gets SUBACK
#    0x80 whose Reason String says that the subscription to t/# stays, with
#    neighborhood X1; SUBSCRIBE plain/# new/# (NOPE) gets 0x80 0x80 and names
#    plain/# (new/# had none). Deliveries still follow X1 (t/in delivered,
#    t/out withheld; plain/x delivered); filter.refused_kept 2.
#  - build/wirematch on a crafted capture (the broker granted the second
#    SUBSCRIBE, the data plane refuses NOPE): S#1 on X1 keeps matching p/in
#    and not p/out; mqtt.subs_nbhd_unknown 1, match.subs_refused_kept 1.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_monaco
read -r IN OUT < <(python3 - "$TMP/m.json" "$WORLD" <<'PY'
import json, sys
x1 = set(json.load(open(sys.argv[1]))["X1"]["result"])
world = sorted(str(f["id"]) for f in json.load(open(sys.argv[2]))["features"])
print(sorted(x1)[0], [p for p in world if p not in x1][0])
PY
)
px_broker
px_proxy a --resolution "$TMP/m.wmr"
got=$(timeout 30 python3 "$HERE/proxy_resub_refused.py" "$PORT_a" "$IN" "$OUT") || fail "client: $got"
want="first [1] [1]
again [128] unknown neighborhood \"NOPE\"; the existing subscription to \"t/#\" stays unchanged, with neighborhood \"X1\"
again [128, 128] unknown neighborhood \"NOPE\"; the existing subscription to \"plain/#\" stays unchanged, without neighborhood or xpath
received ['plain/x', 't/in']"
[ "$got" = "$want" ] || fail "got
$got
want
$want"
px_stop "$PID_a" || fail "proxy exited with rc $?"
F=$(jq -c '.filter | {suback_unknown_nbhd, refused_kept}' "$TMP/a.json")
[ "$F" = '{"suback_unknown_nbhd":3,"refused_kept":2}' ] || fail "summary: $F"

python3 "$WM_ROOT/tests/integration/dataplane_mqtt_pcap.py" resub "$TMP/resub.pcap" 1883 "$TMP/m.json" > "$TMP/peids.json"
timeout 60 "$BUILD/wirematch" -l 0 --no-huge --no-pci --no-shconf --file-prefix "wmrr$$" --log-level=lib.eal:error \
  --log-level=user1:error --vdev "net_pcap0,rx_pcap=$TMP/resub.pcap" -- --mqtt-port 1883 --resolution "$TMP/m.wmr" \
  --match-log "$TMP/match.jsonl" --summary "$TMP/dp.json" 2> "$TMP/dp.err" || fail "wirematch exited $?"
rm -rf /var/run/dpdk/wmrr$$* 2>/dev/null || true
got=$(jq -c '[.topic, .matched]' "$TMP/match.jsonl" | tr '\n' ' ')
[ "$got" = '["p/in",["S#1"]] ["p/out",[]] ' ] || fail "data plane match log: $got"
got=$(jq -c '[.mqtt.subs_nbhd_unknown, .match.subs_refused_kept]' "$TMP/dp.json")
[ "$got" = '[1,1]' ] || fail "data plane counters [subs_nbhd_unknown, subs_refused_kept]: $got"
echo "proxy_resub_refused: a refused re-SUBSCRIBE keeps the existing subscription and its neighborhood, said in the Reason String (proxy) and counted (proxy 2, data plane 1)"
