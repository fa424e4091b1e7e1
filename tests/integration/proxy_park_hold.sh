#!/usr/bin/env bash
# Chunks parked behind SUBSCRIBEs held for their content compile, when what
# the compile releases sends nothing to the broker (REVIEW7 finding 6):
# proxy_park_hold.py has the scenario (a client writes 200 KB of PUBLISHes,
# 12 padded SUBSCRIBEs whose texts the proxy refuses itself (0x97, no room
# next to another client's text) and a PINGREQ, all at once) in front of
# tests/integration/fake_broker.py --stall 0.3 (it reads nothing for 0.3 s
# after its CONNACK, so the client's queue fills and its later chunks are
# parked), --conn-buffer 4096, --threads 1.
#  - wait: the client gets its 12 SUBACKs 0x97 and its PINGRESP, the broker
#    got the 200 PUBLISHes before the PINGREQ; the connection is freed when
#    the client closes (closed_by_client). Before the fix the parked chunks
#    were taken in only at a send completion of the queue: none came, the
#    client got 4 of 12 SUBACKs and never its PINGRESP, and its slot was
#    kept until the proxy stopped (closed_at_shutdown).
#  - close: the client closes right after writing (held, chunks parked): what
#    it sent after its held SUBSCRIBEs still reaches the broker (the PINGREQ
#    after the 200 PUBLISHes) and the slot is freed.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_senml
px_monaco
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/schemas.txt"
NSUB=12

# upstream_idle PORT: until the proxy has no connection to the broker on PORT (the slots are freed), 20 s
upstream_idle() {
  for _ in $(seq 200); do
    [ -z "$(ss -Htn state established "( dport = :$1 )")" ] && return 0
    sleep 0.1
  done
  return 1
}

run() {   # run MODE
  local mode=$1 port pid bport
  bport=$(free_port)
  python3 "$HERE/fake_broker.py" "$bport" --stall 0.3 > "$TMP/$mode.out" 2> "$TMP/$mode.ferr" & pid=$!; px_track $pid
  wait_port "$bport" "$pid" || fail "fake broker did not start"
  BPORT=$bport px_proxy "$mode" --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --conn-buffer 4096 --threads 1
  port=PORT_$mode pid=PID_$mode
  timeout 120 python3 "$HERE/proxy_park_hold.py" "${!port}" $NSUB "$mode" 60 || fail "$mode: the client's packets behind its held SUBSCRIBEs"
  upstream_idle "$bport" || fail "$mode: the client has gone, its connection is still open after 20 s"
  grep -qx "pingreq after 200 publishes" "$TMP/$mode.out" || fail "$mode: fake broker got: $(cat "$TMP/$mode.out")"
  px_stop "${!pid}" || fail "$mode: proxy exit status"
  python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); k = s["connections"]
assert k["accepted"] == 3 and k["closed_by_client"] == 3 and k["closed_at_shutdown"] == 0 and k["open_at_exit"] == 0, k
assert s["limits"]["parked"] > 0 and s["limits"]["park_overflow"] == 0, s["limits"]
print("ok: %s: connections %r, parked %d" % (sys.argv[2], k, s["limits"]["parked"]))' "$TMP/$mode.json" "$mode" || fail "$mode: summary"
}
run wait
run close
echo "proxy_park_hold: chunks parked behind $NSUB held SUBSCRIBEs the proxy refuses itself are taken in (SUBACKs, PINGRESP, the PUBLISHes reach the broker); the slot is freed when the client leaves, held or not"
