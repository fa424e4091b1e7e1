#!/usr/bin/env bash
# PINGREQs behind SUBSCRIBEs held for their content compile (REVIEW8
# finding 3): proxy_ping_flood.py has the scenario, against mosquitto 2 and
# the proxy (--threads 1, --conn-buffer and --max-packet 1 MiB): a client
# writes 16 SUBSCRIBEs, a 900 KB PUBLISH and 131,072 PINGREQs at once, a
# probe on the same worker sends a PINGREQ every 5 ms meanwhile.
#  - plain: the SUBSCRIBEs carry no xpath (nothing held): the reference for
#    what the flood and the machine's load do to the probe.
#  - held: each SUBSCRIBE carries a new text, so the stream is held behind
#    the first for the compile, with the PUBLISH behind it. The client must
#    get exactly its 131,072 PINGRESPs and 16 SUBACKs, and the probe's worst
#    round trip must stay within 3 x the plain run's + 0.5 s. Before the fix
#    each PINGREQ moved every held byte: the probe waited 5.2 s (load
#    average 7.5; plain 37 ms). The summary counts the PINGREQs the proxy
#    answered itself (filter.pings_answered): some when held, none plain.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_broker
px_monaco
declare -A MAX
for mode in plain held; do
  px_deploy "$mode" --threads 1 --conn-buffer 1048576 --max-packet 1048576
  port=PORT_$mode pid=PID_$mode
  out=$(timeout 200 python3 "$HERE/proxy_ping_flood.py" "${!port}" "$mode" 16 131072 900000 60) \
    || fail "$mode: $out"
  echo "$out"
  MAX[$mode]=$(awk '{print $9}' <<< "$out")
  px_stop "${!pid}" || fail "$mode: proxy exit status"
  answered=$(jq '.filter.pings_answered' "$TMP/$mode.json")
  if [ "$mode" = held ]; then [ "$answered" -gt 0 ] || fail "held: no PINGREQ answered by the proxy"
  else [ "$answered" -eq 0 ] || fail "plain: $answered PINGREQs answered by the proxy, nothing was held"; fi
done
awk -v h="${MAX[held]}" -v p="${MAX[plain]}" 'BEGIN { exit !(h <= 3 * p + 500) }' \
  || fail "the probe waited ${MAX[held]} ms behind the held client's PINGREQs (plain: ${MAX[plain]} ms)"
echo "proxy_ping_flood: 131,072 PINGREQs behind a held SUBSCRIBE all answered, the probe's worst round trip ${MAX[held]} ms (plain ${MAX[plain]} ms)"
