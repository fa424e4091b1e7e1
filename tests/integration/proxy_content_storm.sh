#!/usr/bin/env bash
# One client's storm of new content filters must not stall the other
# connections of its worker (finding 7 of the 2026-12-01 review), in front of
# a real mosquitto on 127.0.0.1 with raw-socket clients
# (proxy_content_storm.py has the scenario). wirematch-proxy --threads 1, so
# every client shares the one worker: a client pipelines Q SUBSCRIBEs, each
# with a distinct matches() or contains() query (plus one that compiles for
# no schema), in one write followed by an UNSUBSCRIBE and a PINGREQ; another client's PINGREQ
# and PUBLISH round trips meanwhile must each stay under BOUND_S seconds (a
# bound against a stall, not a speed figure). Then the storm client's
# SUBACKs (its UNSUBACK after them, its PINGRESP ahead), and its deliveries: exactly what
# libxml2's XPath selects in the source XML of each document (for a
# matches() query, on the XPath 1.0 query with the same meaning). Before
# the compiles left the worker (the whole set recompiled on the worker per
# new text) the probe waited about 20 s on an idle machine.
# The summary: few compiles for the whole storm (coalesced), one SUBSCRIBE
# held. A second proxy with --max-xpath-per-conn 4: the fifth distinct text
# of a connection gets SUBACK 0x97 with its Reason String, counted; the same
# texts again, and another connection's, are still taken; at the bound, a new
# text replacing a subscription's (same filter) is taken when no other
# subscription keeps the old text, refused when one does. A persistent
# session resumed with 99 texts its worker no longer has (proxy_content_resume.py):
# the probe's round trips stay under BOUND_S while they compile, and the
# queued deliveries are exactly libxml2's.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml
N=8
Q=100
BOUND_S=${BOUND_S:-1.5}

px_monaco
# query i (as sent) TAB its libxml2 form; distinct texts, regexes distinct too
python3 - $Q > "$TMP/pairs.tsv" <<'PY'
import sys
subs = ["mp", "u", "ol", "re", "id"]
for i in range(int(sys.argv[1]) - 1):
    k = -300 + (i * 37) % 361
    if i % 2 == 0:
        q = '//s:senml[matches(@n, "^(te|x%03d).*e$") and @v > %d]' % (i, k)
        r = '//s:senml[starts-with(@n, "te") and substring(@n, string-length(@n)) = "e" and @v > %d]' % k
    else:
        q = '//s:senml[(contains(@n, "%s") and @v < %d) or @n = "z%03d"]' % (subs[i % 5], k, i)
        r = q
    print(q + "\t" + r)
PY
cut -f1 "$TMP/pairs.tsv" > "$TMP/queries.txt"
echo '//s:senml[matches(@n, "(INVALID")]' >> "$TMP/queries.txt"
mapfile -t REFQ < <(cut -f2 "$TMP/pairs.tsv")
python3 "$(dirname "$0")/senml_docs.py" "$TMP" $N 31 "$BUILD/wmctl" "$S/senml.gen.xsd" "${REFQ[@]}" || fail "documents"
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/schemas.txt"

px_broker
px_proxy st --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --threads 1
timeout 300 python3 "$(dirname "$0")/proxy_content_storm.py" "$PORT_st" "$TMP" $N "$BOUND_S" > "$TMP/storm.out" \
  || { cat "$TMP/storm.out"; fail "scenario"; }
cat "$TMP/storm.out"
px_stop "$PID_st" || fail "proxy exit status"
python3 - "$TMP/st.json" $Q <<'PY' || fail "summary"
import json, sys
s, q = json.load(open(sys.argv[1])), int(sys.argv[2])
c = s["content"]
assert c["xpath_subscribes"] == q - 1 and c["suback_bad_xpath"] == 1, c
# one new text held its client's stream; the others behind it joined its compile or the next
assert c["held"] >= 1 and 2 <= c["compiles"] <= 8, c
assert c["decode_error"] == 0 and c["decoded"] > 0, c
assert s["filter"]["failed"] == 0 and s["connections"]["open_at_exit"] == 0, s
print("ok: summary content %r" % {k: c[k] for k in ("compiles", "held", "xpath_subscribes", "suback_bad_xpath")})
PY

# A persistent session resumed with texts its worker's table no longer has:
# compiled on the compile thread too (before: on the worker, which stalled
# the probe for the whole compile), its queued deliveries held until then.
px_proxy rs --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --threads 1
timeout 300 python3 "$(dirname "$0")/proxy_content_resume.py" "$PORT_rs" "$TMP" $N "$BOUND_S" > "$TMP/resume.out" \
  || { cat "$TMP/resume.out"; fail "resume scenario"; }
cat "$TMP/resume.out"
px_stop "$PID_rs" || fail "proxy rs exit status"
jq -e '.content.resumes_held == 1 and .filter.failed == 0 and .connections.open_at_exit == 0' "$TMP/rs.json" > /dev/null \
  || fail "resume summary: $(jq -c '.content' "$TMP/rs.json")"

# the per-connection bound
px_proxy qb --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --max-xpath-per-conn 4
timeout 60 python3 - "$PORT_qb" "$TMP/queries.txt" <<'PY' || fail "quota"
import os, sys
sys.path.insert(0, os.path.join(os.environ.get("WM_ROOT", "."), "tests/integration"))
from proxy_mqtt5 import Client
from proxy_spatial import fail, ok
port, qs = int(sys.argv[1]), [l.rstrip("\n") for l in open(sys.argv[2])]
a = Client(port, "quota-a")
for i in range(4):
    codes, pr = a.subscribe(["qa/%d" % i], user=[("xpath", qs[i])])
    if codes != [1]: fail("text %d: SUBACK %r %r" % (i, codes, pr))
codes, pr = a.subscribe(["qa/4", "qa/5"], user=[("xpath", qs[4])])
why = pr.get(0x1F, "")
if codes != [0x97, 0x97] or "--max-xpath-per-conn" not in why: fail("fifth text: SUBACK %r %r" % (codes, pr))
codes, pr = a.subscribe(["qa/6"], user=[("xpath", qs[2])])
if codes != [1]: fail("a text the connection holds, again: SUBACK %r %r" % (codes, pr))
b = Client(port, "quota-b")
codes, pr = b.subscribe(["qb/0"], user=[("xpath", qs[4])])
if codes != [1]: fail("another connection: SUBACK %r %r" % (codes, pr))
ok("the fifth distinct text of a connection: SUBACK 0x97 %r; the same texts again and another connection's taken" % why)
# A SUBSCRIBE replacing a subscription (same filter, MQTT 5.0 §3.8.4) frees the text only the
# replaced record held: at the bound, a new text for qa/0 is taken (qa/0..3 and qa/6 hold 4 texts)
codes, pr = a.subscribe(["qa/0"], user=[("xpath", qs[5])])
if codes != [1]: fail("at the bound, a new text replacing qa/0's: SUBACK %r %r" % (codes, pr))
codes, pr = a.subscribe(["qa/7"], user=[("xpath", qs[6])])
if codes != [0x97]: fail("after the replacement, a fifth text: SUBACK %r %r" % (codes, pr))
codes, pr = a.subscribe(["qa/6"], user=[("xpath", qs[7])])
if codes != [0x97]: fail("replacing qa/6, whose text qa/2 still holds: SUBACK %r %r" % (codes, pr))
ok("at the bound, replacing a subscription with a new text is taken when it frees the old text, refused "
   "(0x97) when another subscription keeps it")
PY
px_stop "$PID_qb" || fail "proxy exit status"
python3 - "$TMP/qb.json" <<'PY' || fail "quota summary"
import json, sys
c = json.load(open(sys.argv[1]))["content"]
assert c["suback_quota"] == 4 and c["xpath_subscribes"] == 7, c
print("ok: summary content.suback_quota %d" % c["suback_quota"])
PY
echo "proxy_content_storm: $Q new content filters from one client, the other client of its worker never stalled; per-connection bound"
