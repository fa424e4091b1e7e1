#!/usr/bin/env bash
# make bench-dataplane: the data plane's packet rate on the spaPS workload
# against DPDK's forwarding limit, measured in the same run.
#
# A synthetic capture (perf/gen_spaps_pcap.py: Zipf peids, 100-200-byte
# PUBLISH frames, complete connections) is matched against the spatial side
# of the same workload: a synthetic world of 20,000 road segments, 50
# neighborhoods of exactly 2,000 peids resolved by `wmctl resolve` into a
# .wmr (--resolution), and 1,000 subscriptions on them (--subs). Every
# PUBLISH goes through the real matcher; the run fails if any ends as
# no_table or if none matches. The capture is replayed from memory (net_pcap infinite_rx=1) on one worker lcore
# (-l 0-1: main + worker), alternately by
#   dpdk-testpmd --forward-mode=io   (receive and transmit, nothing else)
#   build/wirematch                  (parse, flows, reassembly, MQTT, match)
# ROUNDS times each; each run lasts SECONDS. Rates are the medians of the
# per-second samples after the first; the ratio is wirematch / testpmd.
# Cycles per packet come from wirematch's own rte_rdtsc histogram
# (processing only, without the PMD's receive).
#
# usage: bench-dataplane.sh BUILD_DIR   (env: SECONDS_PER_RUN=6 ROUNDS=2 PUBLISHES=66000,
#        i.e. a capture of about 100,000 frames)
# Prints one human line per run, then a JSON line with the figures.
set -euo pipefail
B=${1:-build}
T=${SECONDS_PER_RUN:-6}
ROUNDS=${ROUNDS:-2}
PUBLISHES=${PUBLISHES:-66000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/wmbench$$* 2>/dev/null || true' EXIT

gen=$(python3 perf/gen_spaps_pcap.py "$tmp/spaps.pcap" --publishes "$PUBLISHES" \
        --world "$tmp/world.geojson" --nbhd "$tmp/spaps.nbhd" --subs-out "$tmp/subs.jsonl")
"$B/wmctl" resolve --world "$tmp/world.geojson" --nbhd "$tmp/spaps.nbhd" --out "$tmp/spaps.wmr"
# The resolution must hold what the workload promises: every neighborhood
# with exactly nbhd_size peids.
sizes=$("$B/wmctl" dump "$tmp/spaps.wmr" | jq -s -c '[.[] | to_entries[] | .value.result | length] | {n: length, min: min, max: max}')
want=$(jq -c '{n: .nbhds, min: .nbhd_size, max: .nbhd_size}' <<<"$gen")
if [ "$sizes" != "$want" ]; then
  echo "bench-dataplane: resolution has $sizes neighborhoods/sizes, expected $want" >&2
  exit 1
fi
frames=$(jq -r .frames <<<"$gen")
mbufs=$((frames + 16384))
vdev="net_pcap0,rx_pcap=$tmp/spaps.pcap,infinite_rx=1"
EAL=(-l 0-1 -m 1024 --no-huge --no-pci --no-shconf --log-level=lib.eal:error)
echo "bench-dataplane: capture $gen"
echo "bench-dataplane: resolution $tmp/spaps.wmr: $sizes (neighborhoods, peids each)"

median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'; }

run_testpmd() {
  timeout -s INT "$T" dpdk-testpmd "${EAL[@]}" --file-prefix "wmbench$$" --vdev "$vdev" -- \
    --forward-mode=io --nb-cores=1 --total-num-mbufs="$mbufs" --stats-period 1 -a \
    < /dev/null > "$tmp/testpmd.log" 2>&1 || true
  # "Rx-pps:  1234567  Rx-bps: ..." once per second; drop the first sample.
  sed -nE 's/.*Rx-pps: *([0-9]+).*/\1/p' "$tmp/testpmd.log" | tail -n +2 | awk '$1 > 0' | median
}

run_wirematch() {
  timeout -s INT "$T" "$B/wirematch" "${EAL[@]}" --file-prefix "wmbench$$" --vdev "$vdev" -- \
    --resolution "$tmp/spaps.wmr" --subs "$tmp/subs.jsonl" \
    --mbufs "$mbufs" --stats-interval 1 --summary "$tmp/wm.json" > "$tmp/wm.log" 2>&1 || true
  sed -nE 's/.* rx_pps ([0-9]+) .*/\1/p' "$tmp/wm.log" | tail -n +2 | awk '$1 > 0' | median
}

tp=(); wm=()
for r in $(seq "$ROUNDS"); do
  x=$(run_testpmd); tp+=("$x"); echo "round $r: testpmd io-forward $x pps"
  y=$(run_wirematch); wm+=("$y"); echo "round $r: wirematch         $y pps"
  if [ ! -s "$tmp/wm.json" ]; then echo "bench-dataplane: wirematch wrote no summary:" >&2; tail -5 "$tmp/wm.log" >&2; exit 1; fi
  jq -c '{conservation, publish: {seen: .publish.seen, matched: .publish.matched, no_match: .publish.no_match, no_table: .publish.no_table}, subs: .match.subs_preloaded, cycles_per_packet: (.cycles_per_packet | {mean, p50, p90, p99})}' "$tmp/wm.json"
  # Honesty checks: the matcher saw every PUBLISH, some matched, sums hold.
  jq -e '.publish.no_table == 0 and .publish.matched > 0 and .match.subs_preloaded == 1000 and .conservation.publish_hold and .conservation.packets_hold' \
    "$tmp/wm.json" > /dev/null || { echo "bench-dataplane: run not valid (no_table, no match, subscriptions or conservation)" >&2; exit 1; }
done
tpm=$(printf '%s\n' "${tp[@]}" | median)
wmm=$(printf '%s\n' "${wm[@]}" | median)
cyc=$(jq -c '.cycles_per_packet | {mean, p50, p90, p99, histogram}' "$tmp/wm.json")
python3 - "$tpm" "$wmm" "$cyc" "$gen" <<'EOF'
import json, sys
tp, wm = float(sys.argv[1]), float(sys.argv[2])
out = {"testpmd_mpps": round(tp / 1e6, 3), "wirematch_mpps": round(wm / 1e6, 3),
       "ratio": round(wm / tp, 3) if tp else None, "cycles_per_packet": json.loads(sys.argv[3]),
       "capture": json.loads(sys.argv[4])}
print(json.dumps(out))
EOF
