#!/usr/bin/env python3
"""Raw clients for proxy_protocol_errors.sh; each prints what came back
before the close, in hex ("<timeout>" if it did not close).

usage: proxy_protocol_errors.py PORT v311     an MQTT 3.1.1 CONNECT ("MQTT", level 4)
       proxy_protocol_errors.py PORT v31      an MQTT 3.1 CONNECT ("MQIsdp", level 3)
       proxy_protocol_errors.py PORT again    a v5 CONNECT, its CONNACK read, then a second CONNECT
"""
import os, socket, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import packet, s, until_close

def connect_v5(cid): return packet(0x10, s("MQTT") + b"\x05\x02\x00\x3c\x00" + s(cid))

def main():
    port, what = int(sys.argv[1]), sys.argv[2]
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    if what == "v311": c.sendall(packet(0x10, s("MQTT") + b"\x04\x02\x00\x3c" + s("old311")))
    elif what == "v31": c.sendall(packet(0x10, s("MQIsdp") + b"\x03\x02\x00\x3c" + s("old31")))
    else:
        c.sendall(connect_v5("twice"))
        head = c.recv(2)   # the CONNACK: Remaining Length < 128 (one byte)
        assert head[:1] == b"\x20" and head[1] < 128, head
        body = b""
        while len(body) < head[1]: body += c.recv(head[1] - len(body))
        c.sendall(connect_v5("twice"))
    got, err = until_close(c)
    print(got.hex() + ("<timeout>" if err else ""))

main()
