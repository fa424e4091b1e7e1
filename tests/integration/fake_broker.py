#!/usr/bin/env python3
"""A minimal MQTT v5 broker for the proxy's tests, doing what mosquitto never
does: it sends ONE PUBLISH per subscriber listing the Subscription
Identifiers of all its matching subscriptions (MQTT 5.0 §3.3.4 allows either
way; HiveMQ and EMQX do this, mosquitto sends one PUBLISH per subscription),
the only way with the peers of this machine to put more than 64 identifiers
on one PUBLISH (proxy_isolation.sh); and, with options, a late CONNACK with
the properties a broker may set (proxy_pipeline.sh) and broker -> client
Topic Aliases (proxy_aliases.sh).
CONNECT, SUBSCRIBE (all granted the QoS asked), QoS 0 PUBLISH, PINGREQ, PUBACK, DISCONNECT;
nothing else.
usage: fake_broker.py PORT [OPTION...]   (serves until killed)
  --connack-delay S  wait S seconds after a CONNECT before the CONNACK (reading
                     nothing meanwhile, so what a client pipelines waits)
  --no-sub-ids       CONNACK with Subscription Identifier Available 0
  --max-packet N     CONNACK with Maximum Packet Size N
  --aliases          after a SUBSCRIBE's SUBACK, send that subscriber the
                     topic-alias sequence ALIAS_SEQ (QoS 1, with its
                     Subscription Identifier)
  --stall S          read nothing for S seconds after each CONNACK, with a
                     4 KB receive buffer, so what the client sends meanwhile
                     backs up in the proxy (proxy_park_hold.sh)
  --ping-delay S     answer a PINGREQ S seconds late, reading nothing meanwhile,
                     so the answers to what follows it still come in order
                     (proxy_ack_order.sh)
Prints to stdout (flushed): "pingreq after N publishes" (QoS 0 PUBLISHes from
that connection) at each PINGREQ, "disconnect after N publishes" at a
DISCONNECT, "puback ID" for each PUBACK received.
"""
import os, socket, struct, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import packet, s, props, parse_props, read_vbi, vbi

# Topic aliases towards the subscriber (topic "" = alias only), each with a
# peid inside (IN) or outside (FAR) Monaco's X1: a subscriber of X1 through
# the proxy sees 2, 3, 5, 6, 8 with topics t/a, t/a, t/b, t/c, t/d. 1 binds
# alias 1 in a withheld PUBLISH; 4 and 7 rebind a known alias in a withheld
# one.
IN, FAR = "r157719642.0", "r124149681.0"
ALIAS_SEQ = [("t/a", 1, FAR), ("", 1, IN), ("", 1, IN), ("t/b", 1, FAR), ("", 1, IN), ("t/c", 2, IN),
             ("t/d", 2, FAR), ("", 2, IN)]

args = sys.argv[2:]
def opt(name, conv, default):
    return conv(args[args.index(name) + 1]) if name in args else default
CONNACK_DELAY = opt("--connack-delay", float, 0.0)
STALL = opt("--stall", float, 0.0)
PING_DELAY = opt("--ping-delay", float, 0.0)
MAX_PACKET = opt("--max-packet", int, 0)
NO_SUB_IDS, ALIASES = "--no-sub-ids" in args, "--aliases" in args

def connack():
    pr = bytearray()
    if NO_SUB_IDS: pr += b"\x29\x00"
    if MAX_PACKET: pr += b"\x27" + struct.pack(">I", MAX_PACKET)
    return packet(0x20, b"\x00\x00" + vbi(len(pr)) + bytes(pr))

def say(line): print(line, flush=True)

conns, lock = [], threading.Lock()

def match(f, t):
    fl, tl = f.split("/"), t.split("/")
    for i, x in enumerate(fl):
        if x == "#": return True
        if i >= len(tl) or (x != "+" and x != tl[i]): return False
    return len(fl) == len(tl)

def serve(c):
    buf, subs = b"", []
    me = {"sock": c, "subs": subs}
    with lock: conns.append(me)
    def get():
        nonlocal buf
        while True:
            if len(buf) >= 2:
                try: n, off = read_vbi(buf, 1)
                except IndexError: n = None
                if n is not None and len(buf) >= off + n:
                    p = buf[:off + n]; buf = buf[off + n:]
                    return p[0], p[off:]
            d = c.recv(65536)
            if not d: raise EOFError
            buf += d
    pubs = 0
    try:
        while True:
            t, body = get(); k = t >> 4
            if k == 1:
                time.sleep(CONNACK_DELAY)
                c.sendall(connack())
                time.sleep(STALL)
            elif k == 8:
                pid = body[:2]; pr, off = parse_props(body, 2); sid = dict(pr).get(0x0B)
                codes = b""
                while off < len(body):
                    l = struct.unpack(">H", body[off:off + 2])[0]
                    subs.append((body[off + 2:off + 2 + l].decode(), sid))
                    codes += bytes([body[off + 2 + l] & 3]); off += 2 + l + 1   # the QoS asked for
                c.sendall(packet(0x90, pid + props([]) + codes))
                if ALIASES:
                    for i, (topic, alias, peid) in enumerate(ALIAS_SEQ, 1):
                        pr = [(0x23, alias), (0x26, ("peid", peid))] + ([(0x0B, sid)] if sid else [])
                        c.sendall(packet(0x32, s(topic) + struct.pack(">H", i) + props(pr) + b"m%d" % i))
            elif k == 12:
                time.sleep(PING_DELAY)
                c.sendall(b"\xd0\x00")
                say("pingreq after %d publishes" % pubs)
            elif k == 4: say("puback %d" % struct.unpack(">H", body[:2])[0])
            elif k == 3:
                pubs += 1
                l = struct.unpack(">H", body[:2])[0]; topic = body[2:2 + l].decode()
                pr, off = parse_props(body, 2 + l)
                user = [(0x26, v) for kk, v in pr if kk == 0x26]
                with lock: targets = list(conns)
                for o in targets:
                    hit = [sd for f, sd in o["subs"] if match(f, topic)]
                    if hit:
                        o["sock"].sendall(packet(0x30, s(topic) + props([(0x0B, x) for x in hit if x] + user) + body[off:]))
            elif k == 14:
                say("disconnect after %d publishes" % pubs)
                break
    except (EOFError, OSError): pass
    with lock: conns.remove(me)
    c.close()

srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if STALL: srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # inherited by accepted sockets
srv.bind(("127.0.0.1", int(sys.argv[1]))); srv.listen(16)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
