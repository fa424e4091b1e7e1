#!/usr/bin/env bash
# Broker -> client Topic Aliases through the real wirematch-proxy binary
# (mosquitto never sends them, so tests/integration/fake_broker.py --aliases
# does): a subscriber of Monaco's X1 (Topic Alias Maximum 10, raw client
# proxy_mqtt5.py) gets 8 QoS 1 PUBLISHes (fake_broker.py ALIAS_SEQ):
#   1 t/a alias 1, outside X1 (withheld: the binding the client never saw)
#   2 alias 1 only, inside    -> forwarded with topic t/a put back
#   3 alias 1 only, inside    -> forwarded as is (the client knows it now)
#   4 t/b alias 1, outside    (withheld rebinding of a known alias)
#   5 alias 1 only, inside    -> must be t/b, topic put back
#   6 t/c alias 2, inside     -> forwarded
#   7 t/d alias 2, outside    (withheld rebinding)
#   8 alias 2 only, inside    -> must be t/d, topic put back
# The client must see exactly t/a m2, t/a m3, t/b m5, t/c m6, t/d m8; the
# broker must get all 8 PUBACKs (3 from the proxy on the client's behalf);
# the summary counts 3 topics put back and 3 withheld.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_monaco
BPORT=$(free_port)
python3 "$HERE/fake_broker.py" "$BPORT" --aliases > "$TMP/fb.out" 2> "$TMP/fb.err" & FB=$!; px_track $FB
wait_port "$BPORT" "$FB" || fail "fake broker did not start"
px_proxy p --resolution "$TMP/m.wmr"

timeout 30 python3 - "$PORT_p" > "$TMP/client.out" <<'PY' || fail "client: $(cat "$TMP/client.out")"
import sys, os
sys.path.insert(0, os.environ.get("WM_ROOT", ".") + "/tests/integration")
from proxy_mqtt5 import Client
c = Client(int(sys.argv[1]), "alias-sub", topic_alias_max=10)
codes, _ = c.subscribe(["t/#"], qos=1, user=[("nbhd", "X1")])
assert codes == [1], codes
c.wait_for(lambda: len(c.msgs) >= 5, 15)
import time; time.sleep(0.5)   # anything more would be a leak
for m in c.msgs: print(m.topic, m.payload.decode())
c.disconnect()
PY
want=$'t/a m2\nt/a m3\nt/b m5\nt/c m6\nt/d m8'
[ "$(cat "$TMP/client.out")" = "$want" ] || fail "client got: $(tr '\n' ',' < "$TMP/client.out")"
for _ in $(seq 50); do [ "$(grep -c '^puback' "$TMP/fb.out")" -ge 8 ] && break; sleep 0.1; done
[ "$(grep '^puback' "$TMP/fb.out" | sort -n -k2 | tr '\n' ' ')" = "puback 1 puback 2 puback 3 puback 4 puback 5 puback 6 puback 7 puback 8 " ] \
  || fail "broker got PUBACKs: $(grep '^puback' "$TMP/fb.out" | tr '\n' ' ')"
px_stop "$PID_p" || fail "proxy exited with rc $?"
S=$TMP/p.json
[ "$(jq '.filter.alias_rewritten.upstream_to_client' "$S")" -eq 3 ] && [ "$(jq '.filter.withheld.qos1' "$S")" -eq 3 ] \
  && [ "$(jq '.filter.acked_on_behalf' "$S")" -eq 3 ] || fail "counters: $(jq -c .filter "$S")"
echo "proxy_aliases: broker->client aliases through the proxy: 5 of 8 delivered with the right topics (3 put back), 8 PUBACKs at the broker"
