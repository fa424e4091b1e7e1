#!/usr/bin/env bash
# The proxy acknowledges (TCP) what it reads when it reads it, on both sides,
# whatever it sent on that socket before (dataplane/proxy_loop.c ack_at_read).
# Otherwise a Nagle-writing broker (mosquitto) holds each small delivery
# until the ACK of its previous one: the spatial-latency regression of
# 2026-12-01 (every delivery ~1 ms late at 10,000 msg/s in `make bench-proxy`,
# 1.4 socket reads per message instead of 5.0), which came from the proxy
# sending a subscriber's SUBSCRIBE right after reading the broker's CONNACK
# (held behind it for a pipelining client; any client that waits for its
# CONNACK does the same). tests/integration/proxy_acks.py plays broker and
# client in lock step and, after each relayed packet, requires that the
# sender's socket holds nothing unacknowledged (SIOCOUTQ 0): SUBACK, 5 QoS 1
# deliveries and their PUBACKs, 5 client publications; a pipelining client
# and one that waits for its CONNACK; pass-through and filtering
# (--resolution). The broker is scripted because only the sender's own
# socket shows what the proxy acknowledged; `make bench-proxy` measures the
# effect with mosquitto. On the binary before the fix every one of the four
# runs failed (SUBACK unacknowledged, or the client's PUBACK: the proxy's
# client socket turns the same way once it has sent the CONNACK).
# Not timed: each check follows its cause (the read that must have sent the
# ACK happened before the relayed packet reached its receiver); a late ACK
# is ~40 ms late (Linux's delayed-ACK timer).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_monaco
n=0
for mode in pipelined connack-first; do
  for filt in plain filter; do
    name=${filt}_${mode//-/_}
    BPORT=$(free_port)   # proxy_acks.py listens there; the proxy connects upstream when its client does
    args=(); [ $filt = filter ] && args=(--resolution "$TMP/m.wmr")
    px_proxy "$name" "${args[@]}"
    port=PORT_$name
    out=$(timeout 30 python3 "$HERE/proxy_acks.py" "$BPORT" "${!port}" "$mode" 2>&1) || true
    [[ "$out" == ok:* ]] || fail "$filt, $mode: $out"
    pid=PID_$name
    px_stop "${!pid}" || fail "proxy $name exited with rc $?"
    n=$((n + 1))
  done
done
echo "proxy_acks: $n runs (pass-through and --resolution, pipelining and CONNACK-first clients): every relayed packet acknowledged at its read"
