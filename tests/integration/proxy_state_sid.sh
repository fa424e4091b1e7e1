#!/usr/bin/env bash
# Kills of wirematch-proxy --state must not use up a persistent session's
# Subscription Identifiers (REVIEW8 #4): before 2026-12-02 every load of a
# file written while running (clean 0) moved every session's next identifier
# 2^20 on, so after 16 kills a device that only ever resumes its session got
# SUBACK 0x97 ("no subscription identifier left") for every neighborhood
# SUBSCRIBE, for good. Real mosquitto; the session sid-dev (expiry 1 h) is
# made straight at the broker, then 20 times: a proxy starts on the file; on
# odd starts sid-dev resumes through it (Clean Start 0) and subscribes
# sid/tK in X1, which must be granted (it may wait for the save that
# reserves identifiers), and the proxy is SIGKILLed once its file holds the
# reservation; on even starts no client comes and the proxy is SIGKILLed
# after 0.5 s: the session's next identifier in the file must not move. In
# all, the 10 subscribing starts may cost at most 10 reservations
# (WM_PROXY_SID_RESERVE, 4,096 each).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
ST=$TMP/sid.state
RESERVE=4096 BASE=251658240
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"   # proxy_mqtt5
# sub PORT TOPIC: resume sid-dev through PORT and subscribe TOPIC in X1; prints the SUBACK's reason codes
sub() {
  timeout 30 python3 - "$1" "$2" <<'PY'
import sys
from proxy_mqtt5 import Client
port, topic = int(sys.argv[1]), sys.argv[2]
c = Client(port, "sid-dev", clean=False, session_expiry=3600)
rc, pr = c.subscribe([topic], user=[("nbhd", "X1")])
print("present=%d %s %s" % (c.session_present, rc, pr.get(0x1F, "")))
c.disconnect()
PY
}
next_of() { sed -n 's/^session sid-dev \([0-9]*\) .*/\1/p' "$ST"; }
python3 -c "
from proxy_mqtt5 import Client
Client($BPORT, 'sid-dev', clean=True, session_expiry=3600).disconnect()" || fail "session at the broker"
prev=""
for k in $(seq 20); do
  px_proxy "p$k" --resolution "$TMP/m.wmr" --state "$ST"
  pid_var=PID_p$k port_var=PORT_p$k
  if [ $((k % 2)) = 1 ]; then
    out=$(sub "${!port_var}" "sid/t$k") || fail "start $k: no SUBACK"
    case "$out" in "present=1 [1] "*) ;; *) fail "start $k: SUBSCRIBE in X1 not granted: $out; file: $(grep '^session' "$ST")";; esac
    # the SUBACK came after the reservation reached the file; the record follows with the next save
    for _ in $(seq 150); do grep -q '^sub sid/t'"$k"' ' "$ST" && break; sleep 0.1; done
    grep -q '^sub sid/t'"$k"' ' "$ST" || fail "start $k: sid/t$k not saved within 15 s"
    now=$(next_of)
    [ -z "$prev" ] || [ "$now" -le $((prev + RESERVE)) ] \
      || fail "start $k: next identifier $now, more than $RESERVE past $prev"
  else
    sleep 0.5
    now=$(next_of)
    [ "$now" = "$prev" ] || fail "start $k: no client, yet the next identifier moved $prev -> $now"
  fi
  kill -KILL "${!pid_var}"; wait "${!pid_var}" 2>/dev/null || true
  grep -q '^clean 0$' "$ST" || fail "start $k: file after SIGKILL: $(head -3 "$ST")"
  prev=$(next_of)
done
[ "$prev" -le $((BASE + 10 * RESERVE)) ] || fail "20 kills cost $((prev - BASE)) identifiers, more than 10 x $RESERVE"
echo "proxy_state_sid: 20 kills, 10 neighborhood SUBSCRIBEs granted; the session's next identifier $BASE -> $prev ($(( (prev - BASE) / RESERVE )) reservations), unchanged by the 10 kills without a client"
