#!/usr/bin/env bash
# wirematch-proxy with no filters is transparent (issue 7, "Must show"): the
# same mosquitto_pub/mosquitto_sub script (MQTT v5: QoS 0/1/2, retained
# messages, user properties and other PUBLISH properties, thousands of
# messages) gives the same deliveries straight to mosquitto and through the
# proxy, and through a proxy in the deployment mode (--resolution and
# --schemas loaded, no nbhd/xpath used: every SUBSCRIBE gets the proxy's
# plain identifier, every delivery is rewritten without it). Also checks the
# proxy's connection limit and clean SIGTERM stop with its JSON summary. Everything runs on 127.0.0.1, bounded in time, and is
# stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"

# Queues large enough that the broker drops nothing.
px_broker "max_queued_messages 100000"
px_proxy main --threads 2
PPORT=$PORT_main; PROXY_PID=$PID_main
px_deploy f --threads 2

N1=2000; N2=1000; N0=500; NQ2=15
seq 1 $N1 | sed 's/^/q1-/' > "$TMP/lines1"
seq 1 $N2 | sed 's/^/q2-/' > "$TMP/lines2"
seq 1 $N0 | sed 's/^/q0-/' > "$TMP/linesz"
seq 1 $NQ2 | sed 's/^/s2-/' > "$TMP/linesq2"
EXPECT_A=$((N1 + N2 + N0 + NQ2 + 5))   # everything: + ret, zero, one, two, end
EXPECT_B=$((NQ2 + 1))                  # the QoS 2 subscription: small, two

# sub NAME PORT ID FILTER QOS COUNT OUT: a subscriber printing one line per
# message; returns once its SUBACK arrived (-d; stdbuf, since stdout is a
# file and mosquitto_sub flushes only after a message), pid in $sub_pid.
sub() {
  timeout 40 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$2" -i "$3" -t "$4" -q "$5" -d -C "$6" -W 35 \
      -F "MSG|%t|q%q|r%r|%P|%C|%R|%E|%p" > "$7" 2> "$7.err" & sub_pid=$!
  for _ in $(seq 100); do grep -q 'received SUBACK' "$7" 2>/dev/null && return 0; sleep 0.1; done
  fail "$1: subscriber $3 got no SUBACK"
}

# delivered NAME FILE PREFIX COUNT: returns once the subscriber's FILE holds
# COUNT messages whose line starts with PREFIX (20 s). A QoS 0 publisher gets
# no acknowledgement: its exit says its bytes left it, not that the broker has
# them, and the next publisher's connection (through the proxy possibly
# another worker's) can overtake them; MQTT orders messages per connection
# only (MQTT 5.0 §4.6). So the script waits for QoS 0 messages to arrive
# before the next publisher starts (before: "end" ahead of the last QoS 0
# messages through the proxy in 2 of 25 runs; straight to mosquitto with
# 20,000 of them too).
delivered() {
  local n=0
  for _ in $(seq 200); do
    n=$(grep -c "^$3" "$2" 2>/dev/null || true)
    [ "$n" -ge "$4" ] && return 0
    sleep 0.1
  done
  fail "$1: $n of $4 '$3' messages reached the subscriber"
}

# scenario PORT NAME: the client script; its normalised deliveries go to $TMP/NAME.out
# libmosquitto 2.0.11 (Debian 12) fails with a protocol error when more QoS 2
# deliveries than its Receive Maximum (20) are in flight towards it, with or
# without the proxy; so the QoS 2 subscription gets fewer than 20 messages,
# and the QoS 2 burst is delivered to the QoS 1 subscription.
scenario() {
  local port=$1 name=$2 pre="wm/$2" d="$TMP/$2"; mkdir -p "$d"
  local pub=(mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$port")
  # A retained message before anyone subscribes.
  "${pub[@]}" -t "$pre/ret" -m retained-1 -q 1 -r -D PUBLISH user-property origin before
  sub "$name" "$port" "all-$name" "$pre/#" 1 "$EXPECT_A" "$d/a.raw"; local pa=$sub_pid
  sub "$name" "$port" "q2-$name" "$pre/q2/#" 2 "$EXPECT_B" "$d/b.raw"; local pb=$sub_pid
  "${pub[@]}" -t "$pre/a" -m zero -q 0 -D PUBLISH user-property k v -D PUBLISH user-property k v2
  delivered "$name" "$d/a.raw" "MSG|$pre/a|q0|" 1
  "${pub[@]}" -t "$pre/a" -m one -q 1 -D PUBLISH content-type text/plain -D PUBLISH response-topic "$pre/reply"
  "${pub[@]}" -t "$pre/q2/two" -m two -q 2 -D PUBLISH message-expiry-interval 3600
  "${pub[@]}" -t "$pre/q2/small" -q 2 -l < "$TMP/linesq2"
  "${pub[@]}" -t "$pre/many1" -q 1 -l < "$TMP/lines1"
  "${pub[@]}" -t "$pre/many2" -q 2 -l < "$TMP/lines2"
  "${pub[@]}" -t "$pre/many0" -q 0 -l < "$TMP/linesz"
  delivered "$name" "$d/a.raw" "MSG|$pre/many0|" $N0
  "${pub[@]}" -t "$pre/end" -m end -q 1 -D PUBLISH user-property last yes
  wait "$pa" || fail "$name: subscriber all-$name ended with rc $? ($(grep -c '^MSG|' "$d/a.raw") messages)"
  wait "$pb" || fail "$name: subscriber q2-$name ended with rc $? ($(grep -c '^MSG|' "$d/b.raw") messages)"
  # A late subscriber gets the retained message.
  timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$port" -t "$pre/ret" -q 1 -C 1 -W 8 \
      -F "MSG|%t|q%q|r%r|%P|%p" > "$d/late.raw" || fail "$name: late subscriber got no retained message"
  # The expiry interval is counted down by the broker: keep only its presence.
  cat "$d/a.raw" "$d/b.raw" "$d/late.raw" | grep '^MSG|' |
    sed -e "s#|$pre/#|PRE/#g" -e 's/|3[0-9][0-9][0-9]|/|EXPIRY|/' > "$TMP/$name.out"
}

t0=$(date +%s)
scenario "$BPORT" direct
scenario "$PPORT" proxied
scenario "$PORT_f" filtered
TOTAL=$((EXPECT_A + EXPECT_B + 1))
n=$(wc -l < "$TMP/direct.out")
[ "$n" -eq $TOTAL ] || fail "direct run delivered $n lines, expected $TOTAL"
diff "$TMP/direct.out" "$TMP/proxied.out" > "$TMP/diff" || { head -20 "$TMP/diff" >&2; fail "deliveries differ with the proxy"; }
diff "$TMP/direct.out" "$TMP/filtered.out" > "$TMP/diff" || { head -20 "$TMP/diff" >&2; fail "deliveries differ with the proxy in the deployment mode"; }
px_stop "$PID_f" || fail "deployment-mode proxy exited with rc $?"
F=$TMP/f.json   # the filter really rewrote: identifiers added and stripped, nothing withheld
[ "$(jq '.filter.sid_added' "$F")" -ge 3 ] && [ "$(jq '.filter.sid_stripped' "$F")" -ge $((EXPECT_A + EXPECT_B)) ] \
  && [ "$(jq '[.filter.withheld[]] | add' "$F")" -eq 0 ] || fail "deployment mode: $(jq -c .filter "$F")"
# The script's content is really there (so equality is not vacuous).
O=$TMP/proxied.out
# Retained: every subscription came after the publication, so each gets it with the retain flag (§3.3.1.3).
[ "$(grep -c '^MSG|PRE/ret|q1|r1|origin:before|.*retained-1$' "$O")" -eq 2 ] || fail "retained message missing"
grep -q '^MSG|PRE/a|q0|r0|k:v k:v2|' "$O" || fail "user properties lost"
grep -q '^MSG|PRE/a|q1|r0||text/plain|PRE/reply|' "$O" || fail "content type / response topic lost"
grep -q '^MSG|PRE/q2/two|q2|r0|.*|EXPIRY|two$' "$O" || fail "QoS 2 delivery or expiry lost"
[ "$(grep -c '^MSG|PRE/q2/small|q2|' "$O")" -eq $NQ2 ] || fail "QoS 2 deliveries incomplete"
[ "$(grep -c '^MSG|PRE/many1|q1|' "$O")" -eq $N1 ] || fail "QoS 1 burst incomplete"
[ "$(grep -c '^MSG|PRE/many2|q1|' "$O")" -eq $N2 ] || fail "QoS 2 burst incomplete"
[ "$(grep -c '^MSG|PRE/many0|q0|' "$O")" -eq $N0 ] || fail "QoS 0 burst incomplete"
grep -q '^MSG|PRE/end|q1|r0|last:yes|' "$O" || fail "last message missing"

# ---- connection limit: a second proxy admits one client; the next is refused and counted.
px_proxy limit --max-conns 1
LPORT=$PORT_limit; LPID=$PID_limit
# (wait_port's probe connection itself counts as one accepted connection)
timeout 10 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$LPORT" -t x -W 6 -d > "$TMP/hold.out" 2>&1 & HOLD=$!
for _ in $(seq 100); do grep -q 'received SUBACK' "$TMP/hold.out" 2>/dev/null && break; sleep 0.1; done
grep -q 'received SUBACK' "$TMP/hold.out" || fail "first client did not get through the limited proxy"
if timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$LPORT" -t x -m refused -q 1 2>/dev/null; then
  fail "a client beyond --max-conns was served"
fi
px_stop "$LPID" || fail "limited proxy exited with rc $?"
# (it may be gone already: the stop sent it DISCONNECT 0x8B, which ends mosquitto_sub)
kill -TERM "$HOLD" 2>/dev/null || true; wait "$HOLD" 2>/dev/null || true
[ "$(jq '.limits.conns' "$TMP/limit.json")" -ge 1 ] || fail "refused connection not counted: $(cat "$TMP/limit.json")"
[ "$(jq '.connections.closed_at_shutdown' "$TMP/limit.json")" -ge 1 ] || fail "held connection not closed at shutdown"

# ---- clean stop of the main proxy and its summary
px_stop "$PROXY_PID" || fail "proxy exited with rc $? on SIGTERM"
S=$TMP/main.json
jq -e . "$S" > /dev/null || fail "summary is not JSON"
[ "$(jq '.connections.open_at_exit' "$S")" -eq 0 ] || fail "connections left open"
[ "$(jq '.connections.accepted' "$S")" -eq "$(jq '.connections.closed' "$S")" ] || fail "accepted != closed"
[ "$(jq '.limits.held_at_exit_bytes' "$S")" -eq 0 ] || fail "byte accounting drifted: $(jq -c .limits "$S")"
c2u=$(jq '.bytes.client_to_upstream' "$S"); u2c=$(jq '.bytes.upstream_to_client' "$S")
[ "$c2u" -gt 30000 ] && [ "$u2c" -gt 30000 ] || fail "relayed bytes implausible: $c2u / $u2c"
[ "$(jq '.malformed.client_to_upstream + .malformed.upstream_to_client' "$S")" -eq 0 ] || fail "malformed packets counted"
# Every PUBLISH of the script was framed: 1 retained + zero, one, two + the bursts + end
# upstream; every delivery downstream.
[ "$(jq '.publishes.client_to_upstream' "$S")" -eq $((1 + 3 + NQ2 + N1 + N2 + N0 + 1)) ] || fail "PUBLISH count upstream: $(jq -c .publishes "$S")"
[ "$(jq '.publishes.upstream_to_client' "$S")" -eq $TOTAL ] || fail "PUBLISH count downstream: $(jq -c .publishes "$S")"
echo "proxy_transparency: $TOTAL deliveries identical with and without the proxy (also with --resolution --schemas); ${c2u}B up, ${u2c}B down, $(( $(date +%s) - t0 ))s"
