#!/usr/bin/env bash
# `wmctl mqtt decode` against tshark's MQTT dissector on real traffic between
# mosquitto 2.x and the stock mosquitto clients (MQTT v5), field by field
# (tests/tools/mqtt5_tshark.py):
#   1. the committed capture tests/data/mqtt5-clients.pcap
#      (scripts/capture-mqtt5.sh: every packet type but AUTH, QoS 0/1/2, topic
#      aliases, Subscription Identifiers of 1, 2 and 4 VBI bytes, Will, user
#      name and password, Authentication Method/Data and CONNACK 0x8C, ...);
#   2. a fresh capture recorded now by the same script with a live broker;
#   3. the comparison itself must fail when our output is changed (user
#      properties reversed), so a comparator that compares nothing cannot pass.
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
WMCTL=$BUILD/wmctl
CMP=(python3 "$ROOT/tests/tools/mqtt5_tshark.py")
work=$(mktemp -d "${TMPDIR:-/tmp}/wm-mqtt5tshark.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0

# What a mosquitto_sub/mosquitto_pub session of capture-mqtt5.sh must contain.
TYPES=CONNECT,CONNACK,PUBLISH,PUBACK,PUBREC,PUBREL,PUBCOMP,SUBSCRIBE,SUBACK,UNSUBSCRIBE,UNSUBACK,PINGREQ,PINGRESP,DISCONNECT
PROPS=user_property,subscription_identifier,topic_alias,content_type,response_topic,correlation_data
PROPS=$PROPS,message_expiry_interval,payload_format_indicator,session_expiry_interval,receive_maximum
PROPS=$PROPS,maximum_packet_size,topic_alias_maximum,request_problem_information,will_delay_interval
PROPS=$PROPS,authentication_method,authentication_data

check() { # NAME PCAP [comparator options]
  local name=$1 pcap=$2; shift 2
  if timeout -k 5 120 "${CMP[@]}" --wmctl "$WMCTL" "$@" "$pcap" >"$work/$name.out" 2>&1; then
    echo "ok   $name: $(tail -1 "$work/$name.out")"
  else
    echo "FAIL $name"; cat "$work/$name.out"; fail=$((fail + 1))
  fi
}

check committed "$ROOT/tests/data/mqtt5-clients.pcap" --require-types "$TYPES" --require-props "$PROPS" --min-messages 90

if timeout -k 5 90 bash "$ROOT/scripts/capture-mqtt5.sh" "$work/live.pcap" >"$work/capture.log" 2>&1; then
  check live "$work/live.pcap" --require-types "$TYPES" --require-props "$PROPS" --min-messages 90
else
  echo "FAIL live capture"; cat "$work/capture.log"; fail=$((fail + 1))
fi

# The comparator must see a change in our output: reverse every User Property list.
cat >"$work/wmctl-mutant" <<MUT
#!/usr/bin/env bash
"$WMCTL" "\$@" | jq -c 'if (.properties.user_property | length) > 1 then .properties.user_property |= reverse else . end'
MUT
chmod +x "$work/wmctl-mutant"
if "${CMP[@]}" --wmctl "$work/wmctl-mutant" "$ROOT/tests/data/mqtt5-clients.pcap" >"$work/mutant.out" 2>&1; then
  echo "FAIL mutant: reversed user properties were not detected"; tail -3 "$work/mutant.out"; fail=$((fail + 1))
elif ! grep -q '^DIFF .*user_property\[0\]\[0\]: ours "src", tshark "peid"' "$work/mutant.out"; then
  echo "FAIL mutant: unexpected comparator output"; tail -5 "$work/mutant.out"; fail=$((fail + 1))
else
  echo "ok   mutant: $(tail -1 "$work/mutant.out")"
fi

[ $fail -eq 0 ] && echo "mqtt5 vs tshark: all captures agree field by field" || echo "mqtt5 vs tshark: $fail failures"
[ $fail -eq 0 ]
