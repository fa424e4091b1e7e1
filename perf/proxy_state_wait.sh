#!/usr/bin/env bash
# How long a fresh persistent session's first filtered SUBSCRIBE waits for
# the --state save that reserves its subscription identifiers
# (dataplane/proxy_registry.h wm_proxy_registry_session_sid), for a
# reference proxy binary and this one, alternated in the same run:
#
#   bash perf/proxy_state_wait.sh REF_PROXY [PROXY (build/wirematch-proxy)] [N (10)] [ROUNDS (2)]
#
# Real mosquitto; each proxy starts on a fresh file; 1 s after, N sessions
# (Clean Start 1, expiry 600 s), one every 0.5 s, each sends one `nbhd` X1
# SUBSCRIBE: the time from sending it to the SUBACK (a wall-clock figure:
# the write and fsync of the file, and how soon the main thread starts it).
set -euo pipefail
REF=$1; NEW=${2:-build/wirematch-proxy}; N=${3:-10}; ROUNDS=${4:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${WM_SHARED:-$ROOT/../shared}
BUILD=$(dirname "$NEW")
. "$ROOT/scripts/lib/mqtt-peers.sh"
TMP=$(mktemp -d); wm_at_exit "rm -rf $TMP"
wm_broker_start > /dev/null || { echo "mosquitto did not start" >&2; exit 1; }
"$BUILD/wmctl" resolve --world "$SHARED/data/world/monaco.geojson" --nbhd "$SHARED/data/world/monaco-examples.nbhd" \
    --out "$TMP/m.wmr"
one() {   # one PROXY LABEL
  local port pid; port=$(wm_free_port); rm -f "$TMP"/st.state*
  "$1" --listen 127.0.0.1:"$port" --upstream 127.0.0.1:"$WM_BROKER_PORT" --resolution "$TMP/m.wmr" \
      --state "$TMP/st.state" 2> "$TMP/px.err" > /dev/null & pid=$!
  wm_at_exit "kill $pid 2>/dev/null"
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
  sleep 1
  PYTHONPATH="$ROOT/tests/integration" timeout 120 python3 - "$port" "$N" "$2" <<'PY'
import statistics, sys, time
from proxy_mqtt5 import Client
port, n, label = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ts = []
for i in range(n):
    c = Client(port, "sw-%d-%.6f" % (i, time.time()), session_expiry=600)
    t0 = time.time()
    rc, _ = c.subscribe(["sw/a"], user=[("nbhd", "X1")])
    ts.append((time.time() - t0) * 1000)
    assert rc == [1], rc
    c.disconnect()
    time.sleep(0.5)
print("%-4s n=%d first filtered SUBSCRIBE of a session, ms: median %.1f min %.1f max %.1f"
      % (label, n, statistics.median(ts), min(ts), max(ts)))
PY
  kill "$pid"; wait "$pid" || true
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do one "$REF" ref; one "$NEW" new; done
