#!/usr/bin/env bash
# The broker's own DISCONNECT reaches a resumed session whose deliveries
# wait for its content filters' compile (content.resumes_held), and the
# summary counts no lost broker (REVIEW7 finding 4). Real mosquitto with
# retain_available false: a retained PUBLISH from the client makes it send
# DISCONNECT 0x9A and close (proxy_resume_disconnect.py has the scenario).
# The binary before: the DISCONNECT, unframed behind the held deliveries,
# was dropped at the broker's close and the client got the proxy's 0x80.
# --threads 1: every connection on one worker, whose table drops the
# session's texts while it is away.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_broker "retain_available false"
px_deploy rd --threads 1
px_senml
timeout 600 python3 "$(dirname "$0")/proxy_resume_disconnect.py" "$PORT_rd" "$BPORT" "$S/ex1.gen.exi" > "$TMP/rd.out" \
  || { cat "$TMP/rd.out"; fail "scenario"; }
cat "$TMP/rd.out"
px_stop "$PID_rd" || fail "proxy exit status"
jq -e '.content.resumes_held == 1 and .upstream_failures.lost == 0 and .told_clients.disconnect_0x80_upstream_lost == 0
       and .connections.open_at_exit == 0' "$TMP/rd.json" > /dev/null \
  || fail "summary: $(jq -c '{resumes_held: .content.resumes_held, upstream_failures, told_clients, connections}' "$TMP/rd.json")"
echo "proxy_resume_disconnect: a resumed session held for its compile gets the broker's DISCONNECT 0x9A, its held deliveries stay the session's"
