#!/usr/bin/env python3
"""Client for proxy_resub_refused.sh: a SUBSCRIBE the proxy refuses (an
unknown neighborhood) for a filter the client already subscribed to leaves
that subscription as it was, and the SUBACK's Reason String says so.
Prints one line per check; the script compares them.

usage: proxy_resub_refused.py PORT IN OUT
  "r" subscribes t/# with nbhd X1 and plain/# without one (granted), then
  t/# again with nbhd NOPE (refused), then plain/# and new/# with nbhd NOPE
  (refused); "p" publishes t/in (peid IN, in X1), t/out (peid OUT) and
  plain/x; prints the codes and Reason Strings and the topics "r" received.
"""
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client

REASON_STRING = 0x1F

port, pin, pout = int(sys.argv[1]), sys.argv[2], sys.argv[3]
r = Client(port, "r")
print("first", r.subscribe(["t/#"], user=[("nbhd", "X1")])[0], r.subscribe(["plain/#"])[0])
for filters in (["t/#"], ["plain/#", "new/#"]):
    codes, pr = r.subscribe(filters, user=[("nbhd", "NOPE")])
    print("again", codes, pr.get(REASON_STRING))
p = Client(port, "p")
p.publish("t/in", "in", qos=1, user=[("peid", pin)])
p.publish("t/out", "out", qos=1, user=[("peid", pout)])
p.publish("plain/x", "plain", qos=1)
r.wait_for(lambda: len(r.msgs) >= 2, 5)
time.sleep(0.5)
print("received", sorted(m.topic for m in r.msgs))
