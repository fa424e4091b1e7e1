#!/usr/bin/env bash
# UNSUBSCRIBE through wirematch-proxy --resolution (README "Front-end proxy",
# dataplane/proxy_filter.h): the proxy forgets a subscription when the
# broker's UNSUBACK grants its removal (0x00, 0x11), not at the client's
# UNSUBSCRIBE, and in the order the broker applied the packets (§4.6).
#  - real mosquitto 2 with its dynamic-security plugin denying unsubscribes of
#    keep/#: a neighborhood subscriber's UNSUBSCRIBE keep/# t/# gets UNSUBACK
#    0x87 0x00; the broker keeps keep/# (§3.11.3) and its delivery in X1 must
#    reach the subscriber (before 2026-12-02 the proxy had forgotten the
#    record and withheld it, REVIEW12 #20); t/# is gone;
#  - a client pipelining SUBSCRIBE $share/g/t/# (X1) + UNSUBSCRIBE of it in
#    one write leaves no member in the group: another client's X2 member is
#    granted (before: the record installed by the late SUBACK stayed and
#    refused it 0x9E, REVIEW12 #9).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
cat > "$TMP/dynsec.json" <<'JSON'
{"defaultACLAccess": {"publishClientSend": true, "publishClientReceive": true, "subscribe": true, "unsubscribe": true},
 "clients": [], "groups": [{"groupname": "anon", "roles": [{"rolename": "all"}]}],
 "roles": [{"rolename": "all", "acls": [{"acltype": "unsubscribePattern", "topic": "keep/#", "allow": false}]}],
 "anonymousGroup": "anon"}
JSON
DYNSEC=$(ls /usr/lib/*/mosquitto_dynamic_security.so 2>/dev/null | head -1)
[ -n "$DYNSEC" ] || fail "mosquitto_dynamic_security.so not found (Debian package mosquitto)"
px_broker "plugin $DYNSEC" "plugin_opt_config_file $TMP/dynsec.json"
px_monaco
px_proxy a --resolution "$TMP/m.wmr"
run() { timeout 30 python3 "$HERE/proxy_unsuback.py" "$@" || fail "client $2"; }

got=$(run "$PORT_a" refused)
want=$'subscribe [1, 1]\nunsuback 8700\nreceived [\'keep/x\']'
[ "$got" = "$want" ] || fail "refused UNSUBSCRIBE: got '$got', want '$want'"
got=$(run "$PORT_a" pipelined)
[ "$got" = $'a 1 0\nb [1]' ] || fail "pipelined SUBSCRIBE + UNSUBSCRIBE of a shared filter: got '$got', want 'a 1 0' and 'b [1]'"

px_stop "$PID_a" || fail "proxy exited with rc $?"
F=$(jq -c '.filter | {unsub_refused, shared_refused, withheld: ([.withheld[]] | add)}' "$TMP/a.json")
[ "$F" = '{"unsub_refused":1,"shared_refused":0,"withheld":0}' ] || fail "summary: $F"
echo "proxy_unsuback: UNSUBACK 0x87 keeps the subscription (delivered), 0x00 forgets it; pipelined SUBSCRIBE + UNSUBSCRIBE leaves no \$share member"
