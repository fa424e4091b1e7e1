#!/usr/bin/env python3
"""A client that pipelines (MQTT 5.0 §3.1.4: "Clients are allowed to send
further Control Packets immediately after sending a CONNECT packet; Clients
need not wait for a CONNACK"): CONNECT and the scenario's packets in one
write, then a PINGREQ whose PINGRESP ends the exchange once every SUBSCRIBE
and QoS 1 PUBLISH has its answer (a PINGREQ may pass a SUBSCRIBE the proxy
holds for its compile). Prints what came back,
in order, on one line: "CONNACK:00 SUBACK:80 PINGRESP", "CONNACK:87 closed"
(SUBACK: its last reason code; PUBACK: its reason code, 00 when omitted).
Standard library only (proxy_raw.py's encoders).

usage: proxy_pipeline.py PORT SCENARIO [ARG]
  nbhd-unknown    SUBSCRIBE a/# with nbhd X9 (no such neighborhood)
  xpath-bad       SUBSCRIBE a/# with xpath '//['
  sid-reserved    SUBSCRIBE a/# with Subscription Identifier 0x0F000001 (the proxy's)
  two-filters     SUBSCRIBE a/# and b/# with nbhd X1 (over --max-subs-per-conn 1)
  nbhd            SUBSCRIBE a/# with nbhd X1
  nbhd-size N     SUBSCRIBE with nbhd X1 of exactly N bytes (+ the identifier the proxy adds: over N)
  pub-qos1        PUBLISH QoS 1 to nobody/here
  flood N         N PUBLISHes QoS 0 of ~1 KB to flood/x ("I-ppp...")
  pub-eof         PUBLISH QoS 0 to pe/x "held-then-eof", DISCONNECT, and close at once
                  (no PINGREQ; prints only "sent")
"""
import os, socket, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_raw import packet, s, connect, vbi, Reader, NAMES

PINGREQ = b"\xc0\x00"

def user(k, v):
    b = b"\x26" + s(k) + s(v)
    return vbi(len(b)) + b

def subscribe(pr, *filters):
    return packet(0x82, b"\x00\x01" + pr + b"".join(s(f) + b"\x01" for f in filters))

def nbhd_sized(n):
    """A SUBSCRIBE with nbhd X1 of exactly n bytes (filter length tuned)."""
    for k in range(n, 0, -1):
        p = subscribe(user("nbhd", "X1"), "s/" + "x" * k)
        if len(p) == n: return p
    raise SystemExit("no SUBSCRIBE of %d bytes" % n)

def scenario(name, arg):
    if name == "nbhd-unknown": return [subscribe(user("nbhd", "X9"), "a/#")]
    if name == "xpath-bad": return [subscribe(user("xpath", "//["), "a/#")]
    if name == "sid-reserved": return [subscribe(b"\x05\x0b" + vbi(0x0F000001), "a/#")]
    if name == "two-filters": return [subscribe(user("nbhd", "X1"), "a/#", "b/#")]
    if name == "nbhd": return [subscribe(user("nbhd", "X1"), "a/#")]
    if name == "nbhd-size": return [nbhd_sized(int(arg))]
    if name == "pub-qos1": return [packet(0x32, s("nobody/here") + b"\x00\x07\x00payload")]
    if name == "flood":
        return [packet(0x30, s("flood/x") + b"\x00" + b"%d-" % i + b"p" * 1000) for i in range(1, int(arg) + 1)]
    raise SystemExit("unknown scenario " + name)

def show(t, body):
    name = NAMES.get(t >> 4, str(t >> 4))
    if name == "CONNACK": return "CONNACK:%02x" % body[1]
    if name == "SUBACK": return "SUBACK:%02x" % body[-1]
    if name == "PUBACK": return "PUBACK:%02x" % (body[2] if len(body) > 2 else 0)
    if name == "DISCONNECT": return "DISCONNECT:%02x" % (body[0] if body else 0)
    return name

def main():
    port, name = int(sys.argv[1]), sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    if name == "pub-eof":
        sock.sendall(connect("pipe-eof") + packet(0x30, s("pe/x") + b"\x00held-then-eof") + b"\xe0\x00")
        sock.close()
        print("sent")
        return
    pkts = scenario(name, arg)
    sock.sendall(connect("pipe-" + name) + b"".join(pkts) + PINGREQ)
    answers = sum(1 for p in pkts if p[0] in (0x82, 0x32))   # SUBSCRIBE, PUBLISH QoS 1
    r, out = Reader(sock), []
    deadline = time.time() + 20
    try:
        while time.time() < deadline:
            out.append(show(*r.packet()))
            if "PINGRESP" in out and sum(1 for o in out if o.startswith(("SUBACK", "PUBACK"))) >= answers: break
        else:
            out.append("timeout")
    except (EOFError, ConnectionResetError):
        out.append("closed")
    except socket.timeout:
        out.append("timeout")
    print(" ".join(out))

main()
