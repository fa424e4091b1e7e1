#!/usr/bin/env bash
# The MQTT session as the broker sees it (README "MQTT sessions"), replayed
# through build/wirematch on net_pcap from crafted captures
# (dataplane_mqtt_pcap.py "session" and "churn"):
#   - learned subscriptions end with their session: DISCONNECT or RST with
#     Session Expiry 0, a new connection of the client id with Clean Start 1,
#     a resumed connection the broker answers with Session Present 0; they
#     stay for a non-zero expiry and a resumed session; a $share group no
#     longer picks a member that left;
#   - a SUBSCRIBE counts only for the filters the broker's SUBACK grants; an
#     empty `nbhd` or `xpath` is refused, never a plain subscription;
#   - the broker's CONNACK limits (Topic Alias Maximum, Maximum Packet Size,
#     Maximum QoS, Retain Available) and its DISCONNECT: nothing it refused
#     or never received is matched; a refusing CONNACK: nothing the client
#     sent after its CONNECT (a PUBLISH before the CONNACK waits for it); nothing
#     after the client's own DISCONNECT or a second CONNECT (a Protocol Error
#     that ends the connection, not a new client id); a client id over 128
#     bytes is not followed, never cut into another client's;
#   - a QoS 2 message is matched at its PUBREL (as mosquitto delivers it),
#     once: sent again with DUP on a resumed session or with DUP 0 it is one
#     publication; a PUBREC with an error code releases its identifier and
#     the message is never delivered, nor is one whose session ends first;
#   - UNSUBSCRIBE takes effect at the UNSUBACK (0x00, 0x11), not when refused
#     or never answered;
#   - Wills are matched when the broker publishes them (lost connection,
#     DISCONNECT 0x04, the broker's DISCONNECT, Will Delay cut short by the
#     session's end or a new session), never after DISCONNECT 0x00 or when a
#     resumed session cancels the delay; subscriptions gone by then (the
#     Will's own session with Session Expiry 0) do not receive them;
#   - retained messages the broker sends for a new subscription are matched
#     to that subscriber;
#   - the broker sends nothing over a subscriber's Maximum Packet Size and
#     queues no QoS 0 for a detached session: not logged as reaching them;
#   - the flow table's eviction (table full) ends no session: a quiet
#     subscriber keeps its subscriptions;
#   - --max-subs bounds the table; clients that come and go never fill it,
#     one that asks for more is refused and counted.
# The match log must equal the lines the generator writes by hand AND the
# independent tshark-based reference (dataplane_match_reference.py).
. "$(dirname "$0")/lib/dataplane_env.sh" wmse
echo '{}' > "$tmp/res.json"

# replay N SCENARIO [ARGS] [-- WIREMATCH OPTIONS]: the generator's capture N.pcap (its expected lines in
# N-expect.json) replayed into N.jsonl / N.json, which must equal the tshark reference (its summary in $ref).
replay() {
  local n=$1 sc=$2 args=() wm=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; wm=("$@"); }
  python3 "$R/tests/integration/dataplane_mqtt_pcap.py" "$sc" "$tmp/$n.pcap" 1883 ${args[@]+"${args[@]}"} > "$tmp/$n-expect.json"
  timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/$n.pcap" -- ${wm[@]+"${wm[@]}"} \
    --match-log "$tmp/$n.jsonl" --summary "$tmp/$n.json" 2> "$tmp/wm.log" || { cat "$tmp/wm.log"; fail "$sc: exited $?"; }
  ref=$(python3 "$R/tests/integration/dataplane_match_reference.py" "$tmp/$n.pcap" 1883 "$tmp/res.json" \
    "$tmp/$n.jsonl") || { echo "$ref"; fail "$sc: match log differs from the tshark reference"; }
}
replay s session
sref=$ref
python3 - "$tmp" <<'EOF' || fail "session scenario"
import json, sys
tmp = sys.argv[1]
want = json.load(open("%s/s-expect.json" % tmp))
got = [json.loads(l) for l in open("%s/s.jsonl" % tmp)]
line = lambda g: [g["topic"], g["matched"]] + (["will"] if g.get("will") else [])
assert [line(g) for g in got] == want, "\n".join(
    "%-10s got %-24s want %s" % (w[0], line(g) if g else None, w)
    for g, w in zip(got + [None] * len(want), want) if g is None or line(g) != w) + "\n%d lines, want %d" % (
    len(got), len(want))
s = json.load(open("%s/s.json" % tmp))
mq, m, mal, p = s["mqtt"], s["match"], s["mqtt_malformed"], s["publish"]
# S: one filter refused by the broker, one SUBSCRIBE never acknowledged
assert mq["subs_refused_by_broker"] == 1 and mq["subscribes_unacknowledged"] == 1, mq
# A (DISCONNECT), F (RST), M1 (DISCONNECT): ended with their connection; E and K replaced by a new session
assert m["sessions_ended"] >= 3 and m["sessions_discarded"] == 2 and m["subs_session_ended"] >= 5, m
# the four limits: each refused PUBLISH counted by its reason, the client followed no further
assert mal["topic_alias_too_large"] == 1 and mal["packet_too_large"] == 1, mal
assert mq["limit_qos"] == 1 and mq["limit_retain"] == 1 and mq["server_disconnects"] == 5, mq
assert p["malformed"] == 4 and p["duplicate_qos2"] == 3 and mq["qos2_duplicates"] == 3, p
# QoS 2 at its PUBREL: 6 held, 5 released; b/r1 refused by the PUBREC 0x97, b/never's session ended first
assert mq["qos2_pubrec_errors"] == 1 and mq["qos2_duplicates_dup0"] == 1 and mq["qos2_held"] == 7, mq
assert mq["qos2_released"] == 5 and mq["qos2_waiting"] == 0 and mq["qos2_at_publish"] == 0, mq
assert p["dropped_refused_by_broker"] == 1 and p["dropped_session_ended"] == 1, p
# NE, XE: an empty nbhd / xpath is refused (no neighborhood, no query), never installed as a plain subscription
assert mq["subs_nbhd_unknown"] == 1 and mq["subs_xpath_invalid"] == 1 and m["subs_xpath_refused"] == 1, (mq, m)
# RF: refused, its two PUBLISHes (one pipelined, held for the CONNACK) never processed; PP's held one delivered
assert p["dropped_connect_refused"] == 1 and mq["publish_held"] == 2 and mq["unread_bytes"] > 0, (p, mq)
# SC: its second CONNECT is a Protocol Error; its session ended with the connection. LA, LB: ids over 128 bytes
assert mq["second_connect"] == 1 and mq["client_id_too_long"] == 2, mq
# GO: its SUBACK came after its DISCONNECT (expiry 0) ended the session
assert mq["subs_after_session_end"] == 1, mq
# the PUBACK 0x87 and the PUBREC 0x97: publications the broker refused, counted (their lines stay)
assert mq["publish_refused_by_broker"] == 2, mq
# U: one UNSUBSCRIBE answered 0x00, 0x11, 0x87; one never answered
assert (mq["unsubs_removed"], mq["unsubs_no_subscription"], mq["unsubs_refused_by_broker"],
        mq["unsubscribes_unacknowledged"]) == (1, 1, 1, 1), mq
# W1..W9 and T: 10 kept; W2 discarded; W5 cancelled; W5, W6, W9 delayed; W9 still waiting at the end
assert (mq["wills_kept"], mq["wills_published"], mq["wills_matched"], mq["wills_discarded"], mq["wills_cancelled"],
        mq["wills_delayed"], mq["wills_waiting"]) == (10, 7, 7, 1, 1, 3, 1), mq
assert s["conservation"]["publish_hold"] and s["conservation"]["packets_hold"], s["conservation"]
EOF

# Deliveries the broker does not make: a PUBLISH over the subscriber's Maximum Packet Size (exact boundary, QoS 0
# and 1, Topic Alias not forwarded), QoS 0 to a detached session (QoS 1 is queued). Before 2026-12-02 all of
# them were logged as reaching the subscriber.
replay g deliver
python3 - "$tmp" <<'EOF' || fail "deliveries"
import json, sys
tmp = sys.argv[1]
got = [json.loads(l) for l in open("%s/g.jsonl" % tmp)]
assert [[g["topic"], g["matched"]] for g in got] == json.load(open("%s/g-expect.json" % tmp)), got
assert [g.get("too_large_for") for g in got] == [None, ["MP#1"], None, None, ["MP#1"], None, None, None], got
assert [g.get("qos0_not_queued_for") for g in got] == [None] * 5 + [["OF#1", "OG#1"], ["OG#1"], ["OG#1"]], got
m = json.load(open("%s/g.json" % tmp))["match"]
assert (m["deliveries_too_large"], m["deliveries_qos0_offline"]) == (2, 4), m
EOF

# Retained messages the broker sends right after a SUBACK (RETAIN 1) are matched against that subscriber's own
# subscriptions, with its Subscription Identifier; RETAIN 1 elsewhere (Retain As Published forwarding) is not a
# second line. Before 2026-12-02 none of them had a line.
replay t retained
python3 - "$tmp" <<'EOF' || fail "retained"
import json, sys
tmp = sys.argv[1]
got = [json.loads(l) for l in open("%s/t.jsonl" % tmp)]
line = lambda g: [g["topic"], g["matched"]] + (["retained"] if g.get("retained") else [])
assert [line(g) for g in got] == json.load(open("%s/t-expect.json" % tmp)), got
assert [g["client"] for g in got] == ["pub", "R", "R", "R2", "pub"], got
mq = json.load(open("%s/t.json" % tmp))["mqtt"]
assert (mq["retained_sent"], mq["retained_matched"], mq["retained_forwarded"]) == (3, 3, 2), mq
EOF

# The flow table's eviction (--max-flows 4, 8 clients coming and going) loses sight of the quiet subscriber S's
# connection, which the broker still holds (Keep Alive 0): S's session and subscription stay (before 2026-12-02
# the eviction ended the session, and ev/x reached nobody).
replay e evict 8 -- --max-flows 4
python3 - "$tmp" <<'EOF' || fail "eviction"
import json, sys
tmp = sys.argv[1]
got = [[g["topic"], g["matched"]] for g in map(json.loads, open("%s/e.jsonl" % tmp))]
assert got == json.load(open("%s/e-expect.json" % tmp)), got
s = json.load(open("%s/e.json" % tmp))
assert s["flows"]["closed_evicted"] >= 1 and s["mqtt"]["sessions_unobserved"] == 1, (s["flows"], s["mqtt"])
assert s["conservation"]["publish_hold"], s["conservation"]
EOF

# --max-subs: 30 clients with 10 filters each come and go through a bound of 64; the last one is matched.
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" churn "$tmp/c.pcap" 1883 30 10 > /dev/null
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/c.pcap" -- --max-subs 64 \
  --match-log "$tmp/c.jsonl" --summary "$tmp/c.json" 2> "$tmp/wm.log" || { cat "$tmp/wm.log"; fail "churn exited $?"; }
# ... and one client asking for 70 is refused at least 6 of them (the table's bounds of distinct filters and
# wildcard-trie nodes derive from max_subs too: one more may go), counted; "live" comes after it left.
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" churn "$tmp/d.pcap" 1883 1 70 > /dev/null
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/d.pcap" -- --max-subs 64 \
  --match-log "$tmp/d.jsonl" --summary "$tmp/d.json" 2> "$tmp/wm.log" || { cat "$tmp/wm.log"; fail "bound exited $?"; }
python3 - "$tmp" <<'EOF' || fail "--max-subs"
import json, sys
tmp = sys.argv[1]
for name, full in (("c", (0, 0)), ("d", (6, 7))):
    got = [json.loads(l) for l in open("%s/%s.jsonl" % (tmp, name))]
    assert [g["matched"] for g in got] == [["live#1"]], (name, got)
    s = json.load(open("%s/%s.json" % (tmp, name)))
    mq = s["mqtt"]
    assert full[0] <= mq["subs_full"] == s["match"]["subs_full"] <= full[1], (name, mq, s["match"])
    assert mq["subs_rejected"] == 0 and mq["subs_installed"] + mq["subs_full"] == mq["subs_granted"], (name, mq)
EOF
# A real broker's Wills: mqtt5-clients.pcap's wm-will (SIGKILLed) has its Will delivered by mosquitto; the match
# log has a Will line for each Will the broker delivered, and agrees with the reference. With the Monaco
# resolution, wm-sub-all's wm/will/+ on X1 matches the Will's topic but not its peid: the spatial filter applies.
CAP=$R/tests/data/mqtt5-clients.pcap
W=${WM_SHARED:-$R/../shared}/data/world
"$B/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$tmp/monaco.wmr" > /dev/null
"$B/wmctl" dump "$tmp/monaco.wmr" > "$tmp/monaco.json"
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$CAP" -- --mqtt-port 54201 --summary "$tmp/w.json" \
  --resolution "$tmp/monaco.wmr" --match-log "$tmp/w.jsonl" 2> "$tmp/wm.log" || { cat "$tmp/wm.log"; fail "mqtt5-clients exited $?"; }
wref=$(python3 "$R/tests/integration/dataplane_match_reference.py" "$CAP" 54201 "$tmp/monaco.json" "$tmp/w.jsonl") \
  || { echo "$wref"; fail "mqtt5-clients: match log differs from the tshark reference"; }
python3 - "$tmp" <<'EOF' || fail "mqtt5-clients Will"
import json, sys
tmp = sys.argv[1]
w = [json.loads(l) for l in open("%s/w.jsonl" % tmp) if '"will"' in l]
x1 = set(json.load(open("%s/monaco.json" % tmp))["X1"]["result"])
assert [(d["client"], d["topic"], d["matched"]) for d in w] == [("wm-will", "wm/will/wm-will", [])], w
assert w[0]["peids"] and not set(w[0]["peids"]) & x1, w
EOF
wills=$(tshark -r "$CAP" -d tcp.port==54201,mqtt -Y 'mqtt.conflag.willflag==1' -T fields -e mqtt.willtopic 2>/dev/null | sort -u)
delivered=0
for t in $wills; do
  n=$(tshark -r "$CAP" -d tcp.port==54201,mqtt -Y "mqtt.msgtype==3 && tcp.srcport==54201 && mqtt.topic==\"$t\"" 2>/dev/null | wc -l)
  [ "$n" -gt 0 ] && delivered=$((delivered + 1))
done
logged=$(jq -s '[.[] | select(.will)] | length' "$tmp/w.jsonl")
[ "$delivered" -ge 1 ] && [ "$(jq .mqtt.wills_published "$tmp/w.json")" = "$delivered" ] && [ "$logged" = "$delivered" ] \
  || fail "wills_published $(jq .mqtt.wills_published "$tmp/w.json"), Will lines $logged, broker delivered $delivered Wills"
echo "$sref; mqtt5-clients.pcap: $delivered Will(s) the broker delivered matched, $wref; --max-subs 64: 300 subscriptions of departed clients never fill it, $(jq .mqtt.subs_full "$tmp/d.json") over it refused"
