#!/usr/bin/env python3
"""Scenario of proxy_content_header.sh: a publication whose EXI payload
carries an options header is decoded with the header's options (EXI 1.0
§5.4, README "Out-of-band EXI options"), whatever its Content Type's option
parameters say; a Content Type contradicting the header is a mis-configured
publisher, which the proxy counts and reports (the shell checks the summary
and stderr). Raw clients (proxy_mqtt5.py) through wirematch-proxy in front
of a real mosquitto. Prints one line per check, exits 1 at the first failure.

usage: proxy_content_header.py PROXY_PORT HEADER.exi"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client
from proxy_spatial import fail, ok

port, pay = int(sys.argv[1]), open(sys.argv[2], "rb").read()
sub = Client(port, "ch-sub")
codes, _ = sub.subscribe(["ch/#"], user=[("xpath", "//s:senml[@u = 'Cel' and @v > 20]")], timeout=300)
if codes != [1]: fail("subscriber: SUBACK %r" % codes)
pub = Client(port, "ch-pub")
CTS = ["application/exi; schema=senml; strict=true",           # contradicts the header (not strict)
       "application/exi; schema=senml",                        # no option: nothing to contradict
       "application/exi; schema=senml; byte-aligned=false"]    # agrees with the header (bit-packed)
for i, ct in enumerate(CTS): pub.publish("ch/%d" % i, pay, qos=1, content_type=ct)
if not pub.drain(30): fail("publisher: PUBACKs missing")
if not sub.wait_for(lambda: len(sub.msgs) >= 3, 30):
    fail("subscriber: %d of the 3 publications (each decoded by its header, which the filter selects)" % len(sub.msgs))
if sorted(m.topic for m in sub.msgs) != ["ch/0", "ch/1", "ch/2"]: fail("subscriber: %r" % [m.topic for m in sub.msgs])
ok("3 publications with an options header (not strict) under 3 Content Types, all decoded by the header and delivered")
pub.disconnect()
sub.disconnect()
