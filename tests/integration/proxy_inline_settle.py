#!/usr/bin/env python3
"""Scenario of proxy_inline_settle.sh: the inline-send settle hang fixed in
651582b, in lock step. Prints what happened on one line; exits 1 if the
SUBSCRIBE held for its compile is not answered.

usage: proxy_inline_settle.py PROXY_PORT BROKER_PORT DONE_FILE
The proxy runs with WM_PROXY_TEST_COMPILE_DONE_FILE=DONE_FILE (README:
a compile's end is written there instead of waking the worker).
  1. C subscribes t/# with nbhd X1 through the proxy (granted).
  2. C sends SUBSCRIBE u/# with a new xpath: held until its compile.
  3. Once DONE_FILE says the compile ended (the worker was not woken: no
     SUBACK may have come), P publishes QoS 1 to t/a with a peid outside X1
     straight to mosquitto: its delivery to C is the worker's only
     completion. The proxy withholds it and queues its PUBACK to the broker
     on C's behalf (an inline send), then, at the top of its loop, sees the
     compile ended and releases the SUBSCRIBE behind that unsettled PUBACK.
  4. C must get its SUBACK within 5 s (before 651582b: the enter that
     submitted the PUBACK waited for a completion that never came)."""
import os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s

def fail(msg):
    print(msg)
    sys.exit(1)

pport, bport, done = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
C = Client(pport, "settle-c")
codes, _ = C.subscribe(["t/#"], qos=1, user=[("nbhd", "X1")])
if codes[0] >= 0x80: fail("nbhd SUBSCRIBE refused: %r" % codes)
pid = C._pid()
C.send_raw(packet(0x82, struct.pack(">H", pid) + props([(0x26, ("xpath", '//s:senml[@n = "settle"]'))]) +
                  s("u/#") + b"\x01"))
t0 = time.time()
while not (os.path.exists(done) and os.path.getsize(done) >= 8):
    if time.time() - t0 > 120: fail("the compile did not end within 120 s")
    time.sleep(0.02)
time.sleep(0.2)   # (a SUBACK now would mean the worker was woken: the check below)
if (9, pid) in C.acks: fail("SUBACK before any completion: the worker was woken, the scenario is not the one meant")
P = Client(bport, "settle-p")
P.publish("t/a", "withheld", qos=1, user=[("peid", "nowhere-settle")])
if not P.drain(10): fail("the broker did not acknowledge the publication")
t1 = time.time()
if not C.wait_for(lambda: (9, pid) in C.acks, 5):
    fail("no SUBACK 5 s after the withheld delivery (the inline PUBACK ahead of it unsettled)")
code = C.acks[(9, pid)][-1]
if C.msgs: fail("the delivery outside X1 reached the client: %r" % [m.topic for m in C.msgs])
print("SUBACK:%02x %d ms after the withheld delivery" % (code, (time.time() - t1) * 1000))
