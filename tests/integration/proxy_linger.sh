#!/usr/bin/env bash
# wirematch-proxy's lingering close, against a real mosquitto on 127.0.0.1 with
# raw clients (proxy_linger.py). When the proxy ends a connection because of
# the client, it stops reading it; closing a socket with bytes unread sends RST,
# and the kernel drops what it had not transmitted yet: the DISCONNECT telling
# the client why, and the deliveries before it. Checks:
#  - a subscriber with deliveries backed up (not reading) sends a packet too
#    large and goes on writing for 100 ms, then reads: it gets its deliveries
#    in order, then DISCONNECT 0x95, then EOF, and none of its writes failed
#    (before: part of the deliveries, no DISCONNECT, ECONNRESET on a write,
#    6 of 6 runs); the same client behind --linger-ms 0 (the old close) loses
#    them, or this test could not tell;
#  - bounds: a client that never closes and never reads is reset after
#    --linger-ms (not before), one that floods after --linger-bytes; the slot
#    stays taken meanwhile (--max-conns 1: the next client is refused with
#    CONNACK 0x89) and is free after (the one after that gets in); counted;
#  - SIGTERM with such a client lingering: it gets DISCONNECT 0x8B and the
#    proxy still exits within its 2 s grace period, nothing left open;
#  - a client that never reads again after its bad packet (deliveries backed
#    up, the proxy's DISCONNECT behind them, its socket left open) is closed
#    unflushed --linger-ms after it (drain_cut), freeing the slot of
#    --max-conns 1 (before 2026-12-02: held for good).
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
LG=(python3 "$(dirname "$0")/proxy_linger.py")

px_broker "max_queued_messages 100000"
px_proxy a --max-packet 2048 -v
px_proxy z --max-packet 2048 --linger-ms 0

# 1. Deliveries backed up, then a packet too large, the client still writing.
for i in 1 2 3; do
  out=$(timeout 60 "${LG[@]}" backed "$PORT_a" "$BPORT" "backed-$i") || fail "backed client $i: $out"
  echo "  run $i: $out"
  [[ $out =~ ^deliveries=([0-9]+)\ in-order=True\ last=DISCONNECT:95\ end=EOF\ write_error=None$ ]] \
    || fail "run $i: the client did not get its deliveries, DISCONNECT 0x95 and a clean end: $out"
  [ "${BASH_REMATCH[1]}" -ge 16 ] || fail "run $i: only ${BASH_REMATCH[1]} deliveries (16 KiB were waiting for it)"
done
out=$(timeout 60 "${LG[@]}" backed "$PORT_z" "$BPORT" backed-z) || fail "backed client (linger 0): $out"
echo "  --linger-ms 0: $out"
[[ $out == *last=DISCONNECT:95\ end=EOF\ write_error=None ]] \
  && fail "--linger-ms 0: the client got everything, so this scenario cannot show the RST's loss: $out"

# 2. Bounds, and the slot: --max-conns 1, a linger of 800 ms, 256 KiB.
px_proxy h --max-packet 2048 --max-conns 1 --linger-ms 800 --linger-bytes 262144 -v
timeout 30 "${LG[@]}" hostile "$PORT_h" 10 slow > "$TMP/slow.out" || fail "slow hostile client: $(cat "$TMP/slow.out")"
echo "  slow: $(tr '\n' ' ' < "$TMP/slow.out")"
grep -q '^probe=CONNACK:89$' "$TMP/slow.out" || fail "a client while one lingers (--max-conns 1): $(cat "$TMP/slow.out")"
grep -q '^reset_after=' "$TMP/slow.out" || fail "the slow client was never reset: $(cat "$TMP/slow.out")"
after=$(sed -n 's/^reset_after=//p' "$TMP/slow.out")
python3 -c "import sys; a = float('$after'); sys.exit(not 0.75 <= a <= 5)" \
  || fail "the slow client was reset after ${after} s, not within 0.8 s (--linger-ms) .. 5 s of its bad packet"
grep -q '^read=DISCONNECT:95$' "$TMP/slow.out" || fail "slow client read: $(cat "$TMP/slow.out")"
out=$(timeout 30 "${LG[@]}" hostile "$PORT_h" 10 fast | tr '\n' ' ')
echo "  fast: $out"
[[ $out == reset_after=* ]] || fail "the flooding client was never reset: $out"
# the slot is free again
out=$(timeout 15 "${LG[@]}" hostile "$PORT_h" 0.2 slow | tr '\n' ' ')
[[ $out == *read=DISCONNECT:95* ]] || fail "after the lingers, a client: $out"
px_stop "$PID_h" || fail "proxy h exited with rc $?"
H=$TMP/h.json
jq -c '.linger, .connections' "$H"
[ "$(jq '.linger.cut_time' "$H")" -ge 1 ] && [ "$(jq '.linger.cut_bytes' "$H")" -eq 1 ] \
  && [ "$(jq '.linger.bytes_dropped' "$H")" -gt 262144 ] || fail "lingers cut not counted: $(jq -c .linger "$H")"
[ "$(jq '.connections.open_at_exit' "$H")" -eq 0 ] && [ "$(jq '.connections.closed == .connections.accepted' "$H")" = true ] \
  && [ "$(jq '.limits.held_at_exit_bytes' "$H")" -eq 0 ] || fail "slots: $(jq -c '.connections, .limits' "$H")"

# 2b. A client that never reads again: the proxy's last bytes wait behind deliveries it cannot send.
px_proxy d --max-packet 2048 --max-conns 1 --linger-ms 800 -v
out=$(timeout 60 "${LG[@]}" deaf "$PORT_d" "$BPORT" 8) || fail "deaf client: $out"
echo "  deaf: $out"
[[ $out =~ ^freed_after=([0-9.]+)$ ]] || fail "a client that never reads kept its connection and the slot: $out"
python3 -c "import sys; a = float('${BASH_REMATCH[1]}'); sys.exit(not 0.75 <= a <= 5)" \
  || fail "the deaf client's slot was freed after ${BASH_REMATCH[1]} s, not within 0.8 s (--linger-ms) .. 5 s"
px_stop "$PID_d" || fail "proxy d exited with rc $?"
D=$TMP/d.json
[ "$(jq '.linger.drain_cut' "$D")" -eq 1 ] && [ "$(jq '.connections.closed_by_client' "$D")" -ge 1 ] \
  && [ "$(jq '.connections.open_at_exit' "$D")" -eq 0 ] || fail "deaf client: $(jq -c '.linger, .connections' "$D")"

# 3. SIGTERM while a client that never closes lingers: out within the grace period.
px_proxy s --max-packet 2048
timeout 30 "${LG[@]}" hostile "$PORT_s" 10 none > "$TMP/stop.out" & STOPC=$!
for _ in $(seq 100); do grep -q ready "$TMP/stop.out" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$TMP/stop.out" || fail "the client at the stop did not connect"
t0=$(date +%s%N)
px_stop "$PID_s" || fail "proxy s exited with rc $?"
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$STOPC" || fail "client at the stop: $(cat "$TMP/stop.out")"
echo "  stop: exit after $ms ms; client: $(tr '\n' ' ' < "$TMP/stop.out")"
grep -q '^read=DISCONNECT:8b$' "$TMP/stop.out" || fail "client at the stop: $(cat "$TMP/stop.out")"
[ "$ms" -lt 2600 ] || fail "the proxy took $ms ms to stop with a lingering client (grace: 2 s)"
S=$TMP/s.json
[ "$(jq '.linger.cut_time' "$S")" -eq 1 ] && [ "$(jq '.connections.open_at_exit' "$S")" -eq 0 ] \
  && [ "$(jq '.connections.closed_at_shutdown' "$S")" -eq 1 ] || fail "stop: $(jq -c '.linger, .connections' "$S")"

px_stop "$PID_z" || fail "proxy z exited with rc $?"
[ "$(jq '.linger.lingers' "$TMP/z.json")" -eq 0 ] || fail "--linger-ms 0 lingered: $(jq -c .linger "$TMP/z.json")"
px_stop "$PID_a" || fail "proxy a exited with rc $?"
A=$TMP/a.json
[ "$(jq '.linger.lingers' "$A")" -eq 3 ] && [ "$(jq '.linger.cut_time + .linger.cut_bytes + .linger.drain_cut' "$A")" -eq 0 ] \
  || fail "the 3 clients that closed were not lingered for, or were cut: $(jq -c .linger "$A")"
[ "$(jq '.connections.closed_by_client == .connections.accepted' "$A")" = true ] && [ "$(jq '.connections.open_at_exit' "$A")" -eq 0 ] \
  || fail "accounting: $(jq -c .connections "$A")"
echo "proxy_linger: 3 of 3 backed-up clients got their deliveries, DISCONNECT 0x95 and EOF (--linger-ms 0: lost);" \
     "a silent client reset after ${after} s (--linger-ms 800), a flooding one at --linger-bytes, a deaf one's slot" \
     "freed; stop in $ms ms"
