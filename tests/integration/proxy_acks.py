#!/usr/bin/env python3
"""Does wirematch-proxy acknowledge (TCP) what it reads when it reads it?

One process plays the broker (a listening socket the proxy's --upstream
points at) and the client, in lock step, so every check has a known cause
before it: after the client has received a packet the broker sent, the
proxy has read that packet from its upstream socket; if the proxy
acknowledged it at that read, the broker's socket has nothing unacknowledged
left (SIOCOUTQ, bytes written and not yet acknowledged, is 0); the same
towards the client after the broker has received what the client sent. A
socket on which Linux delays its ACKs holds them ~40 ms (the delayed-ACK
timer), far longer than one step here takes.

Why it matters: mosquitto writes with Nagle (no TCP_NODELAY), so a small
delivery it writes while its previous one is unacknowledged waits for that
ACK. Linux delays ACKs ("pingpong", interactive mode) on a socket that sent
data soon after receiving some, expecting a reply to carry them; a relay's
sends are no replies. Until 2026-12-01 a subscriber's upstream socket went
into that mode when the proxy sent the SUBSCRIBE right after reading the
CONNACK (what the proxy does for a pipelining client since packets are held
behind the CONNACK, and what any client that waits for its CONNACK makes it
do), and mosquitto then sent its deliveries about once per 1.8 ms in bursts
(`make bench-proxy` spatial: every message ~1 ms late).

usage: proxy_acks.py BROKER_PORT PROXY_PORT MODE
  MODE pipelined      the client writes CONNECT and SUBSCRIBE at once
       connack-first  the client sends SUBSCRIBE once it has its CONNACK
Prints "ok: N checks" and exits 0, or the first check that failed and exits 1.
"""
import fcntl, os, socket, struct, sys, termios
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import packet, s, props, parse_props, read_vbi

bport, pport, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ROUNDS = 5

def unacked(sock):
    """Bytes written to sock that its peer has not acknowledged (SIOCOUTQ)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]

class Stream:
    def __init__(self, sock): self.sock, self.buf = sock, b""
    def packet(self):
        while True:
            if len(self.buf) >= 2:
                try: n, off = read_vbi(self.buf, 1)
                except IndexError: n = None
                if n is not None and len(self.buf) >= off + n:
                    p, self.buf = self.buf[:off + n], self.buf[off + n:]
                    return p[0] >> 4, p[off:]
            d = self.sock.recv(1 << 16)
            if not d: raise SystemExit("%s: connection closed" % mode)
            self.buf += d

checks = 0
def check(sock, what):
    global checks
    n = unacked(sock)
    if n:
        print("%s: %s: %d bytes still unacknowledged by the proxy after it relayed them" % (mode, what, n))
        sys.exit(1)
    checks += 1

ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", bport)); ls.listen(1); ls.settimeout(10)

CONNECT = packet(0x10, s("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 60) + props([]) + s("acks-" + mode))
SUBSCRIBE = packet(0x82, struct.pack(">H", 1) + props([]) + s("acks/#") + bytes([1]))
cs = socket.create_connection(("127.0.0.1", pport), timeout=10)
cs.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
client = Stream(cs)
cs.sendall(CONNECT + SUBSCRIBE if mode == "pipelined" else CONNECT)
bs, _ = ls.accept(); bs.settimeout(10)
# Nagle off here, so each check sees only the proxy's ACKs (mosquitto's Nagle
# is what turns late ACKs into latency, not what this test looks at).
bs.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
broker = Stream(bs)

t, _ = broker.packet(); assert t == 1, "broker: want CONNECT, got type %d" % t
bs.sendall(packet(0x20, bytes([0, 0]) + props([])))
t, body = client.packet(); assert t == 2 and body[1] == 0, "client: want CONNACK 0, got type %d" % t
if mode == "connack-first": cs.sendall(SUBSCRIBE)
t, body = broker.packet(); assert t == 8, "broker: want SUBSCRIBE, got type %d" % t
pid = body[:2]
pr, off = parse_props(body, 2)
sids = [(k, v) for k, v in pr if k == 0x0B]   # the proxy's, when it filters: echoed on deliveries
bs.sendall(packet(0x90, pid + props([]) + bytes([1])))
t, _ = client.packet(); assert t == 9, "client: want SUBACK, got type %d" % t
check(bs, "broker -> client SUBACK")

for i in range(1, ROUNDS + 1):
    # broker -> client: a QoS 1 delivery; the client's PUBACK then goes back through
    # the proxy, which thereby sends on the upstream socket right after reading from it.
    bs.sendall(packet(0x32, s("acks/x") + struct.pack(">H", i) + props(sids) + b"m%d" % i))
    t, _ = client.packet(); assert t == 3, "client: want PUBLISH, got type %d" % t
    check(bs, "broker -> client PUBLISH %d" % i)
    cs.sendall(packet(0x40, struct.pack(">H", i)))
    t, _ = broker.packet(); assert t == 4, "broker: want PUBACK, got type %d" % t
    check(cs, "client -> broker PUBACK %d" % i)
    # client -> broker: a QoS 0 publication.
    cs.sendall(packet(0x30, s("acks/up") + props([]) + b"u%d" % i))
    t, _ = broker.packet(); assert t == 3, "broker: want PUBLISH, got type %d" % t
    check(cs, "client -> broker PUBLISH %d" % i)

cs.sendall(packet(0xE0, bytes([0]) + props([])))
t, _ = broker.packet(); assert t == 14, "broker: want DISCONNECT, got type %d" % t
cs.close(); bs.close(); ls.close()
print("ok: %d checks" % checks)
