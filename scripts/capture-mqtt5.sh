#!/usr/bin/env bash
# Records real MQTT v5 traffic between mosquitto 2.x and the stock mosquitto
# clients (mosquitto_sub / mosquitto_pub -V mqttv5) into a pcap: the reference
# frames the codec is checked against, field by field, with tshark's MQTT
# dissector (tests/integration/mqtt5_tshark.sh).
#
# usage: scripts/capture-mqtt5.sh OUT.pcap
#
# The broker is a throw-away one on 127.0.0.1 (scripts/lib/mqtt-peers.sh);
# tcpdump records lo filtered on its port. The session, about 9 s:
#   sub-all   CONNECT with properties (session expiry, receive maximum, maximum
#             packet size, topic alias maximum, request problem information, user
#             property), one SUBSCRIBE of four filters at QoS 2 with Subscription
#             Identifier 7 and two User Properties, UNSUBSCRIBE with a User
#             Property, keep alive 5 s; ends after 9 s with DISCONNECT reason 0x04
#             (mosquitto_sub -W sends "disconnect with will message").
#   sub-share a shared subscription ($share/...) at QoS 1, Subscription
#             Identifier 300 (two-byte VBI), receives the large PUBLISH.
#   sub-idle  Subscription Identifier 2097152 (four-byte VBI), nothing to
#             receive: PINGREQ / PINGRESP after 5 s of silence.
#   will      CONNECT with a Will (QoS 1, properties), killed with SIGKILL so the
#             broker publishes its Will to sub-all.
#   pub-q0    QoS 0, message expiry, content type, payload format, two User
#             Properties (peid first).
#   pub-q1    QoS 1 retained, response topic, correlation data.
#   pub-q2    QoS 2 (PUBREC / PUBREL / PUBCOMP), user name and password.
#   pub-alias QoS 1, Topic Alias 2, four times: topic then empty topic + alias.
#   pub-lines QoS 0, Topic Alias 1, five lines (mosquitto_pub -l).
#   pub-none  QoS 1 to a topic nobody subscribes: PUBACK reason 0x10.
#   pub-big   QoS 1, 17,000-byte payload (three-byte Remaining Length).
#   pub-auth  CONNECT with Authentication Method/Data: CONNACK 0x8C.
#   pub-disc  DISCONNECT with a User Property and Session Expiry Interval.
# Every client is bounded by `timeout`; broker and tcpdump are stopped by trap.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT.pcap" >&2; exit 2; }
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/mqtt-peers.sh
source "$HERE/lib/mqtt-peers.sh"

wm_broker_start "log_type subscribe" "log_type unsubscribe"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wm-cap5.XXXXXX"); wm_at_exit "rm -rf '$tmp'"
wm_pcap_start "$tmp/out.pcap" "tcp port $WM_BROKER_PORT"

C=(-h 127.0.0.1 -p "$WM_BROKER_PORT" -V mqttv5)
bg_pids=()
bg() { "$@" >/dev/null & bg_pids+=($!); }
# TERM, not KILL: `timeout` forwards TERM to its client, KILL would orphan it.
wm_at_exit 'for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; for p in "${bg_pids[@]}"; do _wm_wait_pid_gone "$p" 5; done'
# Subscribers are up when the broker has logged their SUBSCRIBE answer; poll
# the log instead of sleeping a fixed time (the machine may be loaded).
wait_log() { # PATTERN COUNT (a grep regex; log_type subscribe logs "ID QOS FILTER")
  local deadline=$((SECONDS + 15))
  while [ "$(grep -c -- "$1" "$WM_BROKER_DIR/mosquitto.log" || true)" -lt "$2" ]; do
    [ $SECONDS -lt $deadline ] || { echo "capture-mqtt5: timed out waiting for '$1' in the broker log" >&2; exit 1; }
    sleep 0.05
  done
}

bg timeout 20 mosquitto_sub "${C[@]}" -i wm-sub-all -k 5 -q 2 -W 9 -v \
  -D connect session-expiry-interval 30 -D connect receive-maximum 32 \
  -D connect maximum-packet-size 65536 -D connect topic-alias-maximum 8 \
  -D connect request-problem-information 1 -D connect user-property role subscriber \
  -t 'traffic/flow/#' -t 'parking/+/occupancy' -t 'wm/will/+' -t 'wm/reply' \
  -D subscribe subscription-identifier 7 \
  -D subscribe user-property nbhd X1 -D subscribe user-property owner capture-mqtt5 \
  -U 'old/+/topic' -D unsubscribe user-property why cleanup
bg timeout 20 mosquitto_sub "${C[@]}" -i wm-sub-share -q 1 -W 9 -C 1 \
  -t '$share/bulk/bulk/#' -D subscribe subscription-identifier 300 \
  -D subscribe user-property nbhd X3
bg timeout 20 mosquitto_sub "${C[@]}" -i wm-sub-idle -k 5 -W 8 \
  -t 'idle/#' -D subscribe subscription-identifier 2097152
# Not under `timeout`: SIGKILL must reach mosquitto_sub itself (the exit trap
# bounds it).
bg mosquitto_sub "${C[@]}" -i wm-will -k 30 -t 'nothing/here' \
  --will-topic wm/will/wm-will --will-payload offline --will-qos 1 \
  -D will user-property peid n2294366734 -D will content-type text/plain \
  -D will message-expiry-interval 120 -D will will-delay-interval 0
will_pid=${bg_pids[-1]}
for id in wm-sub-all wm-sub-share wm-sub-idle wm-will; do wait_log ": $id [0-2] " 1; done

pub() { timeout 15 mosquitto_pub "${C[@]}" "$@"; }
pub -i wm-pub-q0 -q 0 -t traffic/flow/r4230187.0 -m '{"veh_per_h":412,"speed_kmh":31}' \
  -D publish user-property peid r4230187.0 -D publish user-property src loop-7 \
  -D publish message-expiry-interval 60 -D publish content-type application/json \
  -D publish payload-format-indicator 1
pub -i wm-pub-q1 -q 1 -r -t parking/a339724631/occupancy -m '{"free":17,"total":120}' \
  -D publish user-property peid a339724631 -D publish user-property src gate-2 \
  -D publish response-topic wm/reply -D publish correlation-data req-0042
pub -i wm-pub-q2 -u wm-user -P secret -q 2 -t traffic/flow/r357167409.0 -m '{"veh_per_h":96,"speed_kmh":44}' \
  -D publish user-property peid r357167409.0 -D publish user-property src loop-9
pub -i wm-pub-alias -q 1 -t traffic/flow/r176334442.2 -m '{"veh_per_h":250}' --repeat 4 \
  -D publish topic-alias 2 -D publish user-property peid r176334442.2 \
  -D publish user-property src loop-3
printf '%s\n' '{"veh_per_h":1}' '{"veh_per_h":2}' '{"veh_per_h":3}' '{"veh_per_h":5}' '{"veh_per_h":8}' |
  pub -i wm-pub-lines -q 0 -t traffic/flow/r176336114.4 -l -D publish topic-alias 1 \
    -D publish user-property peid r176336114.4 -D publish user-property src loop-5
pub -i wm-pub-none -q 1 -t nobody/listens/here -m x -D publish user-property peid z12_5 \
  -D publish user-property src none
head -c 17000 /dev/zero | tr '\0' 'b' >"$tmp/big"
pub -i wm-pub-big -q 1 -t bulk/r4230187.0 -f "$tmp/big" -D publish user-property peid r4230187.0 \
  -D publish user-property src bulk
pub -i wm-pub-disc -q 0 -t traffic/flow/r4230181.1 -m '{"veh_per_h":0}' \
  -D publish user-property peid r4230181.1 -D publish user-property src loop-1 \
  -D disconnect session-expiry-interval 0 -D disconnect user-property bye now

# An authentication method the broker has no plugin for: CONNACK 0x8C, and
# mosquitto_pub exits with that reason code (140).
rc=0; pub -i wm-pub-auth -t a/b -m x -D connect authentication-method SCRAM-SHA-1 \
  -D connect authentication-data 0102 2>/dev/null || rc=$?
[ $rc -eq 140 ] || { echo "capture-mqtt5: expected CONNACK 0x8C (rc 140), mosquitto_pub rc $rc" >&2; exit 1; }

# The Will: an abrupt end of the connection makes the broker publish it (§3.1.2.5).
kill -KILL "$will_pid"
for p in "${bg_pids[@]}"; do
  [ "$p" = "$will_pid" ] && { wait "$p" 2>/dev/null || true; continue; }
  wait "$p" || { rc=$?; [ $rc -eq 27 ] || { echo "capture-mqtt5: a subscriber failed (rc $rc)" >&2; exit 1; }; }
done
bg_pids=()
wm_pcap_stop
cat "$tmp/out.pcap" >"$OUT"   # (tcpdump owns its file; the copy is ours)
echo "capture-mqtt5: $(tshark -r "$OUT" 2>/dev/null | wc -l) packets, broker port $WM_BROKER_PORT -> $OUT"
