#!/usr/bin/env python3
"""Scenario of proxy_pingresp_held.sh: the broker's PINGRESP to a resumed
session whose queued deliveries are held for its content filters' compile
(content.resumes_held) goes on to the client at once, ahead of the held
deliveries (MQTT 5.0 §4.6 does not order PINGRESP; held behind a compile
that can take seconds, the client's keep-alive would end the connection),
and the held deliveries then all come, in the order the broker sent them.
Raw client (proxy_mqtt5.py) through wirematch-proxy in front of a real
mosquitto. Prints one line per check, exits 1 at the first failure.

usage: proxy_pingresp_held.py PROXY_PORT"""
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, evict_texts, subscribe_texts
from proxy_spatial import fail, ok

port = int(sys.argv[1])
CID = "ph-s"
N = 5
# Texts slow to compile together (Hyperscan unrolls each .{230}: about a second for the set, more
# under load or ASan), selecting nothing: the resumed session's deliveries wait for that compile.
uniq = time.time_ns() % 1000000
TEXTS = ['//s:senml[matches(@vs, ".{230}p%d_%d")]' % (i, uniq) for i in range(8)]

class Seq(Client):
    """Client that also keeps the order of everything it receives: ("pub", payload) or ("ping",)."""
    def _handle(self, t, body):
        if t >> 4 == 13:
            with self.cond:
                self.seq.append(("ping", time.time()))
        super()._handle(t, body)
        if t >> 4 == 3:
            with self.cond:
                self.seq.append(("pub", self.msgs[-1].payload))

s1 = Client(port, CID, session_expiry=3600, timeout=None)   # the compile may take minutes under ASan
codes, took = subscribe_texts(s1, TEXTS, "ph/%d", 100)
for i, c in enumerate(codes):
    if c != 1: fail("S: SUBACK reason %r for text %d after %.0f s" % (c, i, took))
codes, _ = s1.subscribe(["pl/#"])
if codes != [1]: fail("S: SUBACK %r for pl/#" % codes)
s1.disconnect()
# another connection's new text: the worker commits its table without S's texts
codes = evict_texts(port, "ph-evict")
if codes != [1]: fail("evicting client: SUBACK %r" % codes)
p = Client(port, "ph-pub")
for i in range(N): p.publish("pl/x", b"m%d" % i, qos=1)
if not p.drain(30): fail("publisher: PUBACKs missing")
p.disconnect()
ok("S subscribed %d slow texts and pl/# and left, %d QoS 1 publications to pl/x queued for it" % (len(TEXTS), N))

c = Seq.__new__(Seq)
c.seq = []
Client.__init__(c, port, CID, clean=False, session_expiry=3600, timeout=None)
t_ping = time.time()
c.send_raw(b"\xc0\x00")   # PINGREQ right after the CONNACK: the broker answers behind the queued deliveries
if not c.session_present: fail("S resumed without its session")
if not c.wait_for(lambda: any(x[0] == "ping" for x in c.seq), 10):
    fail("S: no PINGRESP within 10 s of its PINGREQ (held behind the deliveries?); got %r" % c.seq)
first = next(i for i, x in enumerate(c.seq) if x[0] == "ping")
if first != 0:
    fail("S: PINGRESP after %d deliveries: %r (the deliveries should still be held for the compile)" % (first, c.seq))
ok("S: the PINGRESP %.0f ms after its PINGREQ, ahead of the held deliveries" % ((c.seq[0][1] - t_ping) * 1000))
if not c.wait_for(lambda: len(c.msgs) >= N, 600): fail("S: %d of the %d held deliveries" % (len(c.msgs), N))
time.sleep(0.3)
got = [x[1] for x in c.seq if x[0] == "pub"]
if got != [b"m%d" % i for i in range(N)]: fail("S: deliveries %r, want m0..m%d in order, once each" % (got, N - 1))
c.send_raw(b"\xc0\x00")   # after the release: answered as usual
if not c.wait_for(lambda: sum(1 for x in c.seq if x[0] == "ping") == 2, 10): fail("S: no PINGRESP after the release")
ok("S: the %d held deliveries in order after the compile, then a PINGRESP for its next PINGREQ" % N)
c.disconnect()
again = Client(port, CID, clean=True)   # ends the session
again.disconnect()
