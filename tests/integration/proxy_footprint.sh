#!/usr/bin/env bash
# wirematch-proxy's memory as the summary reports it, against a real mosquitto
# and mosquitto_sub/pub on 127.0.0.1 (REVIEW14 finding 6):
#  - --resolution without --prefilter: the matcher holds the neighborhoods and
#    no subscription (before 2026-12-02 it was built for 1 Mi of them: the
#    summary's jemalloc `allocated` said ~225 MB for a process of 13 MB). The
#    filtering itself is unchanged: mosquitto_sub with nbhd X1 gets the
#    publication whose peid is in X1, not the other one.
#  - --prefilter --max-conns 2 --max-sessions 1 --max-subs-per-conn 3: a table
#    for (2 + 1) x 3 subscriptions, which still takes three wildcard filters
#    of 5 levels (15 nodes of the wildcard trie: sized like the subscriptions,
#    9, it refused the third) and prefilters: a publication nobody subscribed to
#    and one outside X1 are kept from the broker, one in X1 is delivered.
#  - the summary's `memory` gives the process's resident set (`process_rss`,
#    `process_peak_rss`) beside jemalloc's figures: within a factor of 2 of
#    the VmRSS that /proc/PID/status shows just before the stop.
# Bounded in time (each client under timeout); everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
IN=r157719642.0 OUT=r124149681.0   # in / outside X1 (README's spatial example)

# vmrss PID -> bytes
vmrss() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"; }
# check_memory NAME VMRSS: the summary's figures
check_memory() {
  python3 - "$TMP/$1.json" "$2" <<'PY' || fail "$1: memory $(jq -c .memory "$TMP/$1.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
vm = int(sys.argv[2])
if m["allocator"] == "jemalloc":
    # the matcher's tables are allocated whole: 1 Mi subscriptions were ~225 MB
    assert m["allocated"] < 32 << 20, ("jemalloc allocated", m["allocated"])
# the process's own figures, whatever the allocator
assert vm / 2 <= m["process_rss"] <= vm * 2, ("process_rss vs VmRSS", m["process_rss"], vm)
assert m["process_peak_rss"] >= vm / 2, ("process_peak_rss", m["process_peak_rss"], vm)
PY
}
# sub_pub NAME PORT: a subscriber with nbhd X1 on t/#, then one publication in
# X1 and one outside; prints what the subscriber got
sub_pub() {
  local port=$2
  timeout 10 mosquitto_sub -V mqttv5 -p "$port" -t 't/#' -D subscribe user-property nbhd X1 -F '%t %p' -W 4 \
      > "$TMP/$1.sub" 2>&1 & local sp=$!
  sleep 0.5
  timeout 5 mosquitto_pub -V mqttv5 -p "$port" -t t/a -m out -q 1 -D publish user-property peid "$OUT" || fail "$1: pub out"
  timeout 5 mosquitto_pub -V mqttv5 -p "$port" -t t/a -m in -q 1 -D publish user-property peid "$IN" || fail "$1: pub in"
  local t; for t in $(seq 40); do grep -q ' in$' "$TMP/$1.sub" && break; sleep 0.1; done
  kill -TERM $sp 2>/dev/null; wait $sp 2>/dev/null || true
  [ "$(cat "$TMP/$1.sub")" = "t/a in" ] || fail "$1: subscriber got: $(cat "$TMP/$1.sub")"
}

# 1. --resolution alone
px_proxy r --resolution "$TMP/m.wmr"
sub_pub r "$PORT_r"
vm_r=$(vmrss "$PID_r")
px_stop "$PID_r" || fail "proxy r exited with rc $?"
check_memory r "$vm_r"

# 2. --prefilter with a small table
px_proxy p --resolution "$TMP/m.wmr" --prefilter --max-conns 2 --max-sessions 1 --max-subs-per-conn 3
rc=0; timeout 5 mosquitto_sub -V mqttv5 -p "$PORT_p" -t a/b/c/d/# -t e/f/g/h/# -t i/j/k/l/# -D subscribe user-property nbhd X1 \
    -W 1 > "$TMP/deep.sub" 2>&1 || rc=$?
[ $rc = 27 ] || fail "three 5-level wildcard filters: mosquitto_sub rc $rc, want 27 (-W timed out): $(cat "$TMP/deep.sub")"
timeout 5 mosquitto_pub -V mqttv5 -p "$PORT_p" -t nobody/x -m kept -q 1 -D publish user-property peid "$IN" \
    || fail "p: pub nobody"
sub_pub p "$PORT_p"
vm_p=$(vmrss "$PID_p")
px_stop "$PID_p" || fail "proxy p exited with rc $?"
check_memory p "$vm_p"
python3 - "$TMP/p.json" <<'PY' || fail "p: prefilter $(jq -c .prefilter "$TMP/p.json")"
import json, sys
p = json.load(open(sys.argv[1]))["prefilter"]
r = p["registry"]
assert not r["broken"] and r["refused"] == 0 and r["added"] == 4, r   # the three deep filters, t/#
assert p["dropped"]["qos1"] == 2, p   # nobody/x; t/a outside X1
PY
echo "proxy_footprint: --resolution: jemalloc allocated < 32 MiB, process_rss within 2x of VmRSS ($vm_r B); --prefilter (2+1)x3: three 5-level wildcard filters taken, 2 prefiltered; filtering unchanged"
