#!/usr/bin/env bash
# The Session Expiry Interval of a client's DISCONNECT is the one the proxy
# keeps (MQTT 5.0 §3.14.2.2.2), also 0, and never a change from 0 to
# non-zero (a Protocol Error the broker answers with 0x82). Real mosquitto,
# raw clients (proxy_session_expiry.py has the scenarios):
#  - proxy 1 (--state, --linger-ms 8000 so that se-b's session stays attached
#    while its client keeps the socket open): sessions that ended (a resume
#    with interval 0, a DISCONNECT with 0) are written as expired; proxy 1 is
#    killed; proxy 2 loads only the session still persistent (se-c). Before
#    2026-12-02 the registry ignored an interval of 0: both were written
#    live:300 and loaded as persistent sessions for 300 s.
#  - proxy 2 (--prefilter, --threads 1): a DISCONNECT setting 300 on a
#    connection with interval 0 is not taken (counted
#    sessions.disconnect_expiry_from_zero), so the session's pe/# registration
#    goes with the connection and a publication to pe/1 is prefiltered
#    (before: kept 300 s, the publication went to the broker).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
ST=$TMP/proxy.state
px_proxy p1 --resolution "$TMP/m.wmr" --state "$ST" --linger-ms 8000
timeout 60 python3 "$(dirname "$0")/proxy_session_expiry.py" kill "$PORT_p1" "$ST" "$PID_p1" || fail "scenario kill"
wait "$PID_p1" 2>/dev/null || true
px_proxy p2 --resolution "$TMP/m.wmr" --state "$ST" --prefilter --threads 1
timeout 60 python3 "$(dirname "$0")/proxy_session_expiry.py" zero "$PORT_p2" || fail "scenario zero"
px_stop "$PID_p2" || fail "proxy 2 exit status"
jq -e '.state.loaded.clean == false and .state.loaded.sessions == 1' "$TMP/p2.json" > /dev/null \
  || fail "proxy 2 loaded $(jq -c .state.loaded "$TMP/p2.json") (want se-c only); file: $(grep '^session' "$ST" || true)"
jq -e '.sessions.disconnect_expiry_from_zero == 1 and .prefilter.dropped.qos1 == 1' "$TMP/p2.json" > /dev/null \
  || fail "proxy 2: $(jq -c '{d: .sessions.disconnect_expiry_from_zero, p: .prefilter}' "$TMP/p2.json")"
echo "proxy_session_expiry: sessions ended by interval 0 are not kept across a kill; a DISCONNECT from 0 to 300 is not taken"
