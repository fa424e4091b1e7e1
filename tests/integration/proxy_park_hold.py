#!/usr/bin/env python3
"""The scenario of proxy_park_hold.sh (REVIEW7 finding 6): chunks parked
behind SUBSCRIBEs held for their compile when the compile's release sends
nothing to the broker.
A puts //s:senml/*^10 on the worker (it fits). C writes at once: 200 x 1 KB
QoS 0 PUBLISHes (the broker reads nothing for a while: C's queue fills, C is
no longer read, what its receives still bring is parked), NSUB SUBSCRIBEs
each with a distinct //s:bK/*^10 (valid alone, none fits next to A's: held
for the compile, then refused 0x97 by the proxy itself) padded with a 2 KB
User Property (so the held bytes pass --conn-buffer 4096 and the rest stays
parked), and a PINGREQ.
usage: proxy_park_hold.py PORT NSUB wait|close [BOUND_S]
  wait:  C must get the NSUB SUBACKs (0x97) and the PINGRESP within BOUND_S
         (default 60) seconds; then it closes its socket (no DISCONNECT).
  close: C closes its socket right after writing (held, chunks parked).
A disconnects at the end. Prints one line; exit 1 on a failed check."""
import socket, struct, sys, time
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s

port, nsub, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
bound = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
wide = lambda name: "//s:%s" % name + "/*" * 10
a = Client(port, "ph-a", timeout=None)   # the bound is wait_for's: a compile may take long (sanitizer builds)
codes, _ = a.subscribe(["ph/a"], user=[("xpath", wide("senml"))], timeout=bound)
assert codes[0] < 0x80, "A's text refused: %r" % codes
c = Client(port, "ph-c", timeout=None)
pubs = packet(0x30, s("ph/x") + props([]) + b"p" * 1000) * 200
subs = b"".join(packet(0x82, struct.pack(">H", i + 1) +
                       props([(0x26, ("xpath", wide("b%d" % i))), (0x26, ("pad", "z" * 2000))]) +
                       s("ph/b%d" % i) + b"\x01") for i in range(nsub))
c.send_raw(pubs + subs + b"\xc0\x00")
if mode == "close":
    c.sock.close()
    a.disconnect()
    print("C closed after writing")
    sys.exit(0)
t0 = time.time()
done = lambda: (13, None) in c.acks and all((9, i + 1) in c.acks for i in range(nsub))
ok = c.wait_for(done, bound)
got = {k[1]: v[-1] for k, v in c.acks.items() if k[0] == 9}
c.sock.close()
a.disconnect()
if not ok:
    print("after %.1f s: %d of %d SUBACKs %r, PINGRESP %s" % (time.time() - t0, len(got), nsub, sorted(got.items()),
          "yes" if (13, None) in c.acks else "NO"))
    sys.exit(1)
if set(got.values()) != {0x97}:
    print("SUBACK reason codes %r, want 0x97 for each (no room next to A's text)" % sorted(got.items()))
    sys.exit(1)
print("%d SUBACKs 0x97 and the PINGRESP after %.1f s" % (nsub, time.time() - t0))
