# shellcheck shell=bash
# Peers for the proxy's integration tests (sourced; tests/integration/lib/ is
# not run by itself): a throw-away mosquitto 2 broker (scripts/lib/mqtt-peers.sh)
# and wirematch-proxy instances on 127.0.0.1, each on a free port, all stopped
# by the EXIT trap (by pid: SIGTERM, SIGKILL after 5 s). Set WM_KEEP=1 to keep $TMP.
#   px_broker [CONFIG_LINE...]   -> BPORT, BROKER_PID (log: $WM_BROKER_DIR/mosquitto.log)
#   px_proxy NAME ARGS...        -> PORT_<NAME>, PID_<NAME>; summary in $TMP/NAME.json
#   px_stop PID                  SIGTERM and wait; returns the exit status
#   px_monaco                    Monaco world + example neighborhoods (WORLD, NBHD) resolved by
#                                wmctl into $TMP/m.wmr and $TMP/m.json
#   px_senml                     the SenML schema of ../shared: S (its directory), NS (its namespace)
#   px_mqttjs                    MQTT.js installed (`npm ci` from tests/node's lock file, once) -> NODE_DIR
#   fail MESSAGE                 prints "<test>: FAIL: MESSAGE" and exits 1
BUILD=${WM_BUILD:-build}
WM_ROOT=${WM_ROOT:-$PWD}
PROXY=$BUILD/wirematch-proxy
PATH=$PATH:/usr/sbin
TEST_NAME=$(basename "$0" .sh)
# shellcheck source=../../../scripts/lib/mqtt-peers.sh
. "$WM_ROOT/scripts/lib/mqtt-peers.sh"
[ -x "$PROXY" ] || { echo "$TEST_NAME: $PROXY not built"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wm-$TEST_NAME.XXXXXX")
_px_pids=()
_px_cleanup() {
  local p
  for p in "${_px_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${_px_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
  done
  [ -n "${WM_KEEP:-}" ] || rm -rf "$TMP"
}
wm_at_exit _px_cleanup
fail() {
  echo "$TEST_NAME: FAIL: $*" >&2
  local f; for f in "$TMP"/*.err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
  exit 1
}
px_track() { _px_pids+=("$1"); }
free_port() { wm_free_port; }
wait_port() {   # wait_port PORT PID: until something accepts on PORT (10 s)
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || return 1
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
px_broker() {
  wm_broker_start "$@" || fail "mosquitto did not start"
  BPORT=$WM_BROKER_PORT; BROKER_PID=$WM_BROKER_PID
}
px_proxy() {
  local name=$1; shift
  local port; port=$(free_port)
  "$PROXY" --listen 127.0.0.1:"$port" --upstream 127.0.0.1:"$BPORT" --summary "$TMP/$name.json" "$@" \
      2> "$TMP/$name.err" & local pid=$!; px_track $pid
  wait_port "$port" "$pid" || fail "proxy $name did not start"
  printf -v "PORT_$name" %s "$port"; printf -v "PID_$name" %s "$pid"
}
px_stop() { kill -TERM "$1" 2>/dev/null; local rc=0; wait "$1" || rc=$?; return $rc; }
px_mqttjs() {
  NODE_DIR=$BUILD/node
  [ -f "$NODE_DIR/node_modules/mqtt/package.json" ] && return 0
  mkdir -p "$NODE_DIR"
  cp "$WM_ROOT/tests/node/package.json" "$WM_ROOT/tests/node/package-lock.json" "$NODE_DIR/"
  timeout 300 npm ci --prefix "$NODE_DIR" --no-audit --no-fund --ignore-scripts > "$TMP/npm.err" 2>&1 \
    || fail "npm ci of MQTT.js failed: $(tail -3 "$TMP/npm.err")"
}
px_senml() {
  S=$(cd "${WM_SHARED:-$WM_ROOT/../shared}/data/exi/senml" && pwd)
  NS=urn:ietf:params:xml:ns:senml
}
px_monaco() {
  local shared=${WM_SHARED:-$WM_ROOT/../shared}
  WORLD=$shared/data/world/monaco.geojson
  NBHD=$shared/data/world/monaco-examples.nbhd
  "$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --out "$TMP/m.wmr" || fail "wmctl resolve"
  "$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --json > "$TMP/m.json" || fail "wmctl resolve --json"
}
