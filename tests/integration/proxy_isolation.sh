#!/usr/bin/env bash
# wirematch-proxy never attributes a delivery to a subscription it was not
# made for (proxy_isolation.py; reviewer findings 1-5 of 2026-12-01), in
# front of a real mosquitto on 127.0.0.1 unless said otherwise:
#  - re-subscribing a filter: the broker's deliveries queued under the old
#    subscription's identifier are withheld;
#  - proxy identifiers are never reused in a session: not after a SIGHUP
#    reload renumbers the neighborhoods, nor after one renumbers the content
#    filters' slots;
#  - the --resolution file overwritten in place (same inode; valid, then
#    corrupt + SIGHUP) changes nothing: only a SIGHUP that validates a file
#    loads it;
#  - more than 64 Subscription Identifiers on one PUBLISH are all evaluated
#    (against fake_broker.py: mosquitto never sends that many on one PUBLISH);
#  - a SIGHUP arriving while a reload is still reaching the workers is applied
#    after it, not refused.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
SHARED=${WM_SHARED:-$WM_ROOT/../shared}
S=$(cd "$SHARED/data/exi/senml" && pwd)

px_monaco
# The same neighborhoods with X2 listed first: indices renumbered.
{ grep '^X2:' "$NBHD"; grep -v '^X2:' "$NBHD"; } > "$TMP/sw.nbhd"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$TMP/sw.nbhd" --out "$TMP/sw.wmr" || fail "wmctl resolve sw"
cmp -s "$TMP/m.wmr" "$TMP/sw.wmr" && fail "the two files are the same"
grep -v '^X3:' "$NBHD" > "$TMP/fewer.nbhd"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$TMP/fewer.nbhd" --out "$TMP/fewer.wmr" || fail "wmctl resolve fewer"
cp "$TMP/m.wmr" "$TMP/bad.wmr"
printf '\xff\xff\xff\xff' | dd of="$TMP/bad.wmr" bs=1 seek=200 conv=notrunc status=none
echo "senml $S/senml.gen.xsd s=urn:ietf:params:xml:ns:senml" > "$TMP/schemas.txt"
echo '<sensml xmlns="urn:ietf:params:xml:ns:senml"><senml n="t" u="Cel" v="21.5"/></sensml>' > "$TMP/cel.xml"
"$BUILD/wmctl" exi encode --schema "$S/senml.gen.xsd" --header-options "$TMP/cel.xml" "$TMP/cel.exi" || fail "exi encode"

run() { timeout 120 python3 "$HERE/proxy_isolation.py" "$1" "$2" "$TMP/m.json" "$WORLD" "${@:3}" || fail "scenario $1"; }
px_broker
px_proxy rs --resolution "$TMP/m.wmr"
run resub "$PORT_rs" "$TMP/rs.err"
px_stop "$PID_rs" || fail "proxy rs exit status"

cp "$TMP/m.wmr" "$TMP/live.wmr"
px_proxy rl --resolution "$TMP/live.wmr"
run reload "$PORT_rl" "$PID_rl" "$TMP/rl.err" "$TMP/live.wmr" "$TMP/sw.wmr"
px_stop "$PID_rl" || fail "proxy rl exit status"

px_proxy xr --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt"
run xreload "$PORT_xr" "$PID_xr" "$TMP/xr.err" "$TMP/cel.exi"
px_stop "$PID_xr" || fail "proxy xr exit status"

cp "$TMP/m.wmr" "$TMP/live.wmr"
px_proxy ip --resolution "$TMP/live.wmr"
run inplace "$PORT_ip" "$PID_ip" "$TMP/ip.err" "$TMP/live.wmr" "$TMP/sw.wmr" "$TMP/bad.wmr"
grep -q "reload refused, the current tables stay: .*live.wmr" "$TMP/ip.err" || fail "no reason for the refusal"
px_stop "$PID_ip" || fail "proxy ip exit status"

cp "$TMP/m.wmr" "$TMP/live.wmr"
px_proxy h2 --resolution "$TMP/live.wmr" --threads 2
run hup2 "$PORT_h2" "$PID_h2" "$TMP/h2.err" "$TMP/live.wmr" "$TMP/fewer.wmr"
px_stop "$PID_h2" || fail "proxy h2 exit status"

FPORT=$(free_port)
python3 "$HERE/fake_broker.py" "$FPORT" 2> "$TMP/fb.err" & FB=$!; px_track $FB
wait_port "$FPORT" "$FB" || fail "fake broker did not start"
BPORT=$FPORT px_proxy fb --resolution "$TMP/m.wmr"
run manysids "$PORT_fb"
px_stop "$PID_fb" || fail "proxy fb exit status"
echo "proxy_isolation: re-subscription, reloads, in-place file writes and 66 identifiers on one PUBLISH never leak"
