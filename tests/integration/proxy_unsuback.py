#!/usr/bin/env python3
"""Clients for proxy_unsuback.sh: the proxy forgets a subscription as the
broker's UNSUBACK says (MQTT 5.0 §3.11.3), in the order the broker applied
the packets (§4.6). Prints one line per check; the script compares them.

usage: proxy_unsuback.py PORT refused   subscriber "u": keep/# and t/# with nbhd X1 (granted), UNSUBSCRIBE
                                        both (the broker's ACL refuses keep/#: UNSUBACK 87 00); then P
                                        publishes keep/x and t/x with a peid in X1
       proxy_unsuback.py PORT pipelined "a" writes SUBSCRIBE $share/g/t/# (nbhd X1) + UNSUBSCRIBE of it in
                                        one send and stays; then "b" joins $share/g/t/# with nbhd X2
"""
import os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s

IN = "r157719642.0"   # a peid inside Monaco's X1

def unsubscribe(c, pid, *filters):
    c.sock.sendall(packet(0xA2, struct.pack(">H", pid) + props([]) + b"".join(s(f) for f in filters)))
    assert c.wait_for(lambda: (11, pid) in c.acks, 10), "no UNSUBACK"
    return c.acks.pop((11, pid))[3:].hex()   # id, empty properties, then the reason codes

def refused(port):
    u = Client(port, "u")
    print("subscribe", u.subscribe(["keep/#", "t/#"], user=[("nbhd", "X1")])[0])
    print("unsuback", unsubscribe(u, 900, "keep/#", "t/#"))
    p = Client(port, "p")
    p.publish("keep/x", "kept", qos=1, user=[("peid", IN)])
    p.publish("t/x", "gone", qos=1, user=[("peid", IN)])
    u.wait_for(lambda: len(u.msgs) >= 1, 5)
    time.sleep(0.5)
    print("received", sorted(m.topic for m in u.msgs))

def pipelined(port):
    a = Client(port, "a")
    sub = packet(0x82, struct.pack(">H", 901) + props([(0x26, ("nbhd", "X1"))]) + s("$share/g/t/#") + b"\x01")
    uns = packet(0xA2, struct.pack(">H", 902) + props([]) + s("$share/g/t/#"))
    a.sock.sendall(sub + uns)
    assert a.wait_for(lambda: (9, 901) in a.acks and (11, 902) in a.acks, 10), "no SUBACK/UNSUBACK"
    print("a", a.acks[(9, 901)][-1], a.acks[(11, 902)][-1])
    b = Client(port, "b")
    print("b", b.subscribe(["$share/g/t/#"], user=[("nbhd", "X2")])[0])

{"refused": refused, "pipelined": pipelined}[sys.argv[2]](int(sys.argv[1]))
