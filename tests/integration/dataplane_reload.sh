#!/usr/bin/env bash
# Hot reload of the match tables under live traffic (dataplane/match_sink.h,
# reload_ctl.h): build/wirematch replays a crafted capture in a loop
# (net_pcap infinite_rx=1; a subscriber "sub" with sub#1 on X1 and sub#2 on
# X2, a publisher alternating a peid of X1 only and one of X2 only), then
#   1. SIGHUP with a good resolution that no longer defines X1: generation 2,
#      the learned sub#1 is dropped and counted, and from then on no PUBLISH
#      is reported to sub#1 while sub#2 and the preloaded "pre2" keep matching;
#   2. SIGHUP with a corrupted resolution: refused with its reason and byte
#      offset, counted, generation stays 2;
#   3. telemetry /wirematch/reload with a bad --subs line: refused with
#      the file, line and reason as fields, generation stays 2;
#   4. telemetry /wirematch/reload with the original files: generation 3,
#      sub#1 is learned again on the next pass and matches again.
# The exit summary must agree (generation, reloads, failures, drops, the last
# refusal's reason whole) and
# every PUBLISH must still end in exactly one outcome.
set -euo pipefail
B=${WM_BUILD:-build}
R=${WM_ROOT:-$PWD}
S=${WM_SHARED:-$R/../shared}
tmp=$(mktemp -d)
PFX=wmrl$$
wm_pid=
cleanup() {
  [ -n "$wm_pid" ] && kill -KILL "$wm_pid" 2>/dev/null || true
  [ -n "${dog:-}" ] && kill "$dog" 2>/dev/null || true
  rm -rf "$tmp" "/var/run/dpdk/$PFX" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/wm.log" ] && tail -5 "$tmp/wm.log"; exit 1; }
W=$S/data/world
"$B/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$tmp/all.wmr" > /dev/null
grep -v '^X1' "$W/monaco-examples.nbhd" > "$tmp/no_x1.nbhd"
"$B/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$tmp/no_x1.nbhd" --out "$tmp/no_x1.wmr" > /dev/null
"$B/wmctl" dump "$tmp/all.wmr" > "$tmp/all.json"
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" reload "$tmp/cap.pcap" 1883 "$tmp/all.json" > "$tmp/peids.json"
printf '{"id": "pre2", "client": "pre", "filter": "traffic/#", "nbhd": "X2"}\n' > "$tmp/good_subs.jsonl"
cp "$tmp/all.wmr" "$tmp/R.wmr"
cp "$tmp/good_subs.jsonl" "$tmp/S.jsonl"

. "$(dirname "$0")/lib/dp_telemetry.sh"
tel() { wm_tel "/var/run/dpdk/$PFX/dpdk_telemetry.v2" "$1"; }
# field CMD KEY: one value of a telemetry answer
field() { tel "$1" | jq -r ".\"$1\".$2"; }
wait_for() { # wait_for CMD KEY VALUE
  for _ in $(seq 100); do
    [ "$(field "$1" "$2" 2>/dev/null)" = "$3" ] && return 0
    sleep 0.1
  done
  fail "$1 $2 never became $3 (now $(field "$1" "$2" 2>/dev/null))"
}
replace() { cp "$1" "$2.tmp" && mv "$2.tmp" "$2"; }

# Not under timeout(1): it would take the SIGHUPs meant for wirematch. The
# EXIT trap and a watchdog bound its life instead.
"$B/wirematch" -l 0-1 -m 256 --no-huge --no-pci --no-shconf --file-prefix "$PFX" \
  --log-level=lib.eal:error --vdev "net_pcap0,rx_pcap=$tmp/cap.pcap,infinite_rx=1" -- --mqtt-port 1883 \
  --mbufs 16384 --resolution "$tmp/R.wmr" --subs "$tmp/S.jsonl" --match-log "$tmp/match.jsonl" \
  --summary "$tmp/summary.json" 2> "$tmp/wm.log" &
wm_pid=$!
( sleep 120; kill -KILL "$wm_pid" ) > /dev/null 2>&1 &
dog=$!
# "sub" disconnects at the end of every pass and its session (Session Expiry 0) ends with it: sub#1 is
# learned again on the next pass, so a second look could fall between the two. One sighting counts.
learned=
for _ in $(seq 300); do tel /wirematch/subscriptions | grep -q '"sub#1 traffic/#"' && { learned=1; break; }; sleep 0.1; done
[ -n "$learned" ] || fail "sub#1 was never learned"
s0=$(field /wirematch/stats publish.seen)

# 1. A good resolution without X1.
replace "$tmp/no_x1.wmr" "$tmp/R.wmr"
kill -HUP "$wm_pid"
wait_for /wirematch/subscriptions generation 2
[ "$(field /wirematch/subscriptions nbhds)" = 4 ] || fail "generation 2 does not have 4 neighborhoods"
[ "$(field /wirematch/subscriptions reload_subs_dropped)" -ge 1 ] || fail "sub#1 was not counted as dropped"
sleep 0.3 # a burst in flight at the swap may still use the old set
s1=$(field /wirematch/stats publish.seen)

# 2. A corrupted resolution (one byte flipped in its body): refused.
python3 - "$tmp/all.wmr" "$tmp/bad.wmr" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x5A
open(sys.argv[2], "wb").write(b)
EOF
replace "$tmp/bad.wmr" "$tmp/R.wmr"
kill -HUP "$wm_pid"
wait_for /wirematch/subscriptions reload_failures 1
err=$(tel /wirematch/subscriptions | jq -c '."/wirematch/subscriptions".last_error')
echo "$err" | jq -e --arg f "$tmp/R.wmr" '.file == $f and (.line | not) and (.reason | test(" at byte [0-9]+$"))' > /dev/null \
  || fail "bad resolution reported as: $err"
grep -q "reload refused, the running tables stay: .*R.wmr" "$tmp/wm.log" || fail "SIGHUP refusal not logged"
[ "$(field /wirematch/subscriptions generation)" = 2 ] || fail "a bad resolution changed the generation"

# 3. A bad subscriptions line through telemetry: refused with FILE:LINE.
replace "$tmp/no_x1.wmr" "$tmp/R.wmr"
printf '{"id": "ok", "client": "c", "filter": "a/b"}\n{"id": "bad", "client": "c", "filter": "a/#/b"}\n' > "$tmp/bad_subs.jsonl"
replace "$tmp/bad_subs.jsonl" "$tmp/S.jsonl"
ans=$(tel /wirematch/reload)
[ "$(echo "$ans" | jq -r '."/wirematch/reload".result')" = refused ] || fail "bad subs accepted: $ans"
# file, line and reason apart: as one string ("/tmp/tmp.X/S.jsonl:2: ...") DPDK cut it at 127 bytes,
# before the reason's own position
reason="\"filter\": invalid topic filter: '#' must be the last level of a filter (MQTT 5.0 4.7.1.2) [hash_not_last] at byte 2"
echo "$ans" | jq -e --arg f "$tmp/S.jsonl" --arg r "$reason" '."/wirematch/reload" | .error == {file: $f, line: 2, reason: $r}
  and .last_error == .error' > /dev/null || fail "bad subs reason: $ans"
[ "$(echo "$ans" | jq -r '."/wirematch/reload".generation')" = 2 ] || fail "bad subs changed the generation"
s2=$(field /wirematch/stats publish.seen)

# 4. Back to the original files.
replace "$tmp/all.wmr" "$tmp/R.wmr"
replace "$tmp/good_subs.jsonl" "$tmp/S.jsonl"
ans=$(tel /wirematch/reload)
[ "$(echo "$ans" | jq -r '."/wirematch/reload".result')" = ok ] || fail "good reload refused: $ans"
wait_for /wirematch/subscriptions generation 3
s3=$(field /wirematch/stats publish.seen)
for _ in $(seq 100); do tel /wirematch/subscriptions | grep -q '"sub#1 traffic/#"' && break; sleep 0.1; done
sleep 0.5
kill -TERM "$wm_pid"
wait "$wm_pid" || fail "wirematch exited $?"
wm_pid=

python3 - "$tmp/summary.json" "$tmp/match.jsonl" "$tmp/peids.json" "$s0" "$s1" "$s2" "$s3" "$tmp/S.jsonl:2: $reason" <<'EOF' || fail "summary or match log"
import json, sys
s = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[3]))
s0, s1, s2, s3 = map(int, sys.argv[4:8])
m, c = s["match"], s["conservation"]
# the last refusal, whole (the good reload after it does not clear it)
assert m["last_error"] == sys.argv[8], m["last_error"]
assert m["generation"] == 3 and m["reloads"] == 2 and m["reload_failures"] == 2, m
assert m["reload_subs_dropped"] >= 1 and m["nbhds"] == 5 and m["subs_preloaded"] == 1, m
assert c["publish_hold"] and c["packets_hold"], c
assert s["mqtt"]["subs_nbhd_unknown"] >= 1, "the X1 SUBSCRIBE of a pass under generation 2 must be refused"
before, window, after = [], [], []
for l in open(sys.argv[2]):
    d = json.loads(l)
    (before if d["seq"] <= s0 else window if s1 < d["seq"] <= s2 else after if d["seq"] > s3 + 1000 else []).append(d)
def keys(ls, peid):
    out = set()
    for d in ls:
        if d["peids"] == [peid]:
            out |= set(d["matched"])
    return out
assert keys(before, p["p1"]) == {"sub#1"}, keys(before, p["p1"])
assert keys(before, p["p2"]) == {"sub#2", "pre2"}, keys(before, p["p2"])
# generations 2 (and the refused reloads in it): no X1, so nothing reaches p1's PUBLISHes
assert len(window) > 100 and keys(window, p["p1"]) == set(), keys(window, p["p1"])
assert keys(window, p["p2"]) == {"sub#2", "pre2"}, keys(window, p["p2"])
assert "sub#1" in keys(after, p["p1"]), "sub#1 never matched again after generation 3"
print("publishes %d; window %d lines without sub#1; dropped %d" % (s["publish"]["seen"], len(window), m["reload_subs_dropped"]))
EOF
