#!/usr/bin/env bash
# wirematch-proxy --mem-cap BYTES (review 13 finding 14): the memory for
# decoding one PUBLISH's EXI payload for the content filters, with the parser
# and range of `wmctl exi decode` (control/exi_mem_cap.h). Against a real
# mosquitto with mosquitto_sub/_pub: the same SenML payload (RFC 8428 example
# 1, as wmctl encodes it) reaches an `xpath` subscriber through a proxy with
# the default cap (4 MiB) and not through one whose cap (64 KiB, the
# smallest the option takes) is below what the decoder sets up for a
# document: there it is counted as content.decode_error. Bad values and
# --mem-cap without --schemas are refused at start (exit 2).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml

rc=0; "$PROXY" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 --mem-cap 1024 2> "$TMP/o1.err" || rc=$?
[ $rc -eq 2 ] && grep -qF -- "--mem-cap takes bytes from 65536 to 68719476736, not '1024'" "$TMP/o1.err" \
  || fail "--mem-cap 1024: rc $rc: $(cat "$TMP/o1.err")"
rc=0; "$PROXY" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 --mem-cap 65536 2> "$TMP/o2.err" || rc=$?
[ $rc -eq 2 ] && grep -qF -- "--mem-cap needs --schemas" "$TMP/o2.err" || fail "--mem-cap without --schemas: rc $rc"

"$BUILD/wmctl" exi encode --schema "$S/senml.gen.xsd" "$S/ex1.gen.xml" "$TMP/p.exi" || fail "encode"
px_broker
px_deploy big
px_deploy small --mem-cap 65536
for name in big small; do
  port=PORT_$name
  timeout 60 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "${!port}" -i "mc-$name" -t 'mc/#' -q 1 -d \
      -F 'MSG|%t' -D subscribe user-property xpath '//s:senml' > "$TMP/$name.out" 2> "$TMP/$name.sub.err" &
  px_track $!
  for _ in $(seq 100); do grep -q 'received SUBACK' "$TMP/$name.out" 2>/dev/null && break; sleep 0.1; done
  grep -q 'received SUBACK' "$TMP/$name.out" || fail "mosquitto_sub $name got no SUBACK"
  timeout 20 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "${!port}" -i "mc-pub-$name" -q 1 -t "mc/$name" -f "$TMP/p.exi" \
    -D publish content-type 'application/exi; schema=senml' || fail "mosquitto_pub $name"
done
for _ in $(seq 100); do grep -q '^MSG|mc/big' "$TMP/big.out" && break; sleep 0.1; done
sleep 1
grep -q '^MSG|mc/big' "$TMP/big.out" || fail "the default cap did not deliver the matching payload"
! grep -q '^MSG|' "$TMP/small.out" || fail "the 64 KiB cap delivered: $(grep '^MSG|' "$TMP/small.out")"
px_stop "$PID_big" || fail "proxy big exit"
px_stop "$PID_small" || fail "proxy small exit"
big=$(jq -c '.content | {decoded, decode_error}' "$TMP/big.json")
small=$(jq -c '.content | {decoded, decode_error}' "$TMP/small.json")
[ "$(jq '.decoded > 0 and .decode_error == 0' <<<"$big")" = true ] || fail "default cap: $big"
[ "$(jq '.decoded == 0 and .decode_error > 0' <<<"$small")" = true ] || fail "64 KiB cap: $small"
echo "proxy_mem_cap: default delivers ($big), --mem-cap 65536 counts a decode error ($small); bad values refused: pass"
