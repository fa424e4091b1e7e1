#!/usr/bin/env bash
# The main job on real input, checked against an independent reference:
# a real mosquitto broker with mosquitto_sub/mosquitto_pub clients (MQTT v5,
# nbhd user properties and subscription identifiers, peid user properties,
# QoS 0/1, topic aliases) recorded by scripts/capture-demo.sh (or the
# committed tests/data/demo.pcap), the Monaco example neighborhoods resolved
# by wmctl, replayed through build/wirematch on net_pcap with
# --no-huge --no-pci --no-shconf. The match log must equal, line for line,
# what dataplane_match_reference.py computes from tshark's decoding of the
# same capture and the resolution's JSON dump; --tx matched must write one
# frame per frame that carried a matched PUBLISH; --subs preloads and
# rejects a bad file with its line.
set -euo pipefail
B=${WM_BUILD:-build}
R=${WM_ROOT:-$PWD}
S=${WM_SHARED:-$R/../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/wmdm$$* 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; exit 1; }
W=$S/data/world
"$B/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$tmp/monaco.wmr" > /dev/null
"$B/wmctl" dump "$tmp/monaco.wmr" > "$tmp/monaco.json"

CAP=$R/tests/data/demo.pcap
if [ ! -f "$CAP" ]; then
  WM_SHARED=$S bash "$R/scripts/capture-demo.sh" "$tmp/demo.pcap" "$tmp/plan.json" > "$tmp/capture.log" 2>&1 \
    || { tail -5 "$tmp/capture.log"; fail "capture-demo.sh"; }
  CAP=$tmp/demo.pcap
fi
PORT=$(tshark -r "$CAP" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e tcp.dstport -c 1 2>/dev/null)
EAL=(-l 0 --no-huge --no-pci --no-shconf --file-prefix "wmdm$$" --log-level=lib.eal:error)

timeout 120 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$CAP,tx_pcap=$tmp/matched.pcap" -- \
  --mqtt-port "$PORT" --resolution "$tmp/monaco.wmr" --match-log "$tmp/match.jsonl" --tx matched \
  --summary "$tmp/summary.json" 2> "$tmp/wm.log" || { cat "$tmp/wm.log"; fail "wirematch exited $?"; }
ref=$(python3 "$R/tests/integration/dataplane_match_reference.py" "$CAP" "$PORT" "$tmp/monaco.json" "$tmp/match.jsonl") \
  || { echo "$ref"; fail "match log differs from the tshark reference"; }
# heap figures only where it runs on jemalloc (ldd read whole: grep -q would end the pipe early, and under
# pipefail the writer's SIGPIPE would read as "not linked")
JE=0; grep -q libjemalloc <<< "$(ldd "$B/wirematch")" && JE=1
python3 - "$tmp/summary.json" "$tmp/match.jsonl" "$JE" <<'EOF' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
m = s["memory"]  # the heap outside DPDK's memory (the match tables' builds, the content filters)
if sys.argv[3] == "1": assert m["allocator"] == "jemalloc" and 0 < m["allocated"] <= m["active"] <= min(m["resident"], m["mapped"]), m
else: assert m["allocator"] == "other" and set(m) == {"allocator", "process_rss", "process_peak_rss"}, m
assert m["process_rss"] > 0 and m["process_peak_rss"] > 0, m  # the kernel's figures, whatever the allocator
lines = [json.loads(l) for l in open(sys.argv[2])]
c, p = s["conservation"], s["publish"]
assert c["packets_hold"] and c["publish_hold"] and c["nic_rx_equals_rx"], c
assert p["seen"] == len(lines) == p["matched"] + p["no_match"], p
assert p["matched"] == sum(1 for l in lines if l["matched"]) > 0, p
assert s["mqtt"]["subs_nbhd_unknown"] >= 1, "the demo has a subscriber asking for an unknown neighborhood"
assert s["match"]["nbhds"] == 5, s["match"]
EOF
# --tx matched: exactly the frames that completed a matched PUBLISH.
tx=$(jq .tx.packets "$tmp/summary.json")
frames=$(tshark -r "$tmp/matched.pcap" 2>/dev/null | wc -l)
[ "$tx" -eq "$frames" ] && [ "$tx" -gt 0 ] || fail "--tx matched wrote $frames frames, summary says $tx"

# --subs: preloaded subscriptions are installed; a bad line is reported.
printf '{"id": "pre-x1", "client": "pre", "filter": "traffic/#", "nbhd": "X1"}\n{"id": 2, "client": "pre", "filter": "parking/#"}\n' > "$tmp/subs.jsonl"
timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$CAP" -- --mqtt-port "$PORT" \
  --resolution "$tmp/monaco.wmr" --subs "$tmp/subs.jsonl" --summary "$tmp/s2.json" --match-log "$tmp/m2.jsonl" 2>/dev/null
[ "$(jq .match.subs_preloaded "$tmp/s2.json")" = 2 ] || fail "--subs did not preload 2 subscriptions"
# Preloaded subscriptions are reported by their file id, exactly where they match.
python3 - "$tmp/m2.jsonl" "$tmp/monaco.json" <<'EOF' || fail "preloaded subscriptions in the match log"
import json, sys
x1 = set(json.load(open(sys.argv[2]))["X1"]["result"])
n = {"pre-x1": 0, "2": 0}
for l in open(sys.argv[1]):
    d = json.loads(l)
    want_x1 = d["topic"].startswith("traffic/") and any(p in x1 for p in d["peids"])
    want_2 = d["topic"].startswith("parking/")
    assert ("pre-x1" in d["matched"]) == want_x1, d
    assert ("2" in d["matched"]) == want_2, d
    n["pre-x1"] += want_x1
    n["2"] += want_2
assert n["pre-x1"] > 0 and n["2"] > 0, n
EOF
printf '{"id": 1, "client": "pre", "filter": "a/#", "nbhd": "nowhere"}\n' > "$tmp/bad.jsonl"
if timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$CAP" -- --mqtt-port "$PORT" \
  --resolution "$tmp/monaco.wmr" --subs "$tmp/bad.jsonl" > /dev/null 2> "$tmp/bad.log"; then
  fail "a --subs line naming an unknown neighborhood was accepted"
fi
grep -q 'bad.jsonl:1: "nbhd": unknown neighborhood "nowhere"' "$tmp/bad.log" || fail "bad --subs message: $(cat "$tmp/bad.log")"
echo "$ref; tx matched $tx frames; --subs ok"
