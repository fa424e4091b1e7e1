#!/usr/bin/env bash
# Reuse of the content-filter slots of wirematch-proxy's per-worker tables
# (dataplane/proxy_filter.h), in front of a real mosquitto on 127.0.0.1 with
# raw-socket clients (proxy_content_slots.py has the scenario): ROUNDS
# distinct XPath queries go through one churning subscriber, one at a time,
# while two others keep theirs, so the table needs about 3 slots and a
# dropped query's slot is taken by the next new one. Every round checks
# that every subscriber gets exactly what its CURRENT query selects
# (libxml2's XPath on the source XML, senml_docs.py), that deliveries the
# broker queued for a replaced query (held back by an unacknowledged QoS 1
# message) are never judged by the query that took its slot, and that a
# persistent session away during the churn is judged by its own query when
# it resumes. The summary must show the table stayed small (slots_peak)
# and the slots were reused (slots_reused). Before the reuse the table
# grew by one slot per distinct query, up to a lifetime limit of 4,194,304.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml
N=20
ROUNDS=90

px_monaco
# the queries: QA, QB, QP (kept), then the churn: "v above K" and "v below K" in turn
mapfile -t QS < <(python3 - $ROUNDS <<'PY'
import sys
print('//s:senml[@u = "Cel" and @v > 0]')
print('/s:sensml/s:senml[starts-with(@n, "temp-") or @v < -100]')
print('//s:senml[@n = "humidity"]')
for r in range(int(sys.argv[1])):
    k = -290 + 4 * r
    print('//s:senml[@v %s %d]' % (">" if r % 2 == 0 else "<", k))
PY
)
python3 "$(dirname "$0")/senml_docs.py" "$TMP" $N 23 "$BUILD/wmctl" "$S/senml.gen.xsd" "${QS[@]}" || fail "documents"
printf '%s\n' "${QS[@]}" > "$TMP/queries.txt"
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/schemas.txt"

px_broker
px_proxy cs --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt"
timeout 300 python3 "$(dirname "$0")/proxy_content_slots.py" "$PORT_cs" "$TMP" $N $ROUNDS > "$TMP/scenario.out" \
  || { cat "$TMP/scenario.out"; fail "scenario"; }
tail -4 "$TMP/scenario.out"
px_stop "$PID_cs" || fail "proxy exit status"
python3 - "$TMP/cs.json" $ROUNDS <<'PY' || fail "summary"
import json, sys
s, rounds = json.load(open(sys.argv[1])), int(sys.argv[2])
c = s["content"]
# live at most: QA, QB, the churner's query, QP (resumed at the end)
assert c["slots_peak"] <= 4, c
assert c["slots_reused"] >= rounds, c
assert c["suback_bad_xpath"] == 0 and c["xpath_subscribes"] >= rounds + 3, c
assert c["decode_error"] == 0 and c["decoded"] > 0, c
assert s["filter"]["failed"] == 0 and s["connections"]["open_at_exit"] == 0, s
print("ok: summary content %r" % {k: c[k] for k in ("slots_peak", "slots_reused", "xpath_subscribes", "decoded")})
PY
echo "proxy_content_slots: $ROUNDS distinct queries through a table of at most 4 slots, every delivery judged by its subscriber's current query"
