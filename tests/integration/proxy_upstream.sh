#!/usr/bin/env bash
# What a client of wirematch-proxy is told when the broker behind it fails or
# the proxy stops (MQTT 5.0 §3.2.2.2, §3.14.2.1), seen by the stock
# mosquitto_sub / mosquitto_pub (MQTT v5), which print the reason code:
#  - upstream port nobody listens on (connect refused): CONNACK 0x88
#    "Server unavailable" to mosquitto_sub and mosquitto_pub (exit 136);
#  - upstream that never answers the connect (a listener whose accept queue is
#    full drops SYNs): CONNACK 0x88 after --connect-timeout;
#  - a real mosquitto at max_connections, which closes each connection at
#    accept: CONNACK 0x88 also to a client whose CONNECT comes after that close
#    (the binary before: a bare close, REVIEW7 finding 10);
#  - the real mosquitto killed (SIGKILL: no DISCONNECT of its own) under two
#    connected subscribers: each gets DISCONNECT 0x80;
#  - SIGTERM to the proxy: every acknowledged subscriber (3, one a QoS 1
#    subscriber with a message in flight) gets DISCONNECT 0x8B, all within the
#    stop's bound; the summary counts each case by reason.
# The binary before this change gave a bare TCP close in every case (each
# check fails on it). Everything on 127.0.0.1, bounded in time.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"

# proxy_to NAME UPSTREAM_PORT ARGS...: a proxy in front of UPSTREAM_PORT
proxy_to() { local name=$1 b=$BPORT; BPORT=$2; shift 2; px_proxy "$name" "$@"; BPORT=$b; }
BPORT=0

# --- 1. connect refused
DEAD=$(free_port)
proxy_to dead "$DEAD"
rc=0; timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_dead" -t a -C 1 > "$TMP/sub1.out" 2>&1 || rc=$?
[ "$rc" = 136 ] || fail "refused upstream: mosquitto_sub rc $rc (want 136, CONNACK 0x88): $(cat "$TMP/sub1.out")"
grep -q 'Connection error: Server unavailable' "$TMP/sub1.out" || fail "refused upstream: $(cat "$TMP/sub1.out")"
rc=0; timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$PORT_dead" -t a -m x -d > "$TMP/pub1.out" 2>&1 || rc=$?
grep -q 'received CONNACK (136)' "$TMP/pub1.out" || fail "refused upstream: mosquitto_pub: $(cat "$TMP/pub1.out")"
px_stop "$PID_dead" || fail "proxy dead exited with $?"
# (every connection was refused, the start-up probe of px_proxy's wait_port too)
jq -e '.upstream_failures.connect_refused == .connections.accepted and .told_clients.connack_0x88_server_unavailable == 2
       and .connections.upstream_connect_failed == .connections.accepted and .connections.open_at_exit == 0' "$TMP/dead.json" > /dev/null \
  || fail "refused upstream: summary $(jq -c '{upstream_failures, told_clients, connections}' "$TMP/dead.json")"

# --- 2. connect that never completes: a listener whose accept queue is full
python3 - "$TMP/black.port" <<'PY' & BLACK_PID=$!
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)
fill = []
for _ in range(3):      # backlog 0 holds one; the rest of the SYNs are dropped
    c = socket.socket(); c.setblocking(False)
    try: c.connect(s.getsockname())
    except BlockingIOError: pass
    fill.append(c)
time.sleep(0.5)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
time.sleep(60)
PY
px_track $BLACK_PID
for _ in $(seq 50); do [ -s "$TMP/black.port" ] && break; sleep 0.1; done
proxy_to black "$(cat "$TMP/black.port")" --connect-timeout 400
t0=$(date +%s%N)
rc=0; timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_black" -t a -C 1 > "$TMP/sub2.out" 2>&1 || rc=$?
tms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" = 136 ] || fail "silent upstream: mosquitto_sub rc $rc after $tms ms (want 136): $(cat "$TMP/sub2.out")"
[ "$tms" -ge 350 ] || fail "silent upstream: answered after $tms ms, before the 400 ms --connect-timeout"
px_stop "$PID_black" || fail "proxy black exited with $?"
jq -e '.upstream_failures.connect_timed_out == .connections.accepted and .told_clients.connack_0x88_server_unavailable == 1' \
  "$TMP/black.json" > /dev/null || fail "silent upstream: summary $(jq -c '{upstream_failures, told_clients, connections}' "$TMP/black.json")"

# --- 2b. unreachable broker, a bad packet in the CONNECT's chunk: answered, closed, slot freed
# Three raw clients, one after the other, each write CONNECT + one bad packet at once (malformed, over
# --max-packet, reserved type 0) through --max-conns 3: each must get CONNACK 0x88 and then see the
# connection close. Then a broker comes up on that port and mosquitto_pub must get through the proxy.
# The binary before kept all three open (CONNACK 0x81, the CONNECT left framed towards the missing
# broker): no close, no free slot for mosquitto_pub (REVIEW7 finding 3).
DEAD2=$(free_port)
proxy_to gone "$DEAD2" --max-conns 3 --max-packet 4096
timeout 60 python3 - "$PORT_gone" "$(dirname "$0")" <<'PY' || fail "unreachable broker + bad packet"
import socket, struct, sys
sys.path.insert(0, sys.argv[2])
from proxy_mqtt5 import packet, props, s, until_close, vbi
CONNECT = packet(0x10, s("MQTT") + bytes([5, 2]) + struct.pack(">H", 60) + props([]) + s(""))
bad = {"malformed": packet(0x30, s("t") + b"x" * 10),             # a PUBLISH without its property length
       "too large": bytes([0x30]) + vbi(100000) + s("t") + props([]),
       "type 0": bytes([0x00, 0x00])}
for name, b in bad.items():
    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    c.settimeout(5)
    c.sendall(CONNECT + b)
    got, err = until_close(c)
    if err:
        sys.exit("%s: no close within 5 s (%s), got %s" % (name, err, got.hex()))
    if got != bytes.fromhex("2003008800"):
        sys.exit("%s: got %s, want CONNACK 0x88 (20 03 00 88 00)" % (name, got.hex()))
    c.close()
PY
px_broker "listener $DEAD2 127.0.0.1"
rc=0; timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$PORT_gone" -t a -m x -q 1 > "$TMP/pub_gone.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "unreachable broker + bad packet: mosquitto_pub through the proxy once the broker is up: rc $rc: $(cat "$TMP/pub_gone.out")"
px_stop "$PID_gone" || fail "proxy gone exited with $?"
wm_broker_stop
jq -e '.told_clients.connack_0x88_server_unavailable == 3 and .malformed.client_to_upstream == 2
       and .limits.packet_too_large.client_to_upstream == 1 and .limits.conns == 0
       and .connections.open_at_exit == 0 and .connections.closed == .connections.accepted' "$TMP/gone.json" > /dev/null \
  || fail "unreachable broker + bad packet: summary $(jq -c '{told_clients, malformed, limits, connections}' "$TMP/gone.json")"

# --- 2c. a broker that accepts and closes at once (mosquitto at max_connections): CONNACK 0x88, not a bare close
# mosquitto with max_connections 1, full with direct mosquitto_subs (holders), closes every further
# connection at accept (its log: "denied: max_connections exceeded"). Through the proxy, each must get CONNACK
# 0x88 and the close: two raw clients that send their CONNECT only once the broker has closed their upstream
# connection (one all of it then, one its first 5 bytes at once and the rest then), and mosquitto_sub and
# mosquitto_pub, which send theirs at once (read before or after that close: 0x88 either way). Once the holders
# leave, mosquitto_pub gets through the same proxy. The binary before closed the raw clients unanswered
# (their CONNECT never read; summary upstream_failures.lost with nobody told, REVIEW7 finding 10).
px_broker "max_connections 1"
MLOG=$WM_BROKER_DIR/mosquitto.log
denied() { grep -c 'denied: max_connections exceeded' "$MLOG" || true; }
# Holders connect until the broker denies one: mosquitto 2.0.11 lowers its count for good when a connection
# closes before its CONNECT (px_broker's start-up probe), so one holder may not fill it.
holders=()
for i in $(seq 5); do
  n=$(denied)
  timeout 120 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$BPORT" -i "holder$i" -t hold > /dev/null 2>&1 &
  holders+=($!); px_track $!
  for _ in $(seq 100); do grep -q " as holder$i " "$MLOG" && break; [ "$(denied)" -gt "$n" ] && break; sleep 0.1; done
  [ "$(denied)" -gt "$n" ] && break
done
[ "$(denied)" -gt 0 ] || fail "max_connections: the broker denied none of 5 holders: $(tail -3 "$MLOG")"
proxy_to full "$BPORT"
timeout 60 python3 - "$PORT_full" "$MLOG" "$(dirname "$0")" <<'PY' || fail "broker closing at accept: raw clients"
import socket, struct, sys, time
sys.path.insert(0, sys.argv[3])
from proxy_mqtt5 import packet, props, s, until_close
port, log = int(sys.argv[1]), sys.argv[2]
CONNECT = packet(0x10, s("MQTT") + bytes([5, 2]) + struct.pack(">H", 60) + props([]) + s("raw"))
def denied(): return open(log, errors="replace").read().count("denied: max_connections exceeded")
for name, first in (("whole", b""), ("split", CONNECT[:5])):
    n = denied()
    c = socket.create_connection(("127.0.0.1", port))
    c.settimeout(5)
    if first: c.sendall(first)
    t = time.monotonic()
    while denied() == n:
        if time.monotonic() - t > 10: sys.exit("%s: the broker logged no denied connection in 10 s" % name)
        time.sleep(0.05)
    time.sleep(0.3)   # mosquitto logs before it closes; the proxy has seen the close by now
    try:
        c.sendall(CONNECT[len(first):])
        got, err = until_close(c)
    except OSError as e:
        got, err = b"", e
    if err:
        sys.exit("%s: %s after %s, want CONNACK 0x88 (20 03 00 88 00) then the close" % (name, err, got.hex()))
    if got != bytes.fromhex("2003008800"):
        sys.exit("%s: got %r, want CONNACK 0x88 (20 03 00 88 00) then the close" % (name, got.hex()))
    c.close()
PY
rc=0; timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_full" -t a -C 1 > "$TMP/sub_full.out" 2>&1 || rc=$?
[ "$rc" = 136 ] && grep -q 'Connection error: Server unavailable' "$TMP/sub_full.out" \
  || fail "broker closing at accept: mosquitto_sub rc $rc (want 136, CONNACK 0x88): $(cat "$TMP/sub_full.out")"
rc=0; timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$PORT_full" -t a -m x -d > "$TMP/pub_full.out" 2>&1 || rc=$?
grep -q 'received CONNACK (136)' "$TMP/pub_full.out" || fail "broker closing at accept: mosquitto_pub rc $rc: $(cat "$TMP/pub_full.out")"
for h in "${holders[@]}"; do kill "$h" 2>/dev/null || true; wait "$h" 2>/dev/null || true; done
told=4
for _ in $(seq 50); do   # until the broker has dropped the holders' connections (each try before: 0x88 too)
  rc=0; timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$PORT_full" -t a -m x -q 1 > "$TMP/pub_full2.out" 2>&1 || rc=$?
  [ "$rc" = 136 ] || break; told=$((told + 1)); sleep 0.1
done
[ "$rc" = 0 ] || fail "broker closing at accept: mosquitto_pub once the holders left: rc $rc: $(cat "$TMP/pub_full2.out")"
px_stop "$PID_full" || fail "proxy full exited with $?"
wm_broker_stop
# lost: those told, and px_proxy's start-up probe if the broker's close came before the probe's own
jq -e --argjson n "$told" '.told_clients.connack_0x88_server_unavailable == $n and .upstream_failures.lost >= $n
       and .connections.open_at_exit == 0 and .connections.closed == .connections.accepted' "$TMP/full.json" > /dev/null \
  || fail "broker closing at accept: summary $(jq -c '{upstream_failures, told_clients, connections}' "$TMP/full.json")"

# sub NAME QOS: a mosquitto_sub through proxy "live", -d log in $TMP/NAME.out;
# returns once its SUBACK arrived; pid in $sub_pid
sub() {
  timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_live" -i "$1" -t "t/#" -q "$2" -d \
      > "$TMP/$1.out" 2>&1 & sub_pid=$!
  for _ in $(seq 100); do grep -q 'received SUBACK' "$TMP/$1.out" 2>/dev/null && return 0; sleep 0.1; done
  fail "$1: no SUBACK"
}

# --- 3. the broker dies under connected clients (no DISCONNECT from it)
px_broker
proxy_to live "$BPORT"
sub lost1 0; p1=$sub_pid
sub lost2 1; p2=$sub_pid
kill -KILL "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null || true; WM_BROKER_PID=""
wait "$p1" || true; wait "$p2" || true
for n in lost1 lost2; do
  grep -q 'Received DISCONNECT (128)' "$TMP/$n.out" || fail "broker killed: $n: $(tail -3 "$TMP/$n.out")"
done
px_stop "$PID_live" || fail "proxy live exited with $?"
jq -e '.upstream_failures.lost == 2 and .told_clients.disconnect_0x80_upstream_lost == 2' "$TMP/live.json" > /dev/null \
  || fail "broker killed: summary $(jq -c '{upstream_failures, told_clients}' "$TMP/live.json")"

# --- 4. the proxy stops under acknowledged clients
px_broker
proxy_to live "$BPORT"
sub stop1 0; s1=$sub_pid
sub stop2 1; s2=$sub_pid
sub stop3 2; s3=$sub_pid
mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$PORT_live" -t t/x -m before -q 1
for n in stop1 stop2 stop3; do
  for _ in $(seq 100); do grep -q 'before' "$TMP/$n.out" && break; sleep 0.1; done
  grep -q 'before' "$TMP/$n.out" || fail "proxy stop: $n got nothing before the stop"
done
t0=$(date +%s%N)
px_stop "$PID_live" || fail "proxy live exited with $? at SIGTERM"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 4000 ] || fail "proxy stop took $ms ms (bound: 2 s grace)"
wait "$s1" || true; wait "$s2" || true; wait "$s3" || true
for n in stop1 stop2 stop3; do
  grep -q 'Received DISCONNECT (139)' "$TMP/$n.out" || fail "proxy stop: $n: $(tail -3 "$TMP/$n.out")"
done
jq -e '.told_clients.disconnect_0x8b_shutting_down == 3 and .connections.closed_at_shutdown == 3
       and .connections.open_at_exit == 0' "$TMP/live.json" > /dev/null \
  || fail "proxy stop: summary $(jq -c '{told_clients, connections}' "$TMP/live.json")"
echo "proxy_upstream: CONNACK 0x88 (refused x2, timed out after $tms ms, refused + a bad packet x3: closed, broker closing at accept x$told), DISCONNECT 0x80 x2 (broker killed), DISCONNECT 0x8B x3 (SIGTERM, stop $ms ms)"
