#!/usr/bin/env bash
# `wmctl mqtt decode` end to end: packets written byte by byte here (from the
# MQTT 5.0 layouts, not by our encoder) must print the JSON the README
# documents; a bad packet prints {"error","reason_code","offset"} and exits 1;
# options are honoured. Output is compared after parsing (jq -S), so the test
# checks values, not spacing.
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
WMCTL=$BUILD/wmctl
work=$(mktemp -d "${TMPDIR:-/tmp}/wm-mqttdec.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0; n=0

check() { # name expected-json-lines actual-json-lines
  n=$((n + 1))
  if ! diff <(jq -cS . <<<"$2") <(jq -cS . <<<"$3") >"$work/diff"; then
    echo "FAIL $1"; cat "$work/diff"; fail=$((fail + 1))
  fi
}

# CONNECT: clean start, keep alive 60, Session Expiry 30, User Property a=b, client "c1", user "u", password "pw".
connect='\x10\x22\x00\x04MQTT\x05\xc2\x00\x3c\x0c\x11\x00\x00\x00\x1e\x26\x00\x01a\x00\x01b\x00\x02c1\x00\x01u\x00\x02pw'
# PUBLISH QoS 1 "a/b" id 7, Topic Alias 3, two User Properties (one with a control character and a quote), payload "hi".
publish='\x32\x21\x00\x03a/b\x00\x07\x17\x23\x00\x03\x26\x00\x04peid\x00\x02r1\x26\x00\x02k2\x00\x02\x01"hi'
# SUBSCRIBE id 1, Subscription Identifier 5, "a/+" QoS 1 NL RAP RH 1, "$share/g/x" QoS 0.
subscribe='\x82\x18\x00\x01\x02\x0b\x05\x00\x03a/+\x1d\x00\x0a$share/g/x\x00'
printf "$connect$publish$subscribe\xc0\x00\xe0\x00" >"$work/ok.bin"

out=$("$WMCTL" mqtt decode "$work/ok.bin")
check client_stream '
{"type":"CONNECT","offset":0,"length":36,"flags":0,"protocol_name":"MQTT","protocol_version":5,"clean_start":true,"keep_alive":60,"client_id":"c1","properties":{"session_expiry_interval":30,"user_property":[["a","b"]]},"username":"u","password_length":2}
{"type":"PUBLISH","offset":36,"length":35,"flags":2,"qos":1,"retain":false,"dup":false,"topic":"a/b","packet_id":7,"properties":{"topic_alias":3,"user_property":[["peid","r1"],["k2","\u0001\""]]},"payload_length":2}
{"type":"SUBSCRIBE","offset":71,"length":26,"flags":2,"packet_id":1,"properties":{"subscription_identifier":[5]},"filters":[{"filter":"a/+","qos":1,"no_local":true,"retain_as_published":true,"retain_handling":1},{"filter":"$share/g/x","qos":0,"no_local":false,"retain_as_published":false,"retain_handling":0}]}
{"type":"PINGREQ","offset":97,"length":2,"flags":0}
{"type":"DISCONNECT","offset":99,"length":2,"flags":0,"reason_code":0,"reason":"normal_disconnection","properties":{}}' "$out"

# Same bytes on stdin.
out=$("$WMCTL" mqtt decode - <"$work/ok.bin" | wc -l)
check stdin '5' "$out"

# A server stream: CONNACK with Topic Alias Maximum 10, PUBLISH with two Subscription Identifiers, SUBACK.
printf '\x20\x06\x00\x00\x03\x22\x00\x0a\x30\x0b\x00\x01t\x05\x0b\x01\x0b\xac\x02xy\x90\x05\x00\x01\x00\x01\x80' >"$work/srv.bin"
out=$("$WMCTL" mqtt decode --from server "$work/srv.bin")
check server_stream '
{"type":"CONNACK","offset":0,"length":8,"flags":0,"session_present":false,"reason_code":0,"reason":"success","properties":{"topic_alias_maximum":10}}
{"type":"PUBLISH","offset":8,"length":13,"flags":0,"qos":0,"retain":false,"dup":false,"topic":"t","properties":{"subscription_identifier":[1,300]},"payload_length":2}
{"type":"SUBACK","offset":21,"length":7,"flags":0,"packet_id":1,"properties":{},"reason_codes":[1,128]}' "$out"

# The same server stream read as client traffic: CONNACK is never sent by a client (§2.1.2).
rc=0; out=$("$WMCTL" mqtt decode --from client "$work/srv.bin") || rc=$?
check wrong_direction '{"error":"wrong_direction","reason_code":130,"offset":0}' "$out"
check wrong_direction_rc 1 "$rc"

# A good PUBLISH, then one with a wildcard in its topic name (§3.3.2.1): offset of the '+'.
printf "$publish"'\x30\x06\x00\x03a/+\x00' >"$work/bad.bin"
rc=0; out=$("$WMCTL" mqtt decode "$work/bad.bin") || rc=$?
check bad_topic "$(printf '%s\n%s' "$(jq -c 'select(.type=="PUBLISH")' <<<"$("$WMCTL" mqtt decode "$work/ok.bin")" | jq -c '.offset=0')" \
  '{"error":"topic_wildcard_in_name","reason_code":130,"offset":41}')" "$out"
check bad_topic_rc 1 "$rc"

# --max-packet-size: the 35-byte PUBLISH against 34 gives 0x95 at its Remaining Length.
printf "$publish" >"$work/pub.bin"
rc=0; out=$("$WMCTL" mqtt decode --max-packet-size 34 "$work/pub.bin") || rc=$?
check too_large '{"error":"packet_too_large","reason_code":149,"offset":1}' "$out"
out=$("$WMCTL" mqtt decode --max-packet-size 35 "$work/pub.bin" | jq -c .topic)
check max_ok '"a/b"' "$out"

# --topic-alias-maximum 2: Topic Alias 3 is invalid (0x94).
rc=0; out=$("$WMCTL" mqtt decode --topic-alias-maximum 2 "$work/pub.bin") || rc=$?
check alias '{"error":"topic_alias_too_large","reason_code":148,"offset":10}' "$out"

# --check-payload-format: Payload Format Indicator 1 with a payload that is not UTF-8 (0xFF) gives 0x99
# at the bad byte; without the option the packet decodes.
printf '\x30\x07\x00\x01t\x02\x01\x01\xff' >"$work/pfi.bin"
rc=0; out=$("$WMCTL" mqtt decode --check-payload-format "$work/pfi.bin") || rc=$?
check payload_format '{"error":"payload_format_invalid","reason_code":153,"offset":8}' "$out"
out=$("$WMCTL" mqtt decode "$work/pfi.bin" | jq -c .properties)
check payload_format_off '{"payload_format_indicator":1}' "$out"

# A stream cut inside a packet.
head -c 20 "$work/pub.bin" >"$work/cut.bin"
rc=0; out=$("$WMCTL" mqtt decode "$work/cut.bin") || rc=$?
check truncated '{"error":"truncated","reason_code":129,"offset":20}' "$out"

# Results that cannot be written: exit 2 and the reason, also when the capture ends in a bad packet
# (exit 1 would read as "bad input" with the result lost).
rc=0; "$WMCTL" mqtt decode "$work/cut.bin" >/dev/full 2>"$work/err" || rc=$?
check full_rc 2 "$rc"
n=$((n + 1)); grep -qF "wmctl mqtt: cannot write stdout" "$work/err" || { echo "FAIL full_msg: $(cat "$work/err")"; fail=$((fail + 1)); }

# Usage errors exit 2.
rc=0; "$WMCTL" mqtt decode --from nowhere "$work/ok.bin" 2>/dev/null || rc=$?
check usage_rc 2 "$rc"
rc=0; "$WMCTL" mqtt decode "$work/missing.bin" 2>/dev/null || rc=$?
check missing_rc 2 "$rc"
# a usage error names the rule it broke before the usage line
for c in "no input file (FILE, or - for stdin)|mqtt decode" "no sub-command|mqtt" "unknown sub-command (only decode)|mqtt encode x" \
         "--from given twice: give it once|mqtt decode --from client --from server -" \
         "--max-packet-size given twice: give it once|mqtt decode --max-packet-size 9 --max-packet-size 10 -"; do
  want=${c%%|*}; rc=0; "$WMCTL" ${c#*|} >/dev/null 2>"$work/err" || rc=$?
  n=$((n + 1)); [ $rc = 2 ] && [ "$(head -1 "$work/err")" = "wmctl mqtt: $want" ] || { echo "FAIL usage '$want': rc=$rc $(cat "$work/err")"; fail=$((fail + 1)); }
done

[ $fail -eq 0 ] && echo "wmctl mqtt decode: $n checks passed" || { echo "wmctl mqtt decode: $fail of $n checks failed"; exit 1; }
