#!/usr/bin/env bash
# Flow-control limits exceeded, straight to mosquitto and through
# wirematch-proxy in pass-through: the same raw-socket client script
# (proxy_flow.py, exact bytes) must see the same packets both ways.
#  - Receive Maximum exceeded by a client (§3.3.4): the broker announces
#    Receive Maximum 5 (max_inflight_messages 5) and the client sends 8 QoS 2
#    PUBLISHes without PUBREL. MQTT 5.0 says the server DISCONNECTs with 0x93;
#    mosquitto 2.0.11 answers PUBREC 0x97 (Quota exceeded) instead and keeps
#    the connection. Whatever the broker does, the proxy must relay it: the
#    test requires identical transcripts, and a subscriber gets exactly the
#    accepted messages both ways.
#  - The client's own Receive Maximum (§3.1.2.11.3, §4.9): a subscriber with
#    Receive Maximum 3 that acknowledges late gets its first 3 QoS 1
#    deliveries, then nothing until it acknowledges, then the rest, in order,
#    with and without the proxy. (mosquitto 2.0.11 then refills the window by
#    3 per PUBACK, exceeding the client's maximum: reported as DIVERGES, the
#    same both ways.)
#  - Maximum Packet Size exceeded towards the broker (§3.1.2.11.4,
#    §3.2.2.3.6): the broker announces 1000 bytes; a 1500-byte PUBLISH gets
#    DISCONNECT 0x95 and the connection closes (through the proxy the proxy
#    enforces the limit the broker announced, counted in its summary).
#  - Maximum Packet Size of the client: a subscriber announcing 300 bytes gets
#    the small messages and one of exactly 300 bytes, not the 600-byte one (the
#    broker drops it); in the deployment mode too, where the broker counts the
#    identifier the proxy strips (before: the 300-byte one was dropped there).
# 127.0.0.1 only, bounded in time, stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
FLOW=(timeout 30 python3 "$(dirname "$0")/proxy_flow.py")

px_broker "max_inflight_messages 5" "max_packet_size 1000"
px_proxy p --threads 2
px_deploy f --threads 2
t0=$(date +%s)

# wait_ready FILE: until the background client printed "ready" (10 s)
wait_ready() { for _ in $(seq 100); do grep -q '^ready$' "$1" 2>/dev/null && return 0; sleep 0.1; done; fail "client $1 not ready: $(cat "$1")"; }

# scenario PORT NAME: every case against PORT; transcript in $TMP/NAME.out
scenario() {
  local port=$1 name=$2 d="$TMP/$2"; mkdir -p "$d"
  # Receive Maximum exceeded by the client, with a subscriber counting what the broker accepted.
  # (the subscriber stops at a sentinel published after the client completed its flows:
  # QoS 2 deliveries on one topic keep their order)
  timeout 20 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$port" -t "flow/quota/q2-$name" -q 2 -W 15 -d \
      -F 'MSG|%p' > "$d/quota-sub" 2>&1 & local qs=$!
  for _ in $(seq 100); do grep -q 'received SUBACK' "$d/quota-sub" 2>/dev/null && break; sleep 0.1; done
  "${FLOW[@]}" "$port" quota "q2-$name" 8 2 > "$d/quota2" || fail "$name: quota QoS 2 client failed"
  timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$port" -t "flow/quota/q2-$name" -q 2 -m end
  for _ in $(seq 100); do grep -q '^MSG|end$' "$d/quota-sub" && break; sleep 0.1; done
  grep -q '^MSG|end$' "$d/quota-sub" || fail "$name: the quota subscriber got no sentinel"
  kill -TERM "$qs" 2>/dev/null; wait "$qs" 2>/dev/null || true
  grep '^MSG|q' "$d/quota-sub" | sort > "$d/quota-sub.msgs"
  "${FLOW[@]}" "$port" quota "q1-$name" 8 1 > "$d/quota1" || fail "$name: quota QoS 1 client failed"

  # The subscriber's Receive Maximum: 10 QoS 1 messages towards a window of 3.
  "${FLOW[@]}" "$port" window "win-$name" "flow/win/$name" 3 10 > "$d/window" 2> "$d/window.err" & local ws=$!
  wait_ready "$d/window"
  for i in $(seq 1 10); do echo "w$i"; done |
    timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$port" -t "flow/win/$name" -q 1 -l || fail "$name: window publisher failed"
  wait "$ws" || fail "$name: window client failed: $(cat "$d/window" "$d/window.err")"

  # Maximum Packet Size: towards the broker, then towards the client.
  "${FLOW[@]}" "$port" big-in "big-$name" 1500 > "$d/big" || fail "$name: big-in client failed"
  # (a topic of the same length in every run: flow/small/d, /p, /f; a QoS 1 PUBLISH with a
  # 280-byte payload on it is 300 bytes, exactly the client's bound)
  local st="flow/small/${name:0:1}"
  "${FLOW[@]}" "$port" small-out "small-$name" "$st" 300 3 > "$d/small" 2> "$d/small.err" & local ss=$!
  wait_ready "$d/small"
  local pub=(timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$port" -t "$st" -q 1)
  "${pub[@]}" -m s1; head -c 600 /dev/zero | tr '\0' L | "${pub[@]}" -s
  head -c 280 /dev/zero | tr '\0' E | "${pub[@]}" -s; "${pub[@]}" -m s2
  wait "$ss" || fail "$name: small-out client failed: $(cat "$d/small" "$d/small.err")"

  for f in quota2 quota-sub.msgs quota1 window big small; do echo "== $f"; cat "$d/$f"; done > "$TMP/$name.out"
}

scenario "$BPORT" direct
scenario "$PORT_p" proxied
diff "$TMP/direct.out" "$TMP/proxied.out" >&2 || fail "the client saw different packets through the proxy"
# The deployment mode: --resolution and --schemas loaded, no nbhd/xpath used.
scenario "$PORT_f" filtered
diff "$TMP/direct.out" "$TMP/filtered.out" >&2 || fail "the client saw different packets through the proxy in the deployment mode"

# The transcripts hold what the cases are about (so equality is not vacuous).
O=$TMP/proxied.out
section() { awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' "$O" | tr '\n' '|'; }
grep -q '^CONNACK 00 receive-maximum 5$' "$O" || fail "broker's Receive Maximum not seen"
[ "$(grep -c '^PUBREC [0-9]* 97$' "$O")" -ge 1 ] || fail "no quota refusal after the Receive Maximum was exceeded"
n_ok=$(grep -c '^PUBREC [0-9]* 00$' "$O")
[ "$(grep -c '^PUBCOMP [0-9]* 00$' "$O")" -eq "$n_ok" ] || fail "accepted QoS 2 flows not completed"
[ "$(grep -c '^MSG|q[0-9]*$' "$O")" -eq "$n_ok" ] || fail "the subscriber did not get exactly the accepted messages"
# QoS 1 is acknowledged at once (PUBACK 0x10: no subscribers), so it never exceeds the window.
[ "$(grep -c '^PUBACK [0-9]* 10$' "$O")" -eq 8 ] || fail "QoS 1 PUBACKs"
# The broker honours the subscriber's window of 3 at first; every message arrives, in order.
win=$(section window | tr '|' '\n' | grep '^batch')
[ "$(head -1 <<< "$win")" = "batch w1 w2 w3" ] || fail "Receive Maximum 3 not honoured: $win"
[ "$(sed 's/^batch //' <<< "$win" | tr '\n' ' ')" = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 " ] || fail "window deliveries: $win"
# mosquitto 2.0.11 refills the window by 3 for each PUBACK (§4.9 says by 1): note it when seen.
widest=$(awk '{ if (NF - 1 > m) m = NF - 1 } END { print m }' <<< "$win")
note=""; [ "$widest" -gt 3 ] && note="; DIVERGES: the broker then sent $widest unacknowledged QoS 1 PUBLISHes to a client with Receive Maximum 3 (same with and without the proxy)"
grep -q '^received 10$' "$O" || fail "window client did not get all 10"
[ "$(section big)" = "CONNACK 00 maximum-packet-size 1000|DISCONNECT 95|closed|" ] || fail "Maximum Packet Size exceeded: $(section big)"
[ "$(section small)" = "ready|PUBLISH payload 2|PUBLISH payload 280|PUBLISH payload 2|" ] || fail "client's Maximum Packet Size: $(section small)"

px_stop "$PID_p" || fail "proxy exited with rc $?"
S=$TMP/p.json
[ "$(jq '.limits.packet_too_large.client_to_upstream' "$S")" -eq 1 ] || fail "oversized PUBLISH not counted by the proxy: $(jq -c .limits "$S")"
[ "$(jq '.malformed.client_to_upstream + .malformed.upstream_to_client' "$S")" -eq 0 ] || fail "malformed counted"
[ "$(jq '.connections.open_at_exit' "$S")" -eq 0 ] || fail "connections left open"
# the heap figures come from jemalloc where the program runs on it (not in sanitizer builds)
if grep -q libjemalloc <<< "$(ldd "$PROXY")"; then # ldd read whole: grep -q would SIGPIPE it under pipefail
  [ "$(jq -r '.memory.allocator' "$S")" = jemalloc ] && [ "$(jq '.memory | .allocated > 0 and .active >= .allocated and .mapped >= .active and .resident >= .active' "$S")" = true ] \
    || fail "jemalloc figures missing or inconsistent: $(jq -c .memory "$S")"
else
  [ "$(jq -c '.memory | keys' "$S")" = '["allocator","process_peak_rss","process_rss"]' ] && [ "$(jq -r .memory.allocator "$S")" = other ] \
    || fail "memory without jemalloc: $(jq -c .memory "$S")"
fi
# the process's resident set from the kernel, whatever the allocator (a live process has one)
[ "$(jq '.memory | .process_rss > 0 and .process_peak_rss > 0' "$S")" = true ] || fail "process_rss: $(jq -c .memory "$S")"
echo "proxy_flow: Receive Maximum (broker 5: $n_ok of 8 QoS 2 accepted, PUBREC 0x97 for the rest where §3.3.4 says DISCONNECT 0x93; subscriber 3: first window 3) and Maximum Packet Size (0x95; 600 B dropped for a 300 B client) identical with and without the proxy (also with --resolution --schemas), $(( $(date +%s) - t0 ))s$note"
