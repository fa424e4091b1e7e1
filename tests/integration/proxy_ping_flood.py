#!/usr/bin/env python3
"""The scenario of proxy_ping_flood.sh (REVIEW8 finding 3): one client floods
PINGREQs behind SUBSCRIBEs held for their content compile and a large
PUBLISH, while a probe on the same worker measures its PINGREQ round trips.
The attacker writes, at once: NT SUBSCRIBEs (held: each with a new
//s:bK/*^10 text; plain: no xpath, nothing held), a PUBLISH and NPING
PINGREQs; it reads everything it gets. The probe sends a PINGREQ and waits
for its PINGRESP every 5 ms from the attacker's write until the attacker has
all NPING PINGRESPs and NT SUBACKs back (or BOUND seconds).
usage: proxy_ping_flood.py PORT held|plain NT NPING BIG [BOUND]   (BIG: the PUBLISH's payload bytes)
Prints one line: MODE rtts N p50_ms P p99_ms P max_ms M pingresps K subacks S secs T;
exit 1 if the attacker did not get exactly NPING PINGRESPs and NT SUBACKs, or
the probe's connection failed."""
import os, socket, struct, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import packet, props, read_vbi, s

port, mode, nt, nping = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
nbig = int(sys.argv[5])
bound = float(sys.argv[6]) if len(sys.argv) > 6 else 120.0

def conn(cid):
    c = socket.create_connection(("127.0.0.1", port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(packet(0x10, s("MQTT") + bytes([5, 2]) + struct.pack(">H", 600) + props([]) + s(cid)))
    c.settimeout(bound)
    d = c.recv(100)
    if not d or d[0] != 0x20: sys.exit("%s: no CONNACK: %r" % (cid, d))
    return c

probe = conn("pf-probe-%s" % mode)
attacker = conn("pf-attacker-%s" % mode)
rtts, done, err = [], threading.Event(), []

def prober():
    while not done.is_set():
        t0 = time.time()
        probe.sendall(b"\xc0\x00")
        try:
            d = probe.recv(10)
        except socket.timeout:
            err.append("probe: no PINGRESP within %.0f s" % bound); return
        if d != b"\xd0\x00": err.append("probe got %r" % d); return
        rtts.append(time.time() - t0)
        time.sleep(0.005)

counts = {0xD: 0, 0x9: 0}
def reader():
    buf = b""
    while counts[0xD] < nping or counts[0x9] < nt:
        try:
            d = attacker.recv(1 << 20)
        except socket.timeout:
            break
        if not d: break
        buf += d
        off = 0
        while off + 2 <= len(buf):
            try: n, body = read_vbi(buf, off + 1)
            except IndexError: break
            if body + n > len(buf): break
            t = buf[off] >> 4
            counts[t] = counts.get(t, 0) + 1
            off = body + n
        buf = buf[off:]
    done.set()

tag = time.time_ns() % 1000000
subs = b""
for k in range(nt):
    pr = props([(0x26, ("xpath", "//s:b%d" % (tag * 100 + k) + "/*" * 10))]) if mode == "held" else props([])
    subs += packet(0x82, struct.pack(">H", k + 1) + pr + s("pf/t%d" % k) + b"\x00")
big = packet(0x30, s("pf/big") + props([]) + b"x" * nbig)
th, rd = threading.Thread(target=prober), threading.Thread(target=reader)
t0 = time.time()
th.start(); rd.start()
attacker.sendall(subs + big + b"\xc0\x00" * nping)
rd.join(bound + 5)
done.set(); th.join()
secs = time.time() - t0
rtts.sort()
ms = lambda q: 1000 * rtts[min(len(rtts) - 1, int(len(rtts) * q))] if rtts else -1
print("%s rtts %d p50_ms %.1f p99_ms %.1f max_ms %.1f pingresps %d subacks %d secs %.1f"
      % (mode, len(rtts), ms(0.5), ms(0.99), ms(1.0), counts[0xD], counts[0x9], secs))
if err: sys.exit(err[0])
if counts[0xD] != nping or counts[0x9] != nt:
    sys.exit("%s: the attacker got %d of %d PINGRESPs, %d of %d SUBACKs" % (mode, counts[0xD], nping, counts[0x9], nt))
if len(rtts) < 5: sys.exit("%s: %d probe round trips" % (mode, len(rtts)))
