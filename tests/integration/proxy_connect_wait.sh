#!/usr/bin/env bash
# Clients that owe their CONNECT, and clients beyond --max-conns (README
# "Front-end proxy", Bounds and "Upstream failures and shutdown"; raw clients
# tests/integration/proxy_connect_wait.py):
#  - a client that opens TCP and sends nothing, or only part of a CONNECT, is
#    closed --connect-packet-timeout after the proxy started reading it (not
#    before; here 600 ms), and so is its upstream connection: its slot serves
#    the next client (before: both held until the client closed);
#  - behind an unreachable broker too (before: held; a CONNECT gets 0x88);
#  - a client whose CONNECT comes in pieces within the time stays;
#  - a client beyond --max-conns gets CONNACK 0x89 Server busy to its CONNECT,
#    then the close (raw bytes; mosquitto_pub and mosquitto_sub print
#    "Server busy", exit 137); before: closed at accept, "connection lost";
#    16 of them at a time per worker, one more is closed at once; a refused
#    client that sends nothing is closed at the timeout too;
#  - the summary counts each: connections.closed_no_connect,
#    told_clients.connack_0x89_server_busy, limits.conns.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
CW=(timeout 40 python3 "$HERE/proxy_connect_wait.py")
T=600

px_broker
px_proxy w --threads 1 --max-conns 2 --connect-packet-timeout $T
P=$PORT_w

# in_time WHAT LINE: LINE is "eof MS" with T <= MS <= T + 3 s (the sweep may be
# up to T/16 late; the rest is a loaded machine's slack).
in_time() {
  local ms=${2#eof }
  [[ "$2" == eof\ * ]] || fail "$1: $2 (want closed after ${T} ms)"
  [ "$ms" -ge $T ] && [ "$ms" -le $((T + 3000)) ] || fail "$1: closed after $ms ms, want $T..$((T + 3000))"
}
upstreams() { ss -Htn state established "( dport = :$BPORT )" | wc -l; }

# 1. Two silent clients fill --max-conns 2; both are closed in time, with their upstream connections.
mapfile -t got < <("${CW[@]}" "$P" silent 2)
[ "${#got[@]}" -eq 2 ] || fail "silent: ${got[*]}"
for l in "${got[@]}"; do in_time "silent client" "$l"; done
for _ in $(seq 50); do [ "$(upstreams)" -eq 0 ] && break; sleep 0.1; done
[ "$(upstreams)" -eq 0 ] || fail "upstream connections of closed silent clients still open: $(upstreams)"
# 2. Part of a CONNECT only.
in_time "partial CONNECT" "$("${CW[@]}" "$P" partial)"
# 3. A CONNECT in two pieces 300 ms apart is in time: the client stays past the timeout.
[ "$("${CW[@]}" "$P" slow 300 $((2 * T)) | tr '\n' ' ')" = "CONNACK:00 PINGRESP " ] || fail "slow CONNECT: not served"

# 4. Beyond --max-conns: two held clients, then the refused ones.
"${CW[@]}" "$P" hold 60 > "$TMP/h1" & H1=$!
"${CW[@]}" "$P" hold 60 > "$TMP/h2" & H2=$!
for _ in $(seq 200); do [ "$(cat "$TMP/h1" "$TMP/h2")" = "ready"$'\n'"ready" ] && break; sleep 0.1; done
[ "$(cat "$TMP/h1" "$TMP/h2")" = "ready"$'\n'"ready" ] || fail "held clients not served: $(cat "$TMP/h1" "$TMP/h2")"
got=$("${CW[@]}" "$P" busy)
[ "$got" = "2003008900 closed" ] || fail "client beyond --max-conns: got '$got', want CONNACK 0x89 (2003008900) then the close"
rc=0; timeout 20 mosquitto_pub -V mqttv5 -p "$P" -t x -m y 2> "$TMP/pub.err" || rc=$?
[ $rc -eq 137 ] && grep -q 'Connection error: Server busy' "$TMP/pub.err" || fail "mosquitto_pub beyond --max-conns: rc $rc, $(cat "$TMP/pub.err")"
rc=0; timeout 20 mosquitto_sub -V mqttv5 -p "$P" -t x -C 1 -W 10 2> "$TMP/sub.err" || rc=$?
[ $rc -ne 0 ] && grep -q 'Connection error: Server busy' "$TMP/sub.err" || fail "mosquitto_sub beyond --max-conns: rc $rc, $(cat "$TMP/sub.err")"
# 17 silent refused clients: 16 wait (and are closed at the timeout), the 17th is closed at once.
mapfile -t got < <("${CW[@]}" "$P" silent 17)
[ "${#got[@]}" -eq 17 ] || fail "refused silent: ${got[*]}"
now=0; for l in "${got[@]}"; do
  if [ "${l#eof }" != "$l" ] && [ "${l#eof }" -lt $((T / 2)) ]; then now=$((now + 1)); else in_time "refused silent client" "$l"; fi
done
[ $now -eq 1 ] || fail "refused silent clients closed at once: $now, want 1 (16 busy slots): ${got[*]}"
grep -q closed "$TMP/h1" "$TMP/h2" && fail "a held client was closed: $(cat "$TMP/h1" "$TMP/h2")"
kill -TERM "$H1" "$H2" 2>/dev/null || true; wait "$H1" "$H2" 2>/dev/null || true
px_stop "$PID_w" || fail "proxy exited with rc $?"
S=$TMP/w.json
[ "$(jq '.connections.closed_no_connect' "$S")" -eq 19 ] || fail "closed_no_connect: $(jq -c .connections "$S")"
[ "$(jq '.told_clients.connack_0x89_server_busy' "$S")" -eq 3 ] || fail "CONNACK 0x89: $(jq -c .told_clients "$S")"
[ "$(jq '.limits.conns' "$S")" -eq 20 ] || fail "limits.conns: $(jq -c .limits "$S")"
[ "$(jq '.connections.accepted' "$S")" -eq "$(jq '.connections.closed' "$S")" ] || fail "accepted != closed: $(jq -c .connections "$S")"

# 5. Behind an unreachable broker: a silent client is closed in time too.
DEAD=$(free_port)
BPORT=$DEAD px_proxy u --connect-packet-timeout $T   # (px_proxy gives --upstream 127.0.0.1:$BPORT; twice is refused)
in_time "silent client of an unreachable broker" "$("${CW[@]}" "$PORT_u" silent 1)"
px_stop "$PID_u" || fail "proxy u exited with rc $?"
[ "$(jq '.connections.closed_no_connect' "$TMP/u.json")" -eq 1 ] || fail "unreachable: $(jq -c .connections "$TMP/u.json")"
echo "proxy_connect_wait: silent and partial CONNECTs closed after ${T} ms (upstream too, also behind an unreachable broker), pieces in time served; beyond --max-conns CONNACK 0x89 (raw, mosquitto_pub/sub 'Server busy'), 16 busy slots"
