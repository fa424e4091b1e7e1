#!/usr/bin/env bash
# wirematch-proxy --state LINK where LINK is a symlink (REVIEW12 #31: the
# save's rename put a regular file in the link's place, so the file the
# operator pointed at, e.g. on another volume, stopped being written):
#  - LINK -> real/proxy.state (relative, dangling at the start): a persistent
#    session's nbhd subscription is saved through it; after the stop LINK is
#    still the same symlink, the file it names holds the session, and no
#    temporary file is left in either directory;
#  - a second proxy on the same LINK restores the session from it and keeps
#    the link at its own saves;
#  - LINK -> a FIFO: the save is refused with the reason (the state could not
#    be read back), counted in state.save_errors, and the FIFO stays.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
mkdir "$TMP/real" "$TMP/links"
LINK=$TMP/links/proxy.state
ln -s ../real/proxy.state "$LINK"
px_proxy p1 --resolution "$TMP/m.wmr" --state "$LINK"
timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_p1" -c -i st-link -x 3600 -q 1 -t 'st/#' -E \
  -D subscribe user-property nbhd X1 || fail "subscribe through proxy 1 failed"
px_stop "$PID_p1" || fail "proxy 1 exit status"
[ -L "$LINK" ] || fail "--state's symlink was replaced: $(ls -l "$TMP/links")"
[ "$(readlink "$LINK")" = ../real/proxy.state ] || fail "the symlink changed: $(readlink "$LINK")"
grep -q '^session st-link ' "$TMP/real/proxy.state" || fail "the link's target lacks the session: $(cat "$TMP/real/proxy.state")"
grep -q '^sub st/# [0-9]* X1 -$' "$TMP/real/proxy.state" || fail "the link's target lacks the record: $(cat "$TMP/real/proxy.state")"
left=$(find "$TMP/links" "$TMP/real" -name '*.tmp*' | wc -l)
[ "$left" = 0 ] || fail "temporary files left: $(ls -A "$TMP/links" "$TMP/real")"

px_proxy p2 --resolution "$TMP/m.wmr" --state "$LINK"
px_stop "$PID_p2" || fail "proxy 2 exit status"
[ -L "$LINK" ] || fail "proxy 2 replaced the symlink"
got=$(jq -c '.state | {loaded: .loaded | {sessions, records}, save_errors}' "$TMP/p2.json")
[ "$got" = '{"loaded":{"sessions":1,"records":1},"save_errors":0}' ] || fail "proxy 2 summary: $got"

mkfifo "$TMP/real/fifo"
# a copy of the file first (the start reads it), then the link is turned to the FIFO
cp "$TMP/real/proxy.state" "$TMP/real/copy"
ln -s ../real/copy "$TMP/links/fifo.state"
px_proxy p3 --resolution "$TMP/m.wmr" --state "$TMP/links/fifo.state"
ln -sfn ../real/fifo "$TMP/links/fifo.state"
timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_p3" -c -i st-fifo -x 3600 -q 1 -t 'st/#' -E \
  -D subscribe user-property nbhd X1 > /dev/null 2>&1 || true
px_stop "$PID_p3" || true
[ -p "$TMP/real/fifo" ] || fail "the FIFO was replaced"
grep -q "fifo.state: not a regular file (a device, FIFO or socket)" "$TMP/p3.err" || fail "no report of the FIFO: $(cat "$TMP/p3.err")"
[ "$(jq '.state.save_errors' "$TMP/p3.json")" -ge 1 ] || fail "save_errors: $(jq -c .state "$TMP/p3.json")"
echo "proxy_state_symlink: saves go through a symlinked --state (link kept, target written, restored through it); a FIFO behind it is refused with the reason"
