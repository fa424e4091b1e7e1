#!/usr/bin/env bash
# Lingering close (README "Lingering close") for the closes that come
# without the proxy's own word: a client's EOF or reset, and the proxy's
# park bound overflowing. Real mosquitto, raw clients
# (proxy_linger_ends.py has the scenarios):
#  - subscribers that stopped reading leave (FIN or RST) while deliveries
#    wait unread on the proxy's broker side: the proxy sends the broker no
#    RST (tcpdump on lo counts them): its side is half-closed and read until
#    mosquitto closes, counted in linger.lingers. Before 2026-12-02 it was
#    closed at once, with the deliveries unread: RST.
#  - with the park bound lowered (test hook WM_PROXY_TEST_PARK_MAX=1), a
#    client writing 4 MB at once gets DISCONNECT 0x97 and then EOF (before:
#    a bare close, counted park_overflow only).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_broker
N=6
px_proxy le --threads 1 --conn-buffer 4096 --linger-bytes 16777216
timeout 60 tcpdump -i lo -U -n --immediate-mode -w "$TMP/rst.pcap" \
  "tcp dst port $BPORT and tcp[tcpflags] & tcp-rst != 0" > "$TMP/tcpdump.log" 2>&1 & TD=$!; px_track $TD
for _ in $(seq 100); do grep -q "listening on" "$TMP/tcpdump.log" && break; sleep 0.1; done
grep -q "listening on" "$TMP/tcpdump.log" || fail "tcpdump did not start: $(cat "$TMP/tcpdump.log")"
timeout 120 python3 "$(dirname "$0")/proxy_linger_ends.py" ends "$PORT_le" "$BPORT" $N || fail "scenario ends"
sleep 0.5
kill -INT $TD 2>/dev/null || true; wait $TD 2>/dev/null || true
px_stop "$PID_le" || fail "proxy exit status"
# RSTs towards the broker from the proxy's upstream sockets (the publisher is straight at the broker and
# leaves with a DISCONNECT; its socket never resets)
rsts=$(tcpdump -r "$TMP/rst.pcap" -n 2>/dev/null | wc -l)
[ "$rsts" -eq 0 ] || fail "$rsts RSTs sent to the broker: $(tcpdump -r "$TMP/rst.pcap" -n 2>/dev/null | head -3)"
jq -e --argjson n $N '.linger.lingers >= $n and .linger.cut_bytes == 0 and .linger.cut_time == 0 and .connections.closed_by_client >= $n and .connections.open_at_exit == 0' \
  "$TMP/le.json" > /dev/null || fail "summary: $(jq -c '{linger, connections}' "$TMP/le.json")"
echo "proxy_linger_ends: $N subscribers left (FIN, RST) while deliveries flowed: no RST to the broker, $(jq .linger.lingers "$TMP/le.json") lingers"

WM_PROXY_TEST_PARK_MAX=1 px_proxy pk --threads 1 --conn-buffer 4096
timeout 60 python3 "$(dirname "$0")/proxy_linger_ends.py" park "$PORT_pk" || fail "scenario park"
px_stop "$PID_pk" || fail "proxy pk exit status"
jq -e '.limits.park_overflow >= 1 and .told_clients.disconnect_0x97_quota_exceeded == 1 and .linger.lingers >= 1' \
  "$TMP/pk.json" > /dev/null || fail "summary pk: $(jq -c '{linger, told_clients, po: .limits.park_overflow}' "$TMP/pk.json")"
echo "proxy_linger_ends: a client over the park bound gets DISCONNECT 0x97, then EOF"
