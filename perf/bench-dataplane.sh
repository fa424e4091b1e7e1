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
# no_table or if none matches. The capture is replayed from memory
# (net_pcap infinite_rx=1) on one worker lcore
# (-l 0-1: main + worker), alternately by
#   dpdk-testpmd --forward-mode=io   (receive and transmit, nothing else)
#   build/wirematch                  (parse, flows, reassembly, MQTT, match)
# ROUNDS times each; each run lasts SECONDS. Two ratios, wirematch / testpmd:
#   ratio      wall-clock rates, medians of the per-second samples after the
#              first (what the issue asks for; on a shared machine it also
#              measures how much CPU each run happened to get);
#   ratio_cpu  packets per CPU second, from a SHORT and a long run of each
#              (see cpu_rate): robust against the machine's other load.
# Cycles per packet come from wirematch's own rte_rdtsc histogram
# (processing only, without the PMD's receive).
#
# usage: bench-dataplane.sh BUILD_DIR   (env: SECONDS_PER_RUN=6 SHORT_SECONDS=2 ROUNDS=2
#        PUBLISHES=66000, i.e. a capture of about 100,000 frames; GEN_ARGS)
# Prints one human line per run, then a JSON line with the figures.
set -euo pipefail
B=${1:-build}
T=${SECONDS_PER_RUN:-6}
SHORT=${SHORT_SECONDS:-2}
ROUNDS=${ROUNDS:-2}
PUBLISHES=${PUBLISHES:-66000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/wmbench$$* 2>/dev/null || true' EXIT

# GEN_ARGS: more generator options, e.g. "--publishers 2000 --interleave".
# shellcheck disable=SC2086
gen=$(python3 perf/gen_spaps_pcap.py "$tmp/spaps.pcap" --publishes "$PUBLISHES" ${GEN_ARGS:-} \
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

median() { awk 'NF' | sort -n | awk '{v[NR] = $1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'; }

# Each run prints "PPS PACKETS CPU_SECONDS": the median of its per-second
# rates (first second dropped), the packets it received in all, and the CPU
# time of the whole process (user + system, /usr/bin/time).
run_testpmd() {
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" timeout -s INT "$1" dpdk-testpmd "${EAL[@]}" --file-prefix "wmbench$$" \
    --vdev "$vdev" -- --forward-mode=io --nb-cores=1 --total-num-mbufs="$mbufs" --stats-period 1 -a \
    < /dev/null > "$tmp/testpmd.log" 2>&1 || true
  # "Rx-pps:  1234567  Rx-bps: ..." once per second; drop the first sample.
  pps=$(sed -nE 's/.*Rx-pps: *([0-9]+).*/\1/p' "$tmp/testpmd.log" | tail -n +2 | awk '$1 > 0' | median)
  # The last "RX-packets:" is the accumulated line printed at exit.
  pk=$(sed -nE 's/.*RX-packets: *([0-9]+).*/\1/p' "$tmp/testpmd.log" | tail -1)
  echo "$pps ${pk:-0} $(tail -1 "$tmp/cpu" | awk '{print $1 + $2}')"
}

run_wirematch() {
  rm -f "$tmp/wm.json"
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" timeout -s INT "$1" "$B/wirematch" "${EAL[@]}" --file-prefix "wmbench$$" \
    --vdev "$vdev" -- --resolution "$tmp/spaps.wmr" --subs "$tmp/subs.jsonl" \
    --mbufs "$mbufs" --stats-interval 1 --summary "$tmp/wm.json" > "$tmp/wm.log" 2>&1 || true
  if [ ! -s "$tmp/wm.json" ]; then echo "bench-dataplane: wirematch wrote no summary:" >&2; tail -5 "$tmp/wm.log" >&2; exit 1; fi
  pps=$(sed -nE 's/.* rx_pps ([0-9]+) .*/\1/p' "$tmp/wm.log" | tail -n +2 | awk '$1 > 0' | median)
  echo "$pps $(jq .conservation.rx "$tmp/wm.json") $(tail -1 "$tmp/cpu" | awk '{print $1 + $2}')"
}

# Packets per CPU second between a short and a long run of the same
# program: the difference cancels start-up (capture load, mbuf pool,
# tables) and, unlike wall-clock rates, does not count time the shared
# machine gave to other processes. Args: the two "PPS PACKETS CPU" lines.
cpu_rate() { awk -v a="$1" -v b="$2" 'BEGIN {split(a, s); split(b, l); d = l[3] - s[3];
  if (d <= 0.2) print 0; else printf "%.0f\n", (l[2] - s[2]) / d}'; }

tp=(); wm=(); tpc=(); wmc=()
for r in $(seq "$ROUNDS"); do
  xs=$(run_testpmd "$SHORT"); x=$(run_testpmd "$T")
  tp+=("${x%% *}"); tpc+=("$(cpu_rate "$xs" "$x")")
  echo "round $r: testpmd io-forward ${x%% *} pps (wall clock), ${tpc[-1]} packets per CPU second"
  ys=$(run_wirematch "$SHORT"); y=$(run_wirematch "$T")
  wm+=("${y%% *}"); wmc+=("$(cpu_rate "$ys" "$y")")
  echo "round $r: wirematch         ${y%% *} pps (wall clock), ${wmc[-1]} packets per CPU second"
  jq -c '{conservation, publish: {seen: .publish.seen, matched: .publish.matched, no_match: .publish.no_match, no_table: .publish.no_table}, subs: .match.subs_preloaded, cycles_per_packet: (.cycles_per_packet | {mean, p25, p50, p75, p90, p99})}' "$tmp/wm.json"
  # A run that received nothing did not get going before its end (start-up
  # on a loaded machine): reported, left out of the medians, not judged.
  if [ "$(jq .conservation.rx "$tmp/wm.json")" = 0 ]; then echo "round $r: wirematch received nothing (start-up too slow); run ignored"; continue; fi
  # Honesty checks: the matcher saw every PUBLISH, some matched, sums hold.
  jq -e '.publish.no_table == 0 and .publish.matched > 0 and .match.subs_preloaded == 1000 and .conservation.publish_hold and .conservation.packets_hold' \
    "$tmp/wm.json" > /dev/null || { echo "bench-dataplane: run not valid (no_table, no match, subscriptions or conservation)" >&2; exit 1; }
done
# A run that measured nothing (0: it did not get going in time on a loaded
# machine) is reported above but left out of the medians.
tp=($(printf '%s\n' "${tp[@]}" | awk '$1 > 0')); wm=($(printf '%s\n' "${wm[@]}" | awk '$1 > 0'))
tpc=($(printf '%s\n' "${tpc[@]}" | awk '$1 > 0')); wmc=($(printf '%s\n' "${wmc[@]}" | awk '$1 > 0'))
tpm=$(printf '%s\n' "${tp[@]}" | median)
wmm=$(printf '%s\n' "${wm[@]}" | median)
tpcm=$(printf '%s\n' "${tpc[@]}" | median)
wmcm=$(printf '%s\n' "${wmc[@]}" | median)
cyc=$(jq -c '.cycles_per_packet | {mean, p25, p50, p75, p90, p99, histogram}' "$tmp/wm.json")
python3 - "$tpm" "$wmm" "$cyc" "$gen" "$tpcm" "$wmcm" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, sys
tp, wm = float(sys.argv[1]), float(sys.argv[2])
tpc, wmc = float(sys.argv[5]), float(sys.argv[6])
out = {"testpmd_mpps": round(tp / 1e6, 3), "wirematch_mpps": round(wm / 1e6, 3),
       "ratio": round(wm / tp, 3) if tp else None,
       "testpmd_mpps_per_cpu_s": round(tpc / 1e6, 3), "wirematch_mpps_per_cpu_s": round(wmc / 1e6, 3),
       "ratio_cpu": round(wmc / tpc, 3) if tpc else None, "loadavg": sys.argv[7],
       "cycles_per_packet": json.loads(sys.argv[3]), "capture": json.loads(sys.argv[4])}
print(json.dumps(out))
EOF
