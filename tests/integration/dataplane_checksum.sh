#!/usr/bin/env bash
# IPv4 header checksums in the data plane (dataplane/pkt_parse.h): a crafted
# capture (dataplane_mqtt_pcap.py csum) where a copy of a publisher's
# segment with a wrong IPv4 header checksum, carrying PUBLISH evil/x, comes
# before the true segment (PUBLISH good/x, same sequence number). Every real
# receiver drops the bad frame (tshark flags exactly it), so the match log
# must show good/x matched by S#1 and no evil/x; the frame is counted as
# packets.ip4_bad_checksum, the true segment is delivered (not a duplicate)
# and the conservation sums hold. Before the check, "first copy wins" made
# evil/x the stream's bytes and dropped good/x as a duplicate.
. "$(dirname "$0")/lib/dataplane_env.sh" wmck
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" csum "$tmp/csum.pcap" 1883 > "$tmp/expect.json"
tshark -r "$tmp/csum.pcap" -o ip.check_checksum:TRUE -Y 'ip.checksum.status == 0' -T fields -e frame.number \
  2>/dev/null > "$tmp/tshark_bad"
echo '{"id":"pre","client":"zz","filter":"zz"}' > "$tmp/subs.jsonl"
EAL+=(--log-level=user1:error)
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/csum.pcap" -- --mqtt-port 1883 \
  --subs "$tmp/subs.jsonl" --match-log "$tmp/match.jsonl" --summary "$tmp/sum.json" 2> "$tmp/wm.log" \
  || { cat "$tmp/wm.log"; fail "wirematch exited $?"; }
python3 - "$tmp" <<'PY' || fail "checksum verdict, match log or counters"
import json, sys
tmp = sys.argv[1]
e = json.load(open(tmp + "/expect.json"))
bad = [int(x) for x in open(tmp + "/tshark_bad").read().split()]
assert bad == [e["bad_frame"]], ("tshark's bad frames", bad, e)
lines = [json.loads(l) for l in open(tmp + "/match.jsonl")]
assert [(l["topic"], l["matched"]) for l in lines] == [("good/x", ["S#1"])], lines
s = json.load(open(tmp + "/sum.json"))
p, seg, c = s["packets"], s["segments"], s["conservation"]
assert p["ip4_bad_checksum"] == 1, p
assert seg.get("duplicate", 0) == 0, seg
assert c["packets_hold"] and c["publish_hold"], c
print("ipv4 checksum: the bad frame (tshark frame %d) counted as ip4_bad_checksum, the true segment "
      "delivered: good/x matched S#1, no evil/x" % bad[0])
PY
