#!/usr/bin/env python3
"""Scenario of proxy_resume_disconnect.sh: a persistent session resumed
through the proxy while its content filters compile (its queued deliveries
held, content.resumes_held) is ended by the broker with a DISCONNECT of its
own, written behind those deliveries. The client must get that DISCONNECT,
not the proxy's 0x80 for a lost broker (REVIEW7 finding 4), and the held
deliveries, which the client never acknowledged, must still be the
session's: the broker sends them again at its next connection. The broker
here is a real mosquitto with retain_available false: a retained PUBLISH
from the client makes it send DISCONNECT 0x9A (Retain not supported) and
close (MQTT 5.0 §3.2.2.3.5). Prints one line per check, exits 1 at the
first failure.

usage: proxy_resume_disconnect.py PROXY_PORT BROKER_PORT PAYLOAD.exi"""
import os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, evict_texts, subscribe_texts
from proxy_spatial import fail, ok

port, bport, pay = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], "rb").read()
CT = "application/exi; schema=senml"
CID = "rd-s"
# Texts slow to compile together (Hyperscan unrolls each .{230}: about a second for the set, more
# under load or ASan) and selecting nothing in the payload: the resumed session's deliveries wait
# for that compile, and are never acknowledged by the proxy on the client's behalf before it ends.
uniq = time.time_ns() % 1000000
TEXTS = ['//s:senml[matches(@vs, ".{230}t%d_%d")]' % (i, uniq) for i in range(8)]

s1 = Client(port, CID, session_expiry=3600, timeout=None)   # the compile may take minutes under ASan
codes, took = subscribe_texts(s1, TEXTS, "rd/%d", 100)   # keep-alive 60 s: PINGREQs pass the held SUBSCRIBEs
for i, c in enumerate(codes):
    if c != 1: fail("S: SUBACK reason %r for text %d after %.0f s" % (c, i, took))
s1.disconnect()
# another connection's new text: the worker commits its table without S's texts
codes = evict_texts(port, "rd-evict")
if codes != [1]: fail("evicting client: SUBACK %r" % codes)
p = Client(port, "rd-pub")
for _ in range(3): p.publish("rd/0", pay, qos=1, content_type=CT)
if not p.drain(30): fail("publisher: PUBACKs missing")
p.disconnect()
ok("S subscribed %d slow texts (compiled in %.1f s) and left, 3 QoS 1 publications queued for it"
   % (len(TEXTS), took))

old = Client(port, CID, clean=False, session_expiry=3600)
if not old.session_present: fail("S resumed without its session")
old.publish("rd/r", b"x", retain=True)   # the broker answers DISCONNECT 0x9A and closes
if not old.wait_for(lambda: old.closed, 60): fail("S: not closed 60 s after its retained PUBLISH")
disc = [b for k, b in old.other if k == 14]
if len(disc) != 1 or not disc[0] or disc[0][0] != 0x9A:
    fail("S: DISCONNECTs %r, want the broker's 0x9A (Retain not supported)" % [b.hex() for b in disc])
if old.msgs: fail("S: %d deliveries, none selected by its filters" % len(old.msgs))
ok("S, resumed and held: the broker's DISCONNECT 0x9A, then the close")
again = Client(bport, CID, clean=False, session_expiry=0)   # straight to the broker; ends the session
if not again.wait_for(lambda: len(again.msgs) >= 3, 30):
    fail("S again, straight to the broker: %d of the 3 deliveries held at the proxy" % len(again.msgs))
ok("S again, straight to the broker: the 3 deliveries held at the proxy, sent again")
again.disconnect()
