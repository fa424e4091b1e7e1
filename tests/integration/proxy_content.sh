#!/usr/bin/env bash
# wirematch-proxy's content filters (--schemas, dataplane/proxy_filter.h)
# against a real mosquitto on 127.0.0.1, with real clients: mosquitto_sub
# subscribers carrying `xpath` (and `nbhd`) User Properties and mosquitto_pub
# publishing SenML EXI payloads (tests/integration/senml_docs.py, encoded by
# `wmctl exi encode`) with Content Type "application/exi; schema=senml".
# Expected deliveries come from libxml2's XPath (xmllint) on the SOURCE XML.
#  - A: Q1 (proxy-added identifier); B: Q2 with its own identifier 7;
#    C: neighborhood X4 AND Q3 (peids alternate inside/outside X4); D: no
#    filter. Each gets exactly what it is owed, over 30 QoS 1 publications;
#  - the same 30 documents strict and without an options header (what
#    constrained devices and exificient.js send; finding 3 of the review),
#    published as "schema=senml-strict" (a registry line with the out-of-band
#    option `strict`) or "schema=senml; strict=true" (a Content Type option
#    parameter), alternately: each subscriber gets exactly what it is owed;
#  - then no Content Type, an unknown schema, a cut payload and a bad Content
#    Type parameter: only D gets them; each is counted by reason in the summary;
#  - refused filters (string test on a number, syntax, unbound prefix; and
#    --schemas absent): SUBACK 0x80 with a Reason String naming the reason,
#    nothing installed at the broker (a plain subscriber of the same filter
#    gets the message, the refused one does not);
#  - a persistent session: the query is restored on reconnect and filters
#    the deliveries the broker queued meanwhile;
#  - option errors: --schemas without --resolution (2), a bad registry (1);
#  - --prefilter: a subscription with a content filter counts only for
#    publications whose Content Type names a schema of the registry in force
#    (a subscriber straight at the broker sees what got through, dropped
#    ones are acknowledged 0x10), also after a SIGHUP that renames the schema.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
SHARED=${WM_SHARED:-$WM_ROOT/../shared}
WORLD=$SHARED/data/world/monaco.geojson
NBHD=$SHARED/data/world/monaco-examples.nbhd
S=$(cd "$SHARED/data/exi/senml" && pwd)
NS=urn:ietf:params:xml:ns:senml
Q1='//s:senml[@u = "Cel" and @v > 0]'
Q2='/s:sensml/s:senml[starts-with(@n, "temp-") or @v < -100]'
Q3='//s:senml[@n = "humidity"]'
N=30

"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --out "$TMP/m.wmr" || fail "wmctl resolve"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --json > "$TMP/m.json" || fail "wmctl resolve --json"
printf 'senml %s s=%s\nsenml-strict %s strict s=%s\n' "$S/senml.gen.xsd" "$NS" "$S/senml.gen.xsd" "$NS" > "$TMP/schemas.txt"
python3 "$(dirname "$0")/senml_docs.py" "$TMP" $N 17 "$BUILD/wmctl" "$S/senml.gen.xsd" "$Q1" "$Q2" "$Q3" \
  || fail "documents"
read -r IN OUT < <(python3 - "$TMP/m.json" "$WORLD" <<'PY'
import json, sys
x4 = set(json.load(open(sys.argv[1]))["X4"]["result"])
peids = sorted(str(f["id"]) for f in json.load(open(sys.argv[2]))["features"])
print(sorted(x4)[0], next(p for p in peids if p not in x4))
PY
)

# Option errors.
rc=0; "$PROXY" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 --schemas "$TMP/schemas.txt" 2> "$TMP/o1.err" || rc=$?
[ $rc -eq 2 ] && grep -q "needs --resolution" "$TMP/o1.err" || fail "--schemas without --resolution: rc $rc"
echo "senml missing.xsd" > "$TMP/bad.txt"
rc=0; "$PROXY" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 --resolution "$TMP/m.wmr" --schemas "$TMP/bad.txt" \
  2> "$TMP/o2.err" || rc=$?
[ $rc -eq 1 ] && grep -q "bad.txt:1:" "$TMP/o2.err" || fail "bad registry: rc $rc: $(cat "$TMP/o2.err")"

px_broker
px_proxy ct --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --threads 2 -v
px_proxy nos --resolution "$TMP/m.wmr"
P=$PORT_ct

sub() {   # sub NAME ARGS...: a mosquitto_sub on px/# printing topics, until SUBACK
  local name=$1; shift
  timeout 90 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$P" -i "ct-$name" -t 'px/#' -q 1 -d \
      -F 'MSG|%t' "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" &
  px_track $!
  for _ in $(seq 100); do grep -q 'received SUBACK' "$TMP/$name.out" 2>/dev/null && return 0; sleep 0.1; done
  fail "mosquitto_sub $name got no SUBACK"
}
sub A -D subscribe user-property xpath "$Q1"
sub B -D subscribe user-property xpath "$Q2" -D subscribe subscription-identifier 7
sub C -D subscribe user-property nbhd X4 -D subscribe user-property xpath "$Q3"
sub D

CT='application/exi; schema=senml'
pub() { timeout 20 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$P" -i ct-pub -q 1 "$@" || fail "mosquitto_pub $*"; }
for i in $(seq -w 0 $((N - 1))); do
  peid=$IN; [ $((10#$i % 2)) -eq 1 ] && peid=$OUT
  pub -t "px/$i" -f "$TMP/d$i.exi" -D publish content-type "$CT" -D publish user-property peid "$peid"
done
for i in $(seq -w 0 $((N - 1))); do
  peid=$IN; [ $((10#$i % 2)) -eq 1 ] && peid=$OUT
  ct='application/exi; schema=senml-strict'; [ $((10#$i % 4)) -ge 2 ] && ct='application/exi; schema=senml; strict=true'
  pub -t "px/p$i" -f "$TMP/d$i.strict.exi" -D publish content-type "$ct" -D publish user-property peid "$peid"
done
pub -t px/badparam -f "$TMP/d00.strict.exi" -D publish content-type 'application/exi; schema=senml; strict=yes' \
  -D publish user-property peid "$IN"
pub -t px/noct -f "$TMP/d00.exi" -D publish user-property peid "$IN"
pub -t px/unknown -f "$TMP/d00.exi" -D publish content-type 'application/exi; schema=nope' -D publish user-property peid "$IN"
head -c 20 "$TMP/d01.exi" > "$TMP/cut.exi"
pub -t px/cut -f "$TMP/cut.exi" -D publish content-type "$CT" -D publish user-property peid "$IN"
for _ in $(seq 100); do [ "$(grep -c '^MSG|' "$TMP/D.out")" -ge $((2 * N + 4)) ] && break; sleep 0.1; done
sleep 1

# Refused filters: the proxy's SUBACK, and nothing installed at the broker.
timeout 60 python3 - "$P" "$PORT_nos" "$(cd "$(dirname "$0")" && pwd)" <<'PY' || fail "refused filters"
import sys, time
sys.path.insert(0, sys.argv[3])
from proxy_mqtt5 import Client
port, nos = int(sys.argv[1]), int(sys.argv[2])
cases = [('//s:senml[@v = "1"]', "string test on @v"), ("//s:senml[@v >", "position 15"),
         ("//q:senml", "not bound")]
for q, needle in cases:
    c = Client(port, "ct-bad")
    codes, pr = c.subscribe(["rf/#", "rf2/#"], qos=1, user=[("xpath", q)])
    assert codes == [0x80, 0x80], (q, codes)
    why = pr.get(0x1F, "")
    assert why.startswith("invalid xpath: schema senml:") and needle in why, (q, why)
    c.disconnect()
c = Client(nos, "ct-noschemas")
codes, pr = c.subscribe(["rf/#"], qos=1, user=[("xpath", "//s:senml")])
assert codes == [0x80] and "--schemas" in pr.get(0x1F, ""), (codes, pr)
c.disconnect()
U = Client(port, "ct-bad2")
U.subscribe(["rf/#"], qos=1, user=[("xpath", "//s:senml[@v >")])
V = Client(port, "ct-plain")
V.subscribe(["rf/#"], qos=1)
Pb = Client(port, "ct-pub2")
Pb.publish("rf/a", "x", qos=1)
Pb.drain()
assert V.wait_for(lambda: len(V.msgs) == 1, 10), "plain subscriber got nothing"
time.sleep(0.5)
assert not U.msgs, "the refused subscription received %d messages" % len(U.msgs)
print("ok: refused filters: SUBACK 0x80 with the reason, nothing installed")
PY

# A persistent session: the query comes back with the session (proxy_registry.h),
# and the deliveries queued while away are filtered by it.
timeout 60 python3 - "$P" "$(cd "$(dirname "$0")" && pwd)" "$TMP" "$Q1" "$CT" <<'PY' || fail "persistent session"
import json, subprocess, sys, time
sys.path.insert(0, sys.argv[2])
from proxy_mqtt5 import Client
port, tmp, q1, ct = int(sys.argv[1]), sys.argv[3], sys.argv[4], sys.argv[5]
refs = json.load(open("%s/refs.json" % tmp))
yes = next(i for i, r in enumerate(refs) if r[0])
no = next(i for i, r in enumerate(refs) if not r[0])
c = Client(port, "ct-persist", session_expiry=300)
c.subscribe(["ps/#"], qos=1, user=[("xpath", q1)])
c.disconnect()
time.sleep(0.3)
for t, i in (("ps/yes", yes), ("ps/no", no)):
    subprocess.run(["mosquitto_pub", "-V", "mqttv5", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-t", t,
                    "-f", "%s/d%02d.exi" % (tmp, i), "-D", "publish", "content-type", ct], check=True, timeout=20)
c = Client(port, "ct-persist", clean=False, session_expiry=300)
assert c.session_present, "no session"
assert c.wait_for(lambda: len(c.msgs) >= 1, 10), "nothing delivered after the reconnect"
time.sleep(1)
assert [m.topic for m in c.msgs] == ["ps/yes"], [m.topic for m in c.msgs]
c.disconnect()
print("ok: persistent session: the query was restored, the queued non-matching delivery withheld")
PY

# --prefilter with content filters (dataplane/proxy_registry.h).
cp "$TMP/schemas.txt" "$TMP/pf-schemas.txt"
px_proxy cpf --resolution "$TMP/m.wmr" --schemas "$TMP/pf-schemas.txt" --prefilter --threads 2
timeout 60 python3 - "$PORT_cpf" "$BPORT" "$(cd "$(dirname "$0")" && pwd)" "$TMP" "$Q1" "$PID_cpf" "$S/senml.gen.xsd" \
    "$NS" <<'PY' || fail "prefilter with content filters"
import os, signal, sys, time
sys.path.insert(0, sys.argv[3])
from proxy_mqtt5 import Client
port, bport, tmp, q1, pid, xsd, ns = int(sys.argv[1]), int(sys.argv[2]), sys.argv[4], sys.argv[5], int(sys.argv[6]), \
    sys.argv[7], sys.argv[8]
doc = open("%s/d00.exi" % tmp, "rb").read()
W = Client(bport, "cpf-W")                    # straight at the broker: what the prefilter let through
W.subscribe(["cp/#"], qos=1)
X = Client(port, "cpf-X")
assert X.subscribe(["cp/#"], qos=1, user=[("xpath", q1)])[0][0] < 0x80
P = Client(port, "cpf-P")
def pub(t, ct):
    P.publish(t, doc, qos=1, content_type=ct)
    assert P.drain(10), "no PUBACK"
def reached(): return sorted(m.topic for m in W.msgs)
pub("cp/a", "application/exi; schema=senml")
pub("cp/b", None)
pub("cp/c", "application/exi; schema=nope")
pub("cp/d", "text/plain")
Y = Client(port, "cpf-Y")                     # a subscriber without content filter: everything counts again
Y.subscribe(["cp/#"], qos=1)
pub("cp/e", None)
Y.disconnect()
time.sleep(0.3)
pub("cp/f", None)
with open("%s/pf-schemas.txt.new" % tmp, "w") as f: f.write("senml2 %s s=%s\n" % (xsd, ns))
os.rename("%s/pf-schemas.txt.new" % tmp, "%s/pf-schemas.txt" % tmp)
os.kill(pid, signal.SIGHUP)
end = time.time() + 10
while "in use by every worker" not in open("%s/cpf.err" % tmp).read():
    assert time.time() < end, "the reload was not applied"
    time.sleep(0.05)
pub("cp/g", "application/exi; schema=senml")  # the schema left the registry
pub("cp/h", "application/exi; schema=senml2")
W.wait_for(lambda: len(W.msgs) >= 3, 10)
time.sleep(0.7)
assert reached() == ["cp/a", "cp/e", "cp/h"], reached()
codes = [b[2] if len(b) > 2 else 0 for k, b in P.other if k == 4]
assert codes.count(0x10) == 5 and len(codes) == 8, codes
for c in (W, X, P): c.disconnect()
print("ok: --prefilter with content filters: %r reached the broker, 5 acknowledged 0x10" % reached())
PY
px_stop "$PID_cpf" || fail "proxy cpf exit status"
d=$(jq -c '.prefilter.dropped' "$TMP/cpf.json")
[ "$d" = '{"qos0":0,"qos1":5,"qos2":0}' ] || fail "cpf summary: dropped $d"

px_stop "$PID_ct" || fail "proxy exit status"
python3 - "$TMP" "$N" "$IN" <<'PY' || fail "deliveries"
import json, sys
tmp, n, inside = sys.argv[1], int(sys.argv[2]), sys.argv[3]
refs = json.load(open("%s/refs.json" % tmp))
got = {k: sorted(l.strip().split("|", 1)[1] for l in open("%s/%s.out" % (tmp, k)) if l.startswith("MSG|"))
       for k in "ABCD"}
topics = ["px/%02d" % i for i in range(n)]
plain = ["px/p%02d" % i for i in range(n)]   # the same documents, strict, no options header
want = {"A": [t for ts in (topics, plain) for t, r in zip(ts, refs) if r[0]],
        "B": [t for ts in (topics, plain) for t, r in zip(ts, refs) if r[1]],
        "C": [t for ts in (topics, plain) for i, (t, r) in enumerate(zip(ts, refs)) if r[2] and i % 2 == 0],
        "D": sorted(topics + plain + ["px/noct", "px/unknown", "px/cut", "px/badparam"])}
for k in "ABCD":
    assert got[k] == sorted(want[k]), (k, got[k], sorted(want[k]))
for k in range(3):   # the documents exercise both answers of every query
    assert 0 < sum(r[k] for r in refs) < n, k
s = json.load(open("%s/ct.json" % tmp))
c = s["content"]
assert c["xpath_subscribes"] == 4 and c["suback_bad_xpath"] == 7, c
assert c["pubs"] == sum(c[k] for k in ("decoded", "no_content_type", "not_exi", "bad_content_type", "unknown_schema",
                                        "no_filter_for_schema", "decode_error", "value_too_large")), c
assert c["no_content_type"] > 0 and c["unknown_schema"] > 0 and c["decode_error"] > 0 and c["decoded"] > 0, c
assert c["bad_content_type"] > 0, c
assert s["filter"]["failed"] == 0, s["filter"]
print("ok: %s" % ", ".join("%s %d" % (k, len(got[k])) for k in "ABCD"), "; content", json.dumps(c))
PY
echo "proxy_content: xpath alone, with its own identifier, with nbhd; bad publications and refused filters: pass"
