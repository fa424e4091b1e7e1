#!/usr/bin/env bash
# wirematch-proxy under connection churn on both workers, in front of a real
# mosquitto on 127.0.0.1 (--resolution --schemas --prefilter --state,
# --threads 2): proxy_churn_concurrent.py's load for 8 s (persistent sessions
# resumed under the same client identifier, leaving with and without
# DISCONNECT, taken over while connected; neighborhood and content
# SUBSCRIBEs, compiles meanwhile; QoS 1 EXI publishers) with a SIGHUP every
# 2 s, then SIGTERM. Every connection but a taken-over one works until its
# client leaves, a taken-over one gets a DISCONNECT then its close; the
# summary closes every connection, counts each taken-over one as ended by
# the broker, and the proxy exits 0.
# Its name puts it in `make test TSAN=1 TEST_FILTER=concurrent` (CI): under
# ThreadSanitizer the proxy exits 66 with a "WARNING: ThreadSanitizer"
# report on a data race. It replaces proxy_concurrent (dropped 2026-12-01 for
# a client "closed right after its CONNACK" 1 run in 3-5), whose clients
# closed themselves (proxy_mqtt5.Client, timeout).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml
px_broker
px_deploy ch --threads 2 --prefilter --state "$TMP/ch.state"
timeout 400 python3 "$(dirname "$0")/proxy_churn_concurrent.py" "$PORT_ch" 8 "$S/ex1.gen.exi" > "$TMP/load.out" 2>&1 & LOAD=$!
for _ in 1 2 3 4; do sleep 2; kill -HUP "$PID_ch"; done
wait $LOAD || { cat "$TMP/load.out"; fail "load"; }
cat "$TMP/load.out"
rc=0; px_stop "$PID_ch" || rc=$?
if grep -q "WARNING: ThreadSanitizer" "$TMP/ch.err"; then
  grep -A20 "WARNING: ThreadSanitizer" "$TMP/ch.err" | head -60 >&2
  fail "ThreadSanitizer: $(grep -c 'WARNING: ThreadSanitizer' "$TMP/ch.err") report(s)"
fi
[ $rc -eq 0 ] || fail "proxy exit status $rc"
python3 - "$TMP/ch.json" <<'PY' || fail "summary"
import json, sys
j = json.load(open(sys.argv[1]))
k, u, t = j["connections"], j["upstream_failures"], j["told_clients"]
assert k["accepted"] == k["closed"] and k["open_at_exit"] == 0, k
# a taken-over connection: the broker ended it (lost: no DISCONNECT from mosquitto 2.0.11), its client told 0x80
assert u["lost"] >= 1 and t["disconnect_0x80_upstream_lost"] == u["lost"], (u, t)
assert k["closed_by_upstream"] >= u["lost"], (k, u)
assert j["reload"]["ok"] >= 1, j["reload"]
print("ok: summary %d connections, %d ended by the broker (%d taken over), %d reloads"
      % (k["accepted"], k["closed_by_upstream"], u["lost"], j["reload"]["ok"]))
PY
echo "proxy_churn_concurrent: 2 workers, session take-overs, compiles, reloads, --state and --prefilter under churn: no failure, exit 0"
