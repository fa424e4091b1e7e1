#!/usr/bin/env bash
# A re-SUBSCRIBE whose new content filter the data plane refuses only at its
# compile (dataplane/match_sink.h, "A re-SUBSCRIBE"), with real peers: a
# mosquitto broker, mosquitto_sub and mosquitto_pub (MQTT v5) on 127.0.0.1,
# recorded by tcpdump, the capture replayed through build/wirematch --schemas.
#   1. mosquitto_sub -c -x 600 -i rs subscribes t/r with `xpath` Q1 (Cel
#      records) and leaves (-E): its session waits 600 s.
#   2. it resumes the session and subscribes t/r again, `xpath` //q:senml
#      (a prefix the registry does not bind: the compile refuses it). The
#      broker grants it (it knows nothing of xpath), so the data plane must
#      decide: MQTT 5.0 §3.8.4 replaces a subscription with one that is
#      made, and a refusal must not lose what was good.
#   3. mosquitto_pub publishes two SenML EXI packs (QoS 1, so the broker
#      queues them for the detached session): one with a Cel record, one
#      without.
#   4. the client resumes once more and subscribes t/r with Q2 (V records,
#      valid); two more publications.
# Expected: after 2, Q1 still decides (the Cel pack reaches rs#t/r, the other
# does not; match.subs_refused_kept 1); after 4, Q2 decides (both packs reach
# it; match.subs_replaced 1). Before 2026-12-02 the refused re-SUBSCRIBE had
# replaced Q1 at once and left rs with no subscription: nothing matched after 2.
. "$(dirname "$0")/lib/dataplane_env.sh" wmrc
SHARED=${WM_SHARED:-$R/../shared}
S=$(cd "$SHARED/data/exi/senml" && pwd)
NS=urn:ietf:params:xml:ns:senml
Q1='//s:senml[@u = "Cel"]'
Q2='//s:senml[@u = "V"]'
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp" /var/run/dpdk/"$wm_eal_prefix"* 2>/dev/null || true
}
trap cleanup EXIT
printf 'senml %s s=%s\n' "$S/senml.gen.xsd" "$NS" > "$tmp/schemas.txt"
echo "<sensml xmlns='$NS'><senml n='t' u='V' v='3'/><senml n='t' u='Cel' v='21.5'/></sensml>" > "$tmp/cel.xml"
echo "<sensml xmlns='$NS'><senml n='t' u='V' v='30'/></sensml>" > "$tmp/v.xml"
for d in cel v; do
  "$B/wmctl" exi encode --schema "$S/senml.gen.xsd" --header-options "$tmp/$d.xml" "$tmp/$d.exi" || fail "encode $d"
done
CT='application/exi; schema=senml'

. "$R/tests/integration/lib/lo_capture.sh"
record() {
  lo_capture_start "$tmp/c.pcap"
  local port=$lo_port
  sub() { timeout 10 mosquitto_sub -V mqttv5 -p "$port" -i rs -c -x 600 -q 1 -t t/r -E -D SUBSCRIBE user-property xpath "$1" > /dev/null; }
  pub() { timeout 10 mosquitto_pub -V mqttv5 -p "$port" -i rp -q 1 -t t/r -f "$tmp/$1.exi" -D PUBLISH content-type "$CT"; }
  sub "$Q1" || fail "first SUBSCRIBE"
  sub '//q:senml' || fail "refused re-SUBSCRIBE"
  pub cel && pub v || fail "publish"
  sub "$Q2" || fail "accepted re-SUBSCRIBE"
  pub cel && pub v || fail "publish"
  lo_capture_stop
  rport=$port
  lo_capture_counts
  syns=$lo_syns holes=$lo_holes fins=$lo_fins
  [ "$syns" -eq 7 ] && [ "$holes" -eq 0 ] && [ "$fins" -eq 14 ] && [ "$lo_rsts" -eq 0 ]
}
ok=0
for attempt in 1 2 3; do
  if record; then ok=1; break; fi
  echo "capture attempt $attempt incomplete ($syns connections, $holes holes, $fins FINs)"
done
[ $ok = 1 ] || fail "no complete capture in 3 attempts"
# the broker's side, for the record: it granted all three SUBSCRIBEs (it knows nothing of xpath)
grants=$(tshark -r "$tmp/c.pcap" -d "tcp.port==$rport,mqtt" -Y 'mqtt.msgtype == 9' -T fields -e frame.number | wc -l)
[ "$grants" -eq 3 ] || fail "expected 3 SUBACKs in the capture, found $grants"

timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/c.pcap" -- --mqtt-port "$rport" \
  --schemas "$tmp/schemas.txt" --match-log "$tmp/match.jsonl" --summary "$tmp/sum.json" \
  2> "$tmp/wm.log" || { cat "$tmp/wm.log"; fail "wirematch exited $?"; }
got=$(jq -c '.matched' "$tmp/match.jsonl" | tr '\n' ' ')
want='["rs#t/r"] [] ["rs#t/r"] ["rs#t/r"] '
[ "$got" = "$want" ] || fail "match log: got '$got', want '$want' (cel, v after the refused re-SUBSCRIBE; cel, v after the accepted one)"
M=$(jq -c '.match | {subs_live, subs_refused_kept, subs_replaced, subs_xpath_refused, subs_replace_pending}' "$tmp/sum.json")
[ "$M" = '{"subs_live":1,"subs_refused_kept":1,"subs_replaced":1,"subs_xpath_refused":1,"subs_replace_pending":0}' ] \
  || fail "match counters: $M"
grep -q '"last_xpath_error": *"rs: ' "$tmp/sum.json" || jq -e '.match.last_xpath_error | startswith("rs: ")' "$tmp/sum.json" >/dev/null \
  || fail "last_xpath_error: $(jq -c .match.last_xpath_error "$tmp/sum.json")"
jq -e '.conservation.publish_hold' "$tmp/sum.json" > /dev/null || fail "publish conservation"
echo "dataplane_resub_content: a re-SUBSCRIBE refused at its compile keeps the filter in force (real mosquitto clients: 4 publications, refused_kept 1, replaced 1)"
