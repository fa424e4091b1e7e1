# shellcheck shell=bash
# Real MQTT peers for scripts and integration tests: a throw-away mosquitto 2.x
# broker (MQTT v5) on 127.0.0.1 and tcpdump captures of its traffic.
#
# Source it, then:
#   wm_broker_start [CONFIG_LINE...]   start a broker on a free port; exports
#                                      WM_BROKER_PORT, WM_BROKER_PID, WM_BROKER_DIR
#                                      (temp dir: mosquitto.conf, mosquitto.log)
#   wm_broker_stop                     stop it (SIGTERM, then SIGKILL after 5 s)
#   wm_pcap_start OUT.pcap FILTER      tcpdump on lo with a BPF filter; returns once
#                                      tcpdump is really capturing
#   wm_pcap_stop                       stop tcpdump, flush the file; fails (rc 1)
#                                      if the kernel dropped packets
#   wm_at_exit 'COMMAND'               add a command to the exit cleanup
#   wm_free_port                       print a TCP port free on 127.0.0.1 now
#
# Everything started here is stopped by the EXIT/INT/TERM trap that sourcing
# installs (by pid, never by name), so a failing or interrupted caller never
# leaves a broker or a tcpdump behind. Callers that need their own cleanup add
# it with wm_at_exit instead of replacing the trap.
#
# Config lines given to wm_broker_start are appended to the generated config:
# e.g. 'persistence true' (the store then lives in WM_BROKER_DIR) or
# 'max_topic_alias 20'. Defaults: one listener on 127.0.0.1, anonymous
# clients allowed, no persistence, log to WM_BROKER_DIR/mosquitto.log.
#
# Bounds: broker start WM_BROKER_START_TIMEOUT s (default 15, generous for a
# loaded 2-core machine), tcpdump start WM_PCAP_START_TIMEOUT s (default 15).

WM_BROKER_PID=""; WM_BROKER_DIR=""; WM_BROKER_PORT=""
WM_TCPDUMP_PID=""; WM_TCPDUMP_ERR=""
_wm_exit_cmds=()

wm_at_exit() { _wm_exit_cmds+=("$1"); }

wm_peers_cleanup() {
  local c
  for c in "${_wm_exit_cmds[@]}"; do eval "$c" || true; done
  _wm_exit_cmds=()
  [ -n "$WM_TCPDUMP_PID" ] && wm_pcap_stop >/dev/null 2>&1
  [ -n "$WM_BROKER_PID" ] && wm_broker_stop
  return 0
}
trap 'rc=$?; wm_peers_cleanup; exit $rc' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wm_free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# _wm_wait_pid_gone PID SECONDS: wait for a child to exit, SIGKILL it after.
_wm_wait_pid_gone() {
  local pid=$1 i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 0
}

wm_broker_start() {
  local timeout=${WM_BROKER_START_TIMEOUT:-15} line deadline
  command -v mosquitto >/dev/null || PATH=$PATH:/usr/sbin
  command -v mosquitto >/dev/null || { echo "wm_broker_start: mosquitto not installed" >&2; return 2; }
  WM_BROKER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/wm-broker.XXXXXX")
  # A free port can be taken between the probe and the bind: retry a few times.
  for _ in 1 2 3 4 5; do
    WM_BROKER_PORT=$(wm_free_port)
    {
      echo "listener $WM_BROKER_PORT 127.0.0.1"
      echo "allow_anonymous true"
      echo "persistence false"
      echo "persistence_location $WM_BROKER_DIR/"
      echo "log_dest file $WM_BROKER_DIR/mosquitto.log"
      echo "log_type error"; echo "log_type warning"; echo "log_type notice"; echo "log_type information"
      echo "connection_messages true"
      # As root mosquitto would switch to user "mosquitto", who cannot write the temp dir.
      [ "$(id -u)" -eq 0 ] && echo "user root"
      for line in "$@"; do echo "$line"; done
    } > "$WM_BROKER_DIR/mosquitto.conf"
    : > "$WM_BROKER_DIR/mosquitto.log"
    mosquitto -c "$WM_BROKER_DIR/mosquitto.conf" >"$WM_BROKER_DIR/stdout" 2>&1 &
    WM_BROKER_PID=$!
    deadline=$((SECONDS + timeout))
    while [ $SECONDS -lt $deadline ]; do
      if ! kill -0 "$WM_BROKER_PID" 2>/dev/null; then break; fi
      # "running" is logged after every listener is bound; the connect proves it accepts.
      if grep -q ' running$' "$WM_BROKER_DIR/mosquitto.log" 2>/dev/null &&
         (exec 3<>"/dev/tcp/127.0.0.1/$WM_BROKER_PORT") 2>/dev/null; then
        export WM_BROKER_PORT WM_BROKER_PID WM_BROKER_DIR
        return 0
      fi
      sleep 0.1
    done
    if kill -0 "$WM_BROKER_PID" 2>/dev/null; then
      echo "wm_broker_start: broker not accepting on 127.0.0.1:$WM_BROKER_PORT after ${timeout}s" >&2
      cat "$WM_BROKER_DIR/mosquitto.log" "$WM_BROKER_DIR/stdout" >&2
      wm_broker_stop; return 1
    fi
    wait "$WM_BROKER_PID" 2>/dev/null; WM_BROKER_PID=""
    grep -q 'Address already in use' "$WM_BROKER_DIR/mosquitto.log" "$WM_BROKER_DIR/stdout" || break
  done
  echo "wm_broker_start: mosquitto failed to start:" >&2
  cat "$WM_BROKER_DIR/mosquitto.log" "$WM_BROKER_DIR/stdout" >&2
  rm -rf "$WM_BROKER_DIR"; WM_BROKER_DIR=""
  return 1
}

wm_broker_stop() {
  if [ -n "$WM_BROKER_PID" ]; then
    kill -TERM "$WM_BROKER_PID" 2>/dev/null
    _wm_wait_pid_gone "$WM_BROKER_PID" 5
    WM_BROKER_PID=""
  fi
  [ -n "$WM_BROKER_DIR" ] && [ -z "${WM_KEEP_BROKER_DIR:-}" ] && rm -rf "$WM_BROKER_DIR"
  WM_BROKER_DIR=""
  return 0
}

wm_pcap_start() {
  local out=$1 filter=$2 timeout=${WM_PCAP_START_TIMEOUT:-15} deadline
  command -v tcpdump >/dev/null || PATH=$PATH:/usr/sbin
  WM_TCPDUMP_ERR=$(mktemp "${TMPDIR:-/tmp}/wm-tcpdump.XXXXXX")
  # --immediate-mode: hand each packet to tcpdump at once (otherwise
  # packets still in the kernel buffer at SIGINT are lost); -B: a large kernel buffer so a loaded
  # machine does not drop; -s 0: whole packets; pcap (not pcapng) for DPDK net_pcap.
  tcpdump -i lo -n --immediate-mode -B 65536 -s 0 -w "$out" "$filter" 2>"$WM_TCPDUMP_ERR" &
  WM_TCPDUMP_PID=$!
  deadline=$((SECONDS + timeout))
  while [ $SECONDS -lt $deadline ]; do
    grep -q 'listening on' "$WM_TCPDUMP_ERR" && return 0
    kill -0 "$WM_TCPDUMP_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "wm_pcap_start: tcpdump did not start:" >&2; cat "$WM_TCPDUMP_ERR" >&2
  wm_pcap_stop >/dev/null 2>&1
  return 1
}

wm_pcap_stop() {
  local rc=0 dropped
  [ -n "$WM_TCPDUMP_PID" ] || return 0
  # Give the last packets of closing connections time to reach the socket.
  sleep 0.3
  kill -INT "$WM_TCPDUMP_PID" 2>/dev/null
  _wm_wait_pid_gone "$WM_TCPDUMP_PID" 5
  WM_TCPDUMP_PID=""
  dropped=$(sed -nE 's/^([0-9]+) packets dropped by kernel.*/\1/p' "$WM_TCPDUMP_ERR")
  cat "$WM_TCPDUMP_ERR" >&2
  if [ "${dropped:-0}" != 0 ]; then
    echo "wm_pcap_stop: the kernel dropped $dropped packets: the capture is incomplete" >&2
    rc=1
  fi
  rm -f "$WM_TCPDUMP_ERR"; WM_TCPDUMP_ERR=""
  return $rc
}
