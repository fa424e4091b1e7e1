#!/usr/bin/env python3
"""Resume phase of proxy_content_storm.sh: a persistent session resumed with
content filters its worker's table no longer has must not stall the other
connections of the worker (its compile runs on the compile thread) and must
have its queued deliveries judged by the compiled filters.
Prints one line per check, exits 1 at the first failure.

usage: proxy_content_resume.py PORT DIR N BOUND_S   (DIR as for proxy_content_storm.py)
A client with a Session Expiry Interval subscribes the valid queries (query i
on rs/i/#, QoS 1) and leaves; another client's new text makes the worker
commit its table without them (their slots free); every document is
published to rs/i/D for every query (queued by the broker); the session
resumes (Clean Start 0) while a probe client on the same worker does PINGREQ
round trips, each under BOUND_S seconds; the resumed session gets exactly the
publications libxml2 selects."""
import json, os, struct, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s
from proxy_spatial import fail, ok, load_docs

port, d, n, bound = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
queries, refs, docs = load_docs(d, n)
CT = "application/exi; schema=senml"
valid = [i for i, q in enumerate(queries) if "INVALID" not in q]

r = Client(port, "resume-sub", session_expiry=600)
r.send_raw(b"".join(packet(0x82, struct.pack(">H", 2000 + i) + props([(0x26, ("xpath", queries[i]))]) +
                            s("rs/%d/#" % i) + b"\x01") for i in valid))
if not r.wait_for(lambda: sum(1 for k, _ in r.other if k == 9) >= len(valid), 120):
    fail("resume-sub: %d of %d SUBACKs" % (sum(1 for k, _ in r.other if k == 9), len(valid)))
r.disconnect()
e = Client(port, "resume-evict")
codes, _ = e.subscribe(["ev/#"], qos=1, user=[("xpath", '//s:senml[@v > 98765]')])
if codes != [1]: fail("evicting client: SUBACK %r" % codes)
e.disconnect()
pub = Client(port, "resume-pub")
for i in valid:
    for k in range(n): pub.publish("rs/%d/%d" % (i, k), docs[k], qos=1, content_type=CT)
if not pub.drain(60): fail("publisher: acknowledgements missing")
pub.disconnect()

probe = Client(port, "resume-probe")
worst, trips, stop = [0.0], [0], [False]
def probing():
    while not stop[0]:
        t1 = time.time()
        n0 = sum(1 for k, _ in probe.other if k == 13)
        probe.send_raw(b"\xc0\x00")
        if not probe.wait_for(lambda: sum(1 for k, _ in probe.other if k == 13) > n0, 60): worst[0] = 99; return
        worst[0] = max(worst[0], time.time() - t1)
        trips[0] += 1
        time.sleep(0.01)
th = threading.Thread(target=probing)
th.start()
time.sleep(0.2)
t0 = time.time()
r2 = Client(port, "resume-sub", clean=False, session_expiry=600)
want = {(i, k) for i in valid for k in range(n) if refs[k][i]}
def got(): return {(int(m.topic.split("/")[1]), int(m.topic.split("/")[2])) for m in r2.msgs}
r2.wait_for(lambda: len(got()) >= len(want), 120)
took = time.time() - t0
time.sleep(0.5)   # anything more that was wrongly passed
stop[0] = True
th.join()
if not r2.session_present: fail("resume-sub: the broker did not resume the session")
g = got()
if g != want:
    fail("resumed session's deliveries differ from libxml2: missing %r, extra %r" % (sorted(want - g)[:10], sorted(g - want)[:10]))
if len(r2.msgs) != len(g): fail("resumed session: duplicates")
if worst[0] >= bound:
    fail("the probe's round trip took %.2f s while the resumed session's %d content filters compiled (bound %.1f s)"
         % (worst[0], len(valid), bound))
ok("resumed session with %d content filters to compile: exactly the %d queued publications libxml2 selects, "
   "after %.2f s; meanwhile %d probe round trips, the slowest %.3f s (bound %.1f s)"
   % (len(valid), len(g), took, trips[0], worst[0], bound))
r2.disconnect()
probe.disconnect()
