#!/usr/bin/env bash
# The load generator behind `make bench-proxy` (build/perf/mqtt_loadgen) is
# itself checked, so the bench's figures rest on a tool that counts right,
# against a real mosquitto and wirematch-proxy on 127.0.0.1:
#  - straight to mosquitto and through the proxy in pass-through, open and
#    closed loop: every expected delivery arrives (S subscribers x messages),
#    latency percentiles are ordered and the histogram sums to the deliveries;
#  - the spatial workload of the bench (scripts/gen_zone_world.py: 100 cells,
#    10 zones, resolved by `wmctl resolve`): through the proxy with
#    --resolution every subscriber gets exactly the 10 % of publications whose
#    peid is in its neighborhood (no unwanted delivery, none missing) and the
#    proxy's counters agree (forwarded + withheld = what the broker sent);
#    through the proxy without --resolution the loadgen sees the 90 % it does
#    not want and fails (exit 3): the check can fail;
#  - the spatial workload's reference (--nbhd-topics), mosquitto filtering by
#    topic: exactly the same 10 % arrive; the timeline (--slice-ms) holds
#    every delivery and the largest latency; each subscriber's own p50/p99
#    are ordered and within the run's largest latency;
#  - through a proxy that batches at any rate (--batch-rate 0, the mode it
#    uses under load), open and closed loop, plain and spatial: nothing lost,
#    nothing unwanted, and its summary shows that it did wait for batches;
#  - the paired measurement (--pair-port, the bench's added-latency figure):
#    every message goes both straight to mosquitto and through the proxy, and
#    every (message, subscriber) pair is matched, in pass-through and spatial
#    (path D filtered by topic, path P by the proxy's nbhd); the per-path
#    histograms hold each path's deliveries, the difference's histogram its
#    pairs; through a proxy that does not filter, path P's extra deliveries
#    fail the run; the stall meter (--stall-us) counts its wake-ups;
#    --pair-port in closed loop is refused.
# Bounded: a few thousand messages per run; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
LG=$BUILD/perf/mqtt_loadgen; WMCTL=$BUILD/wmctl
[ -x "$LG" ] || fail "$LG not built"
t0=$(date +%s)

python3 "$WM_ROOT/scripts/gen_zone_world.py" "$TMP/w" 100 10 || fail "gen_zone_world"
"$WMCTL" resolve --world "$TMP/w/world.geojson" --nbhd "$TMP/w/zones.nbhd" --out "$TMP/w/zones.wmr" || fail "wmctl resolve --out"
"$WMCTL" resolve --world "$TMP/w/world.geojson" --nbhd "$TMP/w/zones.nbhd" --json |
  jq -r 'to_entries[] | .key + " " + (.value.result | join(" "))' > "$TMP/w/nbhds" || fail "wmctl resolve --json"
[ "$(wc -l < "$TMP/w/nbhds")" -eq 10 ] || fail "expected 10 neighborhoods: $(cat "$TMP/w/nbhds")"
[ "$(head -1 "$TMP/w/nbhds")" = "Z00 c000 c001 c002 c003 c004 c005 c006 c007 c008 c009" ] || fail "Z00: $(head -1 "$TMP/w/nbhds")"

px_broker "max_queued_messages 100000"
px_proxy plain
px_proxy spatial --resolution "$TMP/w/zones.wmr"
px_proxy batched --batch-rate 0 --batch-wait-us 200 --resolution "$TMP/w/zones.wmr"

# lg NAME PORT ARGS...: one run, JSON in $TMP/NAME.lg, exit status in $lg_rc
lg() {
  local name=$1 port=$2; shift 2
  lg_rc=0
  timeout 40 "$LG" --port "$port" --subs 4 --pubs 2 --drain 10 "$@" > "$TMP/$name.lg" 2> "$TMP/$name.err" || lg_rc=$?
  jq -e . "$TMP/$name.lg" > /dev/null 2>&1 || fail "$name: no JSON (rc $lg_rc): $(cat "$TMP/$name.err")"
}
v() { jq -r "$2" "$TMP/$1.lg"; }
# check_plain NAME: all deliveries, sane latency figures
check_plain() {
  [ "$lg_rc" -eq 0 ] || fail "$1: exit $lg_rc: $(cut -c1-300 "$TMP/$1.lg") $(cat "$TMP/$1.err")"
  [ "$(v "$1" .delivered)" -eq $(( 4 * $(v "$1" .published) )) ] || fail "$1: delivered $(v "$1" .delivered) of 4 x $(v "$1" .published)"
  [ "$(v "$1" '[.hist[][1]] | add')" -eq "$(v "$1" .delivered)" ] || fail "$1: histogram does not sum to the deliveries"
  v "$1" '.latency_us | .p50 <= .p90 and .p90 <= .p99 and .p99 <= .max' | grep -qx true || fail "$1: percentiles out of order"
  check_timeline "$1"
  # each subscriber's p50 <= p99 <= the run's max
  jq -e '.latency_us.max as $m | (.subs_latency_us | length) == 4 and all(.subs_latency_us[]; .[0] <= .[1] and .[1] <= $m)' \
    "$TMP/$1.lg" > /dev/null || fail "$1: per-subscriber latencies: $(jq -c .subs_latency_us "$TMP/$1.lg")"
}
# check_timeline NAME: the timeline's slices hold every delivery, and the slowest one
check_timeline() {
  [ "$(v "$1" '[.timeline[][0]] | add')" -eq "$(v "$1" .delivered)" ] || fail "$1: timeline does not sum to the deliveries"
  [ "$(v "$1" '[.timeline[][1]] | max')" -eq "$(v "$1" .latency_us.max)" ] || fail "$1: timeline's largest latency is not the max"
}

lg direct_open "$BPORT" --rate 2000 --count 2000 --duration 10;            check_plain direct_open
lg proxy_open "$PORT_plain" --rate 2000 --count 2000 --duration 10;        check_plain proxy_open
lg proxy_closed "$PORT_plain" --rate 0 --window 500 --count 5000 --duration 10; check_plain proxy_closed
[ "$(v direct_open .published)" -eq 2000 ] || fail "--count not honoured: $(v direct_open .published)"

# Spatial: 3000 publications over 100 peids, 4 subscribers in Z00..Z03: 300 each.
SP=(--peids "$TMP/w/peids" --nbhds "$TMP/w/nbhds" --count 3000 --duration 10)
lg spatial "$PORT_spatial" --rate 3000 "${SP[@]}"
[ "$lg_rc" -eq 0 ] || fail "spatial: exit $lg_rc: $(cut -c1-300 "$TMP/spatial.lg") $(cat "$TMP/spatial.err")"
[ "$(v spatial .expected)" -eq 1200 ] && [ "$(v spatial .delivered)" -eq 1200 ] && [ "$(v spatial .unwanted)" -eq 0 ] ||
  fail "spatial: $(jq -c '{published, expected, delivered, unwanted}' "$TMP/spatial.lg")"
lg spatial_closed "$PORT_spatial" --rate 0 --window 100 "${SP[@]}"
[ "$lg_rc" -eq 0 ] && [ "$(v spatial_closed .delivered)" -eq 1200 ] || fail "spatial closed loop: $(jq -c '{published, expected, delivered, unwanted}' "$TMP/spatial_closed.lg")"
check_timeline spatial
# The spatial references (--nbhd-topics): mosquitto alone sends each subscriber the same 10 %,
# filtering by topic; without --nbhds every subscriber takes all 100 peids' topics.
lg direct_sp "$BPORT" --rate 3000 --nbhd-topics "${SP[@]}"
[ "$lg_rc" -eq 0 ] && [ "$(v direct_sp .expected)" -eq 1200 ] && [ "$(v direct_sp .delivered)" -eq 1200 ] && [ "$(v direct_sp .unwanted)" -eq 0 ] ||
  fail "direct --nbhd-topics: rc $lg_rc, $(jq -c '{published, expected, delivered, unwanted}' "$TMP/direct_sp.lg")"
lg direct_sp_all "$BPORT" --rate 3000 --nbhd-topics --peids "$TMP/w/peids" --count 3000 --duration 10
[ "$lg_rc" -eq 0 ] && [ "$(v direct_sp_all .delivered)" -eq 12000 ] ||
  fail "direct --nbhd-topics, all peids: rc $lg_rc, $(jq -c '{published, expected, delivered, unwanted}' "$TMP/direct_sp_all.lg")"
# Without --resolution nothing is filtered: the loadgen must notice and fail.
lg unfiltered "$PORT_plain" --rate 3000 "${SP[@]}"
# (the run ends once the wanted ones are in, so a few unwanted ones may still be on the way)
[ "$lg_rc" -eq 3 ] && [ "$(v unfiltered .unwanted)" -ge 1000 ] && [ "$(v unfiltered .unwanted)" -le 10800 ] ||
  fail "unfiltered: rc $lg_rc, $(jq -c '{published, expected, delivered, unwanted}' "$TMP/unfiltered.lg")"

# Batching at any rate: the relay must stay exact (the bench's saturation runs are in this mode).
lg batched_open "$PORT_batched" --rate 2000 --count 2000 --duration 10;            check_plain batched_open
lg batched_closed "$PORT_batched" --rate 0 --window 500 --count 5000 --duration 10; check_plain batched_closed
lg batched_spatial "$PORT_batched" --rate 0 --window 100 "${SP[@]}"
[ "$lg_rc" -eq 0 ] && [ "$(v batched_spatial .delivered)" -eq 1200 ] || fail "batched spatial: $(jq -c '{published, expected, delivered, unwanted}' "$TMP/batched_spatial.lg")"
px_stop "$PID_batched" || fail "batching proxy exited with rc $?"
bw=$(jq '.io_uring.batched_waits' "$TMP/batched.json")
[ "$bw" -gt 0 ] || fail "--batch-rate 0: no batched wait in $(jq -c .io_uring "$TMP/batched.json")"

# Paired: each message on path D (mosquitto) and path P (the proxy), the same sequence number.
# check_paired NAME PUBLISHED PAIRS: all matched, counts and histograms consistent
check_paired() {
  local n=$1 pub=$2 pairs=$3
  [ "$lg_rc" -eq 0 ] || fail "$n: exit $lg_rc: $(cut -c1-300 "$TMP/$n.lg") $(cat "$TMP/$n.err")"
  [ "$(v "$n" .published)" -eq "$pub" ] || fail "$n: published $(v "$n" .published)"
  [ "$(v "$n" .delivered)" -eq $(( 2 * pairs )) ] && [ "$(v "$n" .expected)" -eq $(( 2 * pairs )) ] ||
    fail "$n: delivered $(v "$n" .delivered), expected $(v "$n" .expected), not 2 x $pairs"
  [ "$(v "$n" .pair.d.delivered)" -eq "$pairs" ] && [ "$(v "$n" .pair.p.delivered)" -eq "$pairs" ] ||
    fail "$n: per path $(jq -c '[.pair.d.delivered, .pair.p.delivered]' "$TMP/$n.lg")"
  [ "$(v "$n" .added_us.pairs)" -eq "$pairs" ] && [ "$(v "$n" .added_us_kernel.pairs)" -eq "$pairs" ] &&
    [ "$(v "$n" .added_us.lost_d)" -eq 0 ] && [ "$(v "$n" .added_us.lost_p)" -eq 0 ] ||
    fail "$n: pairs $(jq -c '.added_us | del(.hist)' "$TMP/$n.lg"), kernel $(v "$n" .added_us_kernel.pairs)"
  jq -e '([.added_us.hist[][1]] | add) == .added_us.pairs and ([.pair.d.hist[][1]] | add) == .pair.d.delivered
         and ([.pair.p.hist[][1]] | add) == .pair.p.delivered
         and (.added_us | .min <= .p50 and .p50 <= .p90 and .p90 <= .p99 and .p99 <= .p999 and .p999 <= .max)
         and ([.added_us.hist[][0]] | . == sort)' "$TMP/$n.lg" > /dev/null ||
    fail "$n: pair histograms or percentiles: $(jq -c '{added_us, pair: (.pair | map_values(del(.hist)))}' "$TMP/$n.lg" | cut -c1-600)"
}
lg paired "$BPORT" --pair-port "$PORT_plain" --rate 2000 --count 2000 --duration 10 --stall-us 500
check_paired paired 2000 8000
# The stall meter woke (about 2 per ms of the run) and its histogram holds every wake-up.
jq -e '.stall | .wakeups > 100 and ([.hist[][1]] | add) == .wakeups and .late_us.p50 <= .late_us.p99 and .late_us.p99 <= .late_us.max
       and .sched == "other" and .over_1ms <= .wakeups' "$TMP/paired.lg" > /dev/null || fail "stall meter: $(jq -c '.stall | del(.hist, .timeline)' "$TMP/paired.lg")"
jq -e '.added_us_quiet.pairs <= .added_us.pairs' "$TMP/paired.lg" > /dev/null || fail "quiet pairs: $(jq -c '.added_us_quiet | del(.hist)' "$TMP/paired.lg")"
# Spatial: path D by topic (the broker filters), path P by nbhd through the spatial proxy: the same 10 %.
lg paired_sp "$BPORT" --pair-port "$PORT_spatial" --rate 3000 "${SP[@]}"
check_paired paired_sp 3000 1200
[ "$(v paired_sp .unwanted)" -eq 0 ] || fail "paired spatial: unwanted $(v paired_sp .unwanted)"
# Path P through a proxy that does not filter: its extra deliveries fail the run, the wanted ones still pair.
lg paired_unfiltered "$BPORT" --pair-port "$PORT_plain" --rate 3000 "${SP[@]}"
[ "$lg_rc" -eq 3 ] && [ "$(v paired_unfiltered .unwanted)" -ge 1000 ] && [ "$(v paired_unfiltered .added_us.pairs)" -eq 1200 ] ||
  fail "paired unfiltered: rc $lg_rc, $(jq -c '{published, expected, delivered, unwanted, pairs: .added_us.pairs}' "$TMP/paired_unfiltered.lg")"
lg_rc=0; "$LG" --port "$BPORT" --pair-port "$PORT_plain" --rate 0 --count 10 > /dev/null 2>&1 || lg_rc=$?
[ "$lg_rc" -eq 2 ] || fail "--pair-port in closed loop: exit $lg_rc, not 2 (usage)"

px_stop "$PID_spatial" || fail "spatial proxy exited with rc $?"
S=$TMP/spatial.json
withheld=$(jq '.filter.withheld | .qos0 + .qos1 + .qos2' "$S")
# Every PUBLISH from the broker was forwarded (3 runs x 1200, the paired one's path P included) or
# withheld; the broker may not have sent the last few unwanted ones before a run's subscribers left.
b2c=$(jq '.publishes.upstream_to_client' "$S")
[ "$b2c" -eq $(( 3 * 1200 + withheld )) ] || fail "forwarded 3600 + withheld $withheld != broker->client $b2c"
[ "$withheld" -le $(( 3 * 4 * 3000 - 3 * 1200 )) ] && [ "$withheld" -ge 30000 ] || fail "withheld $withheld: $(jq -c .filter "$S")"
[ "$(jq '.filter.sid_stripped' "$S")" -eq 3600 ] || fail "forwarded: $(jq -c .filter "$S")"
px_stop "$PID_plain" || fail "plain proxy exited with rc $?"
echo "proxy_loadgen: loadgen counts exact (direct, proxy, open and closed loop); spatial 10 % workload: 1200 of 12000 delivered, 0 unwanted, $withheld withheld; unfiltered run rejected; batching proxy exact ($bw batched waits); paired runs matched 8000 and 1200 pairs; $(( $(date +%s) - t0 ))s"
