#!/usr/bin/env bash
# The answers wirematch-proxy makes itself wait behind the peer's answers to
# the same side's earlier packets (dataplane/proxy_answers.h, REVIEW6 finding 5):
#  - towards the client, in front of a real mosquitto on 127.0.0.1
#    (--resolution --schemas --prefilter): --prefilter's PUBACK / PUBREC 0x10,
#    SUBACK refusals (unknown nbhd, invalid xpath), and a refusal pipelined
#    behind a held content SUBSCRIBE come in the order of the client's
#    packets, between the broker's PUBACK / PUBREC / SUBACK / UNSUBACK /
#    PINGRESP (a PINGRESP may come before the SUBACK of a SUBSCRIBE held for
#    its compile: the PINGREQ passes it; before: PUBACK 2 0x10 ahead of
#    PUBACK 1, every time);
#  - towards the broker (MQTT 5.0 [MQTT-4.6.0-2], the rule §4.6 sets for the
#    Client, whose part the proxy plays for deliveries it withholds):
#    fake_broker.py --aliases sends a subscriber of X1 eight QoS 1 PUBLISHes
#    at once, three withheld; the client acknowledges its five 0.3 s late;
#    the broker must get PUBACK 1..8 in order (before: 1, 4, 7 first).
#  - a PINGREQ that passed a held SUBSCRIBE is one of the client's packets
#    the broker answers: behind fake_broker.py --ping-delay 3 (its PINGRESP
#    after the compile's end), a refusal pipelined behind the held SUBSCRIBE
#    follows the broker's SUBACK of it (before: it followed the PINGRESP,
#    ahead of that SUBACK, every time; with mosquitto, under load, rarely).
# proxy_ack_order.py has the scenarios; the summary counts the answers that
# waited (filter.acks_waited), none released early (acks_overflow).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_monaco
px_senml
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/schemas.txt"

px_broker
px_proxy c --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --prefilter
timeout 200 python3 "$HERE/proxy_ack_order.py" client "$PORT_c" || fail "towards the client"
px_stop "$PID_c" || fail "proxy exit status"
python3 - "$TMP/c.json" <<'PY' || fail "summary (client)"
import json, sys
f = json.load(open(sys.argv[1]))["filter"]
# (a) 3 per round, (b) 1, (c) 1; perhaps (b)'s 104 (held for a compile, the broker's answers may have come by
# then) and the PUBCOMPs for PUBREL 3 (if PUBLISH 4's PUBREC had not come yet)
assert 5 * 3 + 1 + 1 <= f["acks_waited"] <= 5 * 3 + 2 + 1 + 5 and f["acks_overflow"] == 0 and f["failed"] == 0, f
print("ok: summary filter.acks_waited %d, acks_overflow %d" % (f["acks_waited"], f["acks_overflow"]))
PY

FPORT=$(free_port)
python3 "$HERE/fake_broker.py" "$FPORT" --aliases > "$TMP/fb.out" 2> "$TMP/fb.err" & FB=$!; px_track $FB
wait_port "$FPORT" "$FB" || fail "fake broker did not start"
BPORT=$FPORT px_proxy b --resolution "$TMP/m.wmr"
timeout 60 python3 "$HERE/proxy_ack_order.py" broker "$PORT_b" || fail "towards the broker"
for _ in $(seq 50); do [ "$(grep -c '^puback' "$TMP/fb.out")" -ge 8 ] && break; sleep 0.1; done
got=$(grep '^puback' "$TMP/fb.out" | tr '\n' ' ')
[ "$got" = "puback 1 puback 2 puback 3 puback 4 puback 5 puback 6 puback 7 puback 8 " ] \
  || fail "the broker got PUBACKs in the order: $got"
echo "ok: the broker got PUBACK 1..8 in order (3 from the proxy for withheld deliveries, 5 from the client, late)"
px_stop "$PID_b" || fail "proxy exit status"
f=$(jq -c '[.filter.acked_on_behalf, .filter.acks_waited, .filter.acks_overflow]' "$TMP/b.json")
[ "$f" = "[3,2,0]" ] || fail "summary (broker): [acked_on_behalf, acks_waited, acks_overflow] = $f"
LPORT=$(free_port)
python3 "$HERE/fake_broker.py" "$LPORT" --ping-delay 3 > "$TMP/fl.out" 2> "$TMP/fl.err" & FL=$!; px_track $FL
wait_port "$LPORT" "$FL" || fail "fake broker (--ping-delay) did not start"
BPORT=$LPORT px_proxy l --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt"
timeout 150 python3 "$HERE/proxy_ack_order.py" late "$PORT_l" || fail "PINGREQ passing a held SUBSCRIBE"
px_stop "$PID_l" || fail "proxy exit status"
echo "proxy_ack_order: the proxy's own answers kept the order of the packets they answer, both ways"
