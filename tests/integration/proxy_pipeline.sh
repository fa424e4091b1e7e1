#!/usr/bin/env bash
# Clients that pipeline after CONNECT (MQTT 5.0 §3.1.4 allows it) through a
# filtering wirematch-proxy: nothing the proxy answers itself may reach the
# client before the broker's CONNACK ([MQTT-3.2.0-1]: the server's first
# packet is CONNACK), nothing may be answered for a client the broker
# refuses, and the proxy's decisions that depend on the CONNACK must be taken
# knowing it (README "Front-end proxy", dataplane/proxy_frame.h "Held behind
# the CONNACK"). Raw client tests/integration/proxy_pipeline.py: CONNECT,
# the scenario's packets and a PINGREQ in one write.
#  - real mosquitto (anonymous): SUBACK refusals (unknown nbhd, bad xpath,
#    reserved identifier, 0x97 quota) and the --prefilter PUBACK 0x10 come
#    after CONNACK:00; the order of everything equals the direct run's;
#  - real mosquitto refusing anonymous clients: the proxied client gets
#    exactly what the direct one gets (CONNACK 0x87, closed): no PUBACK, no
#    SUBACK, nothing counted as acknowledged or refused by the proxy;
#  - tests/integration/fake_broker.py with a late CONNACK saying Subscription
#    Identifier Available 0: a pipelined nbhd SUBSCRIBE gets SUBACK 0xA1; with
#    Maximum Packet Size 2000: a SUBSCRIBE the added identifier makes larger
#    gets SUBACK 0x83, one that still fits is granted;
#  - what is held goes on after the CONNACK, in order and complete: 300 KB
#    pipelined behind a CONNACK that takes 1 s (the proxy stops reading the
#    client meanwhile, --conn-buffer 16384, counted), 2000 PUBLISHes to
#    mosquitto (a direct subscriber gets all in order), and a CONNECT +
#    PUBLISH + DISCONNECT whose client closes at once (delivered: to the fake
#    broker whose CONNACK takes 1 s, and to mosquitto).
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
PIPE=(timeout 30 python3 "$HERE/proxy_pipeline.py")

px_broker "max_queued_messages 100000"
px_deploy a --prefilter --max-subs-per-conn 1
px_proxy b --resolution "$TMP/m.wmr" --conn-buffer 16384

expect() {   # expect PORT SCENARIO [ARG] -- WANTED
  local port=$1 sc=$2 arg="" got
  [ "$3" != -- ] && { arg=$3; shift; }
  got=$("${PIPE[@]}" "$port" "$sc" $arg)
  [ "$got" = "$4" ] || fail "$sc${arg:+ $arg} through port $port: got '$got', want '$4'"
}

# 1. Anonymous mosquitto. Direct: everything granted, in order.
for sc in nbhd-unknown xpath-bad sid-reserved two-filters nbhd; do expect "$BPORT" $sc -- "CONNACK:00 SUBACK:01 PINGRESP"; done
expect "$BPORT" pub-qos1 -- "CONNACK:00 PUBACK:10 PINGRESP"
# Through the proxy: the proxy's own answers after the CONNACK, same order.
expect "$PORT_a" nbhd-unknown -- "CONNACK:00 SUBACK:80 PINGRESP"
# (a new xpath text waits for its compile, which refuses it; the PINGREQ goes on meanwhile, §3.12,
# so its PINGRESP may come before the SUBACK or after it: a race between the compile and the broker)
got=$("${PIPE[@]}" "$PORT_a" xpath-bad)
case "$got" in "CONNACK:00 SUBACK:80 PINGRESP" | "CONNACK:00 PINGRESP SUBACK:80") ;;
  *) fail "xpath-bad through port $PORT_a: got '$got', want CONNACK:00, SUBACK:80 and PINGRESP" ;; esac
expect "$PORT_a" sid-reserved -- "CONNACK:00 SUBACK:83 PINGRESP"
expect "$PORT_a" two-filters -- "CONNACK:00 SUBACK:97 PINGRESP"
expect "$PORT_a" pub-qos1 -- "CONNACK:00 PUBACK:10 PINGRESP"
expect "$PORT_a" nbhd -- "CONNACK:00 SUBACK:01 PINGRESP"

# 2. A broker that refuses the client: the proxied client sees what the direct one sees.
RPORT=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous false\npersistence false\n' "$RPORT" > "$TMP/refuse.conf"
mosquitto -c "$TMP/refuse.conf" > "$TMP/refuse.log" 2>&1 & RB=$!; px_track $RB
wait_port "$RPORT" "$RB" || fail "refusing mosquitto did not start"
BPORT=$RPORT px_proxy r --resolution "$TMP/m.wmr" --prefilter
for sc in pub-qos1 nbhd-unknown sid-reserved; do
  direct=$("${PIPE[@]}" "$RPORT" $sc)
  [[ "$direct" =~ ^CONNACK:8[0-9a-f]\ closed$ ]] || fail "refusing broker, direct $sc: '$direct'"
  expect "$PORT_r" $sc -- "$direct"
done

# 3. Decisions that need the CONNACK: a fake broker that answers late.
fake() {   # fake NAME OPTIONS...: a fake_broker.py on a free port -> FPORT_<NAME>, stdout $TMP/NAME.out
  local name=$1 port; shift; port=$(free_port)
  python3 "$HERE/fake_broker.py" "$port" "$@" > "$TMP/$name.out" 2> "$TMP/$name.ferr" & local pid=$!; px_track $pid
  wait_port "$port" "$pid" || fail "fake broker $name did not start"
  printf -v "FPORT_$name" %s "$port"
}
fake nosid --connack-delay 0.5 --no-sub-ids
fake small --connack-delay 1 --max-packet 2000
expect "$FPORT_nosid" nbhd -- "CONNACK:00 SUBACK:01 PINGRESP"
BPORT=$FPORT_nosid px_proxy fa --resolution "$TMP/m.wmr"
expect "$PORT_fa" nbhd -- "CONNACK:00 SUBACK:a1 PINGRESP"
BPORT=$FPORT_small px_proxy fb --resolution "$TMP/m.wmr" --conn-buffer 16384
expect "$PORT_fb" nbhd-size 2000 -- "CONNACK:00 SUBACK:83 PINGRESP"
expect "$PORT_fb" nbhd-size 1990 -- "CONNACK:00 SUBACK:01 PINGRESP"

# 4. Held packets go on after the CONNACK, complete and in order; also those of
#    a client that closed meanwhile.
expect "$PORT_fb" flood 300 -- "CONNACK:00 PINGRESP"
grep -qx "pingreq after 300 publishes" "$TMP/small.out" || fail "fake broker: $(cat "$TMP/small.out")"
[ "$("${PIPE[@]}" "$PORT_fb" pub-eof)" = sent ] || fail "pub-eof client"
for _ in $(seq 50); do grep -q "^disconnect" "$TMP/small.out" && break; sleep 0.1; done
grep -qx "disconnect after 1 publishes" "$TMP/small.out" || fail "a client closing before its CONNACK: fake broker got $(tail -1 "$TMP/small.out")"
N=2000
timeout 30 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$BPORT" -t 'flood/x' -t 'pe/x' -C $((N + 1)) -W 25 -d \
    -F 'MSG|%t|%p' > "$TMP/sub.out" 2>&1 & SUB=$!
for _ in $(seq 100); do grep -q 'received SUBACK' "$TMP/sub.out" 2>/dev/null && break; sleep 0.1; done
grep -q 'received SUBACK' "$TMP/sub.out" || fail "direct subscriber did not subscribe"
[ "$("${PIPE[@]}" "$PORT_b" pub-eof)" = sent ] || fail "pub-eof client"
expect "$PORT_b" flood $N -- "CONNACK:00 PINGRESP"
wait "$SUB" || fail "direct subscriber: $(grep -c '^MSG' "$TMP/sub.out") of $((N + 1))"
grep '^MSG|flood/x|' "$TMP/sub.out" | cut -d'|' -f3 | cut -d- -f1 > "$TMP/seq"
seq 1 $N | cmp -s - "$TMP/seq" || fail "flood through the proxy: not 1..$N in order ($(wc -l < "$TMP/seq") received)"
grep -qx 'MSG|pe/x|held-then-eof' "$TMP/sub.out" || fail "the PUBLISH of a client that closed before its CONNACK was lost"

for p in a b r fa fb; do px_stop "$(eval echo "\$PID_$p")" || fail "proxy $p exited with rc $?"; done
R=$TMP/r.json
[ "$(jq '[.prefilter.dropped[]] | add' "$R")" -eq 0 ] && [ "$(jq '.filter.acked_on_behalf + .filter.suback_unknown_nbhd + .filter.sid_reserved' "$R")" -eq 0 ] \
  || fail "the proxy answered for a refused client: $(jq -c '{prefilter, filter}' "$R")"
[ "$(jq '.limits.conn_buffer.client_to_upstream' "$TMP/fb.json")" -ge 1 ] || fail "holding 300 KB did not pause the client: $(jq -c .limits "$TMP/fb.json")"
[ "$(jq '.filter.sid_unavailable' "$TMP/fa.json")" -eq 1 ] && [ "$(jq '.filter.too_large' "$TMP/fb.json")" -eq 1 ] \
  || fail "counters: $(jq -c .filter "$TMP/fa.json") $(jq -c .filter "$TMP/fb.json")"
for p in a b r fa fb; do [ "$(jq '.limits.held_at_exit_bytes' "$TMP/$p.json")" -eq 0 ] || fail "proxy $p: bytes still held at exit"; done
echo "proxy_pipeline: proxy answers after CONNACK (4 SUBACK refusals, PUBACK 0x10), refused client gets only the broker's CONNACK, 0xA1/0x83 decided on the CONNACK, $N + 300 held packets delivered in order"
