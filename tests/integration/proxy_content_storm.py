#!/usr/bin/env python3
"""Scenario of proxy_content_storm.sh: one client's storm of new content
filters must not stall the other connections of its worker (finding 7).
Prints one line per check, exits 1 at the first failure.

usage: proxy_content_storm.py PORT DIR N BOUND_S
  DIR holds dNN.exi, queries.txt (the storm's queries, one per line; the
  one containing "INVALID" compiles for no schema) and refs.json
  (senml_docs.py: libxml2's answer to each query on each document).
A probe client subscribes to pr/# (no filter). The storm client sends, in
ONE write, a SUBSCRIBE per query (query i on st/i/#, QoS 1) followed by an
UNSUBSCRIBE (st/none) and a PINGREQ. Meanwhile the probe does round trips (PINGREQ -> PINGRESP, and a
QoS 1 PUBLISH to pr/k until it comes back to it through the broker); each
must take less than BOUND_S seconds. Then: the storm client got every
SUBACK (granted, but SUBACK 0x80 with a Reason String for the invalid one)
and its UNSUBACK after them (its later packets kept their order), its
PINGRESP before the last of them (a PINGREQ goes on while held); each
document published to st/i/D reaches it exactly when libxml2 says query i
selects something in it."""
import json, os, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s, parse_props
from proxy_spatial import fail, ok, load_docs
import struct

port, d, n, bound = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
queries, refs, docs = load_docs(d, n)
CT = "application/exi; schema=senml"
Q = len(queries)

probe = Client(port, "storm-probe")
codes, _ = probe.subscribe(["pr/#"], qos=1)
if codes != [1]: fail("probe SUBACK %r" % codes)
st = Client(port, "storm-sub")
storm = b"".join(packet(0x82, struct.pack(">H", 1000 + i) + props([(0x26, ("xpath", q))]) + s("st/%d/#" % i) + b"\x01")
                 for i, q in enumerate(queries)) + packet(0xA2, struct.pack(">H", 999) + props([]) + s("st/none")) + b"\xc0\x00"
t0 = time.time()
st.send_raw(storm)

def subacks(): return sum(1 for k, _ in st.other if k == 9)
worst, trips = 0.0, 0
while True:
    done = subacks() >= Q
    t1 = time.time()
    n0 = sum(1 for k, _ in probe.other if k == 13)
    probe.send_raw(b"\xc0\x00")
    if not probe.wait_for(lambda: sum(1 for k, _ in probe.other if k == 13) > n0, 60): fail("probe: no PINGRESP")
    m0 = len(probe.msgs)
    probe.publish("pr/%d" % trips, b"x", qos=1)
    if not probe.wait_for(lambda: len(probe.msgs) > m0, 60): fail("probe: its own PUBLISH did not come back")
    dt = time.time() - t1
    worst = max(worst, dt)
    trips += 1
    if dt >= bound:
        fail("the probe's round trip took %.2f s while the storm client's %d SUBSCRIBEs compiled (bound %.1f s; "
             "%d SUBACKs so far)" % (dt, Q, bound, subacks()))
    if done: break
    if time.time() - t0 > 120: fail("storm: %d of %d SUBACKs after 120 s" % (subacks(), Q))
    time.sleep(0.02)
ok("%d SUBSCRIBEs with distinct content filters answered in %.1f s; meanwhile %d probe round trips on the same "
   "worker, the slowest %.3f s (bound %.1f s)" % (Q, time.time() - t0, trips, worst, bound))

if not st.wait_for(lambda: any(k == 11 for k, _ in st.other), 30): fail("storm client: no UNSUBACK")
kinds = [k for k, _ in st.other]
if 13 not in kinds: fail("storm client: no PINGRESP")
# its UNSUBSCRIBE stayed behind the held SUBSCRIBEs (order kept); its
# PINGREQ did not (it goes on while a SUBSCRIBE waits for its compile)
rest = [k for k in kinds if k != 13]
if rest.index(11) != Q: fail("storm client: UNSUBACK at position %d among %d SUBACKs (order lost)" % (rest.index(11), Q))
if kinds.index(13) >= Q: fail("storm client: PINGRESP after every SUBACK: its PINGREQ waited behind the held SUBSCRIBEs")
granted = 0
for k, b in st.other:
    if k != 9: continue
    pid = struct.unpack(">H", b[:2])[0]
    i = pid - 1000
    pr, off = parse_props(b, 2)
    code = b[off]
    if "INVALID" in queries[i]:
        why = dict(pr).get(0x1F, "")
        if code != 0x80 or "invalid xpath" not in why: fail("query %d (invalid): SUBACK 0x%02x %r" % (i, code, why))
    elif code != 1:
        fail("query %d: SUBACK 0x%02x %r" % (i, code, pr))
    else:
        granted += 1
ok("storm client: %d granted, the invalid one refused with its reason, its UNSUBACK after every SUBACK, its "
   "PINGRESP at position %d (passed ahead)" % (granted, kinds.index(13)))

pub = Client(port, "storm-pub")
for i, q in enumerate(queries):
    for k in range(n): pub.publish("st/%d/%d" % (i, k), docs[k], qos=1, content_type=CT)
if not pub.drain(60): fail("publisher: acknowledgements missing")
want = {(i, k) for i, q in enumerate(queries) if "INVALID" not in q for k in range(n) if refs[k][i]}
def got(): return {(int(m.topic.split("/")[1]), int(m.topic.split("/")[2])) for m in st.msgs}
st.wait_for(lambda: len(got()) >= len(want), 30)
time.sleep(0.5)   # anything more that was wrongly passed
g = got()
if g != want:
    fail("storm client deliveries differ from libxml2: missing %r, extra %r" % (sorted(want - g)[:10], sorted(g - want)[:10]))
if len(st.msgs) != len(g): fail("storm client: duplicates")
ok("storm client: exactly the %d of %d publications libxml2 selects, over %d queries" % (len(g), Q * n, Q))
