#!/usr/bin/env python3
"""A minimal MQTT v5 broker for proxy_isolation.sh only: it sends ONE PUBLISH
per subscriber listing the Subscription Identifiers of all its matching
subscriptions (MQTT 5.0 §3.3.4 allows either way; HiveMQ and EMQX do this,
mosquitto sends one PUBLISH per subscription). That is the only way, with
the peers of this machine, to put more than 64 identifiers on one PUBLISH.
CONNECT, SUBSCRIBE (all granted), QoS 0 PUBLISH, DISCONNECT; nothing else.
usage: fake_broker.py PORT   (serves until killed)
"""
import os, socket, struct, sys, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import packet, s, props, parse_props, read_vbi

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
    try:
        while True:
            t, body = get(); k = t >> 4
            if k == 1: c.sendall(packet(0x20, b"\x00\x00" + props([])))
            elif k == 8:
                pid = body[:2]; pr, off = parse_props(body, 2); sid = dict(pr).get(0x0B)
                codes = b""
                while off < len(body):
                    l = struct.unpack(">H", body[off:off + 2])[0]
                    subs.append((body[off + 2:off + 2 + l].decode(), sid)); off += 2 + l + 1; codes += b"\x00"
                c.sendall(packet(0x90, pid + props([]) + codes))
            elif k == 3:
                l = struct.unpack(">H", body[:2])[0]; topic = body[2:2 + l].decode()
                pr, off = parse_props(body, 2 + l)
                user = [(0x26, v) for kk, v in pr if kk == 0x26]
                with lock: targets = list(conns)
                for o in targets:
                    hit = [sd for f, sd in o["subs"] if match(f, topic)]
                    if hit:
                        o["sock"].sendall(packet(0x30, s(topic) + props([(0x0B, x) for x in hit if x] + user) + body[off:]))
            elif k == 14: break
    except (EOFError, OSError): pass
    with lock: conns.remove(me)
    c.close()

srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1]))); srv.listen(16)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
