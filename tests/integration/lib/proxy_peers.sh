# shellcheck shell=bash
# Peers for the proxy's integration tests (sourced; tests/integration/lib/ is
# not run by itself): a throw-away mosquitto 2 broker and wirematch-proxy
# instances on 127.0.0.1, each on a free port, all stopped by the EXIT trap
# (by pid: SIGTERM, SIGKILL after 5 s). Set WM_KEEP=1 to keep $TMP.
#   px_broker [CONFIG_LINE...]   -> BPORT, BROKER_PID
#   px_proxy NAME ARGS...        -> PORT_<NAME>, PID_<NAME>; summary in $TMP/NAME.json
#   px_stop PID                  SIGTERM and wait; returns the exit status
#   fail MESSAGE                 prints "<test>: FAIL: MESSAGE" and exits 1
BUILD=${WM_BUILD:-build}
PROXY=$BUILD/wirematch-proxy
PATH=$PATH:/usr/sbin
TEST_NAME=$(basename "$0" .sh)
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
trap _px_cleanup EXIT
fail() {
  echo "$TEST_NAME: FAIL: $*" >&2
  local f; for f in "$TMP"/*.err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
  exit 1
}
px_track() { _px_pids+=("$1"); }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {   # wait_port PORT PID: until something accepts on PORT (10 s)
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || return 1
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# mosquitto logs to stderr: as root it drops privileges and could not open a file in $TMP.
px_broker() {
  BPORT=$(free_port)
  { echo "listener $BPORT 127.0.0.1"; echo "allow_anonymous true"; echo "persistence false"
    echo "log_dest stderr"; local l; for l in "$@"; do echo "$l"; done; } > "$TMP/mosquitto.conf"
  mosquitto -c "$TMP/mosquitto.conf" 2> "$TMP/mosquitto.log" & BROKER_PID=$!; px_track $BROKER_PID
  wait_port "$BPORT" "$BROKER_PID" || fail "mosquitto did not start"
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
