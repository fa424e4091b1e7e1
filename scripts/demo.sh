#!/usr/bin/env bash
# make demo: the main job on real input.
#  1. resolves the Monaco example neighborhoods over the OpenStreetMap world
#     (wmctl resolve -> build/demo/monaco.wmr);
#  2. takes the committed capture tests/data/demo.pcap (real mosquitto broker
#     and clients, scripts/capture-demo.sh), or records one if it is absent;
#  3. replays it through build/wirematch on net_pcap without hugepages, with
#     matching, the match log and --tx matched;
#  4. prints a short summary: packets, PUBLISHes, matches per subscription,
#     rate. Leaves build/demo/match.jsonl, build/demo/matched.pcap (opens in
#     Wireshark) and build/demo/summary.json.
set -euo pipefail
B=${WM_BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
S=${WM_SHARED:-$ROOT/../shared}
OUT=$B/demo
mkdir -p "$OUT"
W=$S/data/world
"$B/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$OUT/monaco.wmr"
CAP=$ROOT/tests/data/demo.pcap
if [ ! -f "$CAP" ]; then
  echo "demo: no tests/data/demo.pcap; recording one with scripts/capture-demo.sh"
  WM_SHARED=$S bash "$ROOT/scripts/capture-demo.sh" "$OUT/demo.pcap" "$OUT/demo-plan.json" > "$OUT/capture.log" 2>&1
  CAP=$OUT/demo.pcap
fi
# The broker port: the destination of the capture's first SYN.
PORT=$(tshark -r "$CAP" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e tcp.dstport -c 1 2>/dev/null)
rm -f "$OUT/matched.pcap"
"$B/wirematch" -l 0-1 --no-huge --no-pci --no-shconf --file-prefix "wmdemo$$" --log-level=lib.eal:error \
  --vdev "net_pcap0,rx_pcap=$CAP,tx_pcap=$OUT/matched.pcap" -- \
  --mqtt-port "$PORT" --resolution "$OUT/monaco.wmr" --match-log "$OUT/match.jsonl" --tx matched \
  --summary "$OUT/summary.json" 2> "$OUT/wirematch.log"
python3 - "$OUT" "$CAP" <<'EOF'
import collections, json, sys
out, cap = sys.argv[1], sys.argv[2]
s = json.load(open(out + "/summary.json"))
per = collections.Counter()
lines = 0
for l in open(out + "/match.jsonl"):
    lines += 1
    for k in json.loads(l)["matched"]:
        per[k] += 1
p, c = s["publish"], s["conservation"]
print("wirematch demo: %s" % cap)
print("  packets   %d received, %d TCP, conservation %s" % (s["packets"]["rx"], s["packets"]["tcp"],
      "holds" if c["packets_hold"] and c["publish_hold"] else "BROKEN"))
print("  PUBLISH   %d seen: %d matched, %d no match, %d other (malformed/dropped)"
      % (p["seen"], p["matched"], p["no_match"], p["seen"] - p["matched"] - p["no_match"]))
print("  subscriptions learned %d, live %d (refused for an unknown neighborhood: %d); matches of the %d with any:"
      % (s["mqtt"]["subs_installed"], s["match"]["subs_live"], s["mqtt"]["subs_nbhd_unknown"], len(per)))
for k, n in sorted(per.items()):
    print("    %-40s %6d matches" % (k, n))
print("  rate      %.0f packets/s over %.3f s (replay from file, one worker)" % (s["rx_pps"], s["elapsed_s"]))
print("  outputs   %s/match.jsonl (%d lines), %s/matched.pcap (%d frames), %s/summary.json"
      % (out, lines, out, s["tx"]["packets"], out))
EOF
