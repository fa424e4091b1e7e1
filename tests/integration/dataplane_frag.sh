#!/usr/bin/env bash
# IPv4 reassembly in the data plane (dataplane/ip_reasm.h, librte_ip_frag):
# a crafted capture (dataplane_mqtt_pcap.py frag) where a publisher's
# PUBLISHes ride in IPv4 fragments — #1 in order, #2 in reverse order, #3
# out of order plus a duplicate fragment after it completed, #4 missing its
# first fragment — must give exactly the PUBLISHes tshark's own reassembly
# decodes (f/1, f/2, f/3), all matched; the duplicate and #4's two fragments
# are freed by the timeout/shutdown and counted; the sums hold with
# rx + reassembled = counted. With --frag-max 0 the fragments are counted
# and dropped as before, and no PUBLISH is seen.
. "$(dirname "$0")/lib/dataplane_env.sh" wmfr
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" frag "$tmp/frag.pcap" 1883 > "$tmp/expect.json"
tshark -r "$tmp/frag.pcap" -Y 'mqtt.msgtype == 3' -T fields -e mqtt.topic 2>/dev/null > "$tmp/tshark_topics"
EAL+=(--log-level=user1:error)
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/frag.pcap" -- --mqtt-port 1883 \
  --match-log "$tmp/match.jsonl" --frag-timeout-ms 50 --idle-exit-ms 300 --summary "$tmp/on.json" 2> "$tmp/on.log" \
  || { cat "$tmp/on.log"; fail "wirematch exited $?"; }
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/frag.pcap" -- --mqtt-port 1883 \
  --match-log "$tmp/off.jsonl" --frag-max 0 --summary "$tmp/off.json" 2> "$tmp/off.log" \
  || { cat "$tmp/off.log"; fail "wirematch --frag-max 0 exited $?"; }
python3 - "$tmp" <<'EOF' || fail "reassembly counters or match log"
import json, sys
tmp = sys.argv[1]
e = json.load(open(tmp + "/expect.json"))
on, off = json.load(open(tmp + "/on.json")), json.load(open(tmp + "/off.json"))
want = [t for t in open(tmp + "/tshark_topics").read().split() if t]
assert want == ["f/1", "f/2", "f/3"], want
lines = [json.loads(l) for l in open(tmp + "/match.jsonl")]
assert [l["topic"] for l in lines] == want, lines
assert all(l["matched"] == ["sub#1"] for l in lines), lines
r, p, c = on["ip_reasm"], on["packets"], on["conservation"]
assert r == {"fragments": e["fragments"], "reassembled": e["reassembled"], "freed": 3, "unusable": 0}, r
assert p["ip_fragment"] == e["fragments"] and p["reassembled"] == e["reassembled"], p
assert on["publish"]["seen"] == on["publish"]["matched"] == e["publish_matched"], on["publish"]
assert c["packets_hold"] and c["publish_hold"] and c["rx"] + c["reassembled"] == c["counted"], c
assert "ip_reasm" not in off and off["packets"]["reassembled"] == 0, off["packets"]
assert off["packets"]["ip_fragment"] == e["fragments"] and off["publish"]["seen"] == 0, off["publish"]
assert off["conservation"]["packets_hold"], off["conservation"]
print("ip reassembly: %d fragments -> %d datagrams (in order, reversed, duplicate, one lost), %d freed; "
      "PUBLISHes %s as tshark; --frag-max 0: dropped" % (r["fragments"], r["reassembled"], r["freed"], " ".join(want)))
EOF
