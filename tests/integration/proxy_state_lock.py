#!/usr/bin/env python3
"""Churn and probe for proxy_state_lock.sh: a persistent session ("churn")
subscribes a neighborhood filter every 50 ms (each one a session change the
--state saver must write), while a probe connection on the same worker, with
no subscription, measures PINGREQ -> PINGRESP every 5 ms. Prints
"pings N p50 X p99 Y max Z" (ms) and "churn K" (SUBACKs), then disconnects.
usage: proxy_state_lock.py PORT SECONDS"""
import os, socket, struct, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s

port, secs = int(sys.argv[1]), float(sys.argv[2])
stop = threading.Event()
subacks = [0]
def churn():
    c = Client(port, "churn", clean=False, session_expiry=3600)
    i = 0
    while not stop.is_set():
        c.subscribe(["churn/%d" % (i % 10)], user=[("nbhd", "X1")])
        subacks[0] += 1
        i += 1
        time.sleep(0.05)
    c.disconnect()
th = threading.Thread(target=churn, daemon=True)
th.start()
p = socket.create_connection(("127.0.0.1", port), timeout=30)
p.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
p.sendall(packet(0x10, s("MQTT") + bytes([5, 2]) + struct.pack(">H", 60) + props([]) + s("probe")))
if p.recv(100)[:1] != b"\x20": sys.exit("probe: no CONNACK")
lat = []
t_end = time.time() + secs
while time.time() < t_end:
    t0 = time.perf_counter()
    p.sendall(b"\xc0\x00")
    if p.recv(10) != b"\xd0\x00": sys.exit("probe: no PINGRESP")
    lat.append((time.perf_counter() - t0) * 1e3)
    time.sleep(0.005)
stop.set()
th.join(30)
p.sendall(b"\xe0\x00")
lat.sort()
n = len(lat)
print("pings %d p50 %.2f p99 %.2f max %.2f" % (n, lat[n // 2], lat[int(n * .99)], lat[-1]))
print("churn %d" % subacks[0])
