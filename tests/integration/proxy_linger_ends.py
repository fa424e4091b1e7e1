#!/usr/bin/env python3
"""Scenarios of proxy_linger_ends.sh: lingering close for the closes that
come without a final flush of the proxy's own word (raw clients through
wirematch-proxy in front of a real mosquitto). Prints one line per check,
exits 1 at the first failure.

usage: proxy_linger_ends.py ends PROXY_PORT BROKER_PORT N
         N subscribers of le/# through the proxy (--conn-buffer 4096) stop
         reading while a publisher straight at the broker sends a stream of
         QoS 0 deliveries: the proxy stops reading the broker's side, where
         deliveries wait unread. Each then leaves, half of them with a FIN
         (shutdown, then reading until the proxy closes), half with a RST
         (SO_LINGER 0). The shell counts the RSTs the proxy sent the broker
         meanwhile (tcpdump): none may come (the proxy half-closes the
         broker's side and reads it until the broker closes), where closing
         it with deliveries unread sends one.
       proxy_linger_ends.py park PROXY_PORT
         (proxy with WM_PROXY_TEST_PARK_MAX=1 --conn-buffer 4096) a client
         writes 4 MB of QoS 0 PUBLISHes at once: the proxy parks more than
         it may and ends the connection; the client must read DISCONNECT
         0x97 Quota exceeded, then EOF (no reset), while still writing.
"""
import os, socket, struct, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, s, until_close
from proxy_spatial import fail, ok

mode, port = sys.argv[1], int(sys.argv[2])
def connect(port, cid):
    """A raw MQTT v5 connection past its CONNACK (read whole)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(packet(0x10, s("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 60) + b"\x00" + s(cid)))
    b = c.recv(2)
    while len(b) < 2 + b[1]: b += c.recv(2 + b[1] - len(b))   # (a CONNACK's length fits one byte)
    if b[0] != 0x20 or b[3] != 0: fail("%s: CONNACK %r" % (cid, b))
    return c

if mode == "ends":
    bport, n = int(sys.argv[3]), int(sys.argv[4])
    stop = threading.Event()
    def flood():
        p = Client(bport, "le-pub")
        body = b"y" * 1000   # ~500 KB/s: what waits unread stays within the lingers' bounds
        while not stop.is_set():
            for _ in range(10): p.publish("le/x", body)
            time.sleep(0.02)
        p.disconnect()
    th = threading.Thread(target=flood, daemon=True)
    th.start()
    for i in range(n):
        # a subscriber that stops reading: its side towards the client fills, the proxy stops reading
        # the broker (--conn-buffer), and the broker's deliveries wait unread in the proxy's socket
        c = connect(port, "le-sub-%d" % i)
        c.sendall(packet(0x82, struct.pack(">H", 1) + b"\x00" + s("le/#") + b"\x00"))
        time.sleep(1.5)
        if i % 2 == 0:
            c.shutdown(socket.SHUT_WR)   # FIN; then read what the proxy still sends, to its EOF
            got, err = until_close(c)
            if err is not None: fail("sub %d: %r after %d bytes (want EOF)" % (i, err, len(got)))
            c.close()
        else:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()   # RST
        time.sleep(0.3)
    stop.set()
    th.join(10)
    ok("%d subscribers stopped reading while deliveries flowed and left (%d with a FIN, %d with a RST)"
       % (n, (n + 1) // 2, n // 2))
elif mode == "park":
    c = connect(port, "le-flood")
    pub = packet(0x30, s("lf/x") + b"\x00" + b"z" * 1000)
    burst = pub * (4000000 // len(pub))
    def write():
        try:
            c.sendall(burst)
        except OSError:
            pass
    th = threading.Thread(target=write, daemon=True)
    th.start()
    got, err = until_close(c)
    if err is not None: fail("flood: %r after %d bytes %r (want DISCONNECT 0x97, then EOF)" % (err, len(got), got[:16]))
    if got[:1] != b"\xe0" or len(got) < 3 or got[2] != 0x97:
        fail("flood: received %r before EOF (want DISCONNECT 0x97)" % got[:16])
    ok("flood: DISCONNECT 0x97 Quota exceeded, then EOF, while still writing")
    c.close()
else:
    fail("mode %r" % mode)
