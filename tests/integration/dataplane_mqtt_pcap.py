#!/usr/bin/env python3
"""Crafted MQTT v5 captures for the data-plane feature tests (hot reload,
shared subscriptions, IPv4 fragments). Frames are built here with the struct
module, independently of the C code under test; every connection is complete
(SYN ... FIN both ways), so a capture replayed in a loop (net_pcap
infinite_rx=1) reopens its connections on every pass.

usage: dataplane_mqtt_pcap.py SCENARIO OUT.pcap PORT [ARGS...]
  reload RES.json   a subscriber "sub" with traffic/# on X1 (subid 1) and
                    traffic/+ on X2 (subid 2); a publisher "pub" alternating a
                    peid of X1 only and a peid of X2 only (80 PUBLISHes), then
                    4,000 UDP frames (so a looped replay logs fewer lines).
                    Prints {"p1": PEID, "p2": PEID}.
  share             three members s1..s3 of $share/g/t/# (subids 1..3) and
                    one plain subscriber "plain" on t/#; publishers p1..p4
                    each send 6 PUBLISHes on t/x.
  frag              one subscriber "sub" on f/#, one publisher "pub" whose
                    PUBLISHes ride in IPv4 fragments: #1 in 3 fragments in
                    order, #2 in 3 fragments in reverse order, #3 in 2
                    fragments with a duplicate, then #4 whose first fragment
                    never comes (it must time out). Connections stay open.
                    Prints the expected counters (and each connection's
                    stream bytes and packets) as JSON.
  csum              one subscriber "S" on good/# (subid 1); a publisher
                    "pub" whose PUBLISH evil/x arrives first in a frame with
                    a wrong IPv4 header checksum (which every receiver
                    drops), then PUBLISH good/x, same length, at the same
                    sequence number (the true segment). Prints the index
                    (1-based frame number) of the bad frame.
  peids             one subscriber "S" on p/# (subid 1); a publisher "pub"
                    sends p/64 with 64 peid User Properties (the bound,
                    dataplane/peid_props.h) and p/65 with 65.
  plan PLAN.json    a scripted scenario: {"subs": [[CLIENT, SUBID, FILTER,
                    XPATH|null], ...], "events": [["pub", TOPIC, CONTENT_TYPE|null,
                    PAYLOAD_HEX], ["unsub", CLIENT, FILTER], ...]}: each
                    subscriber connects and subscribes (SUBACK granted),
                    then the events run in order (publications from one
                    publisher "pub"), then everyone disconnects.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from wire import csum, packet, s16, vbi, write_pcap  # noqa: E402

scenario, out_path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
frames = []
FIN, SYN, RST, PSH, ACK = 1, 2, 4, 8, 16


def connect(cid):
    return packet(0x10, s16("MQTT") + b"\x05\x02\x00\x3c" + vbi(0) + s16(cid))


CONNACK = packet(0x20, b"\x00\x00" + vbi(0))
DISCONNECT = packet(0xE0, b"")


def subscribe(pid, subid, filt, nbhd=None, xpath=None):
    props = b"\x0b" + vbi(subid)
    if nbhd is not None:
        props += b"\x26" + s16("nbhd") + s16(nbhd)
    if xpath is not None:
        props += b"\x26" + s16("xpath") + s16(xpath)
    return packet(0x82, struct.pack("!H", pid) + vbi(len(props)) + props + s16(filt) + b"\x00")


def suback(pid):
    return packet(0x90, struct.pack("!H", pid) + vbi(0) + b"\x00")


def unsubscribe(pid, filt):
    return packet(0xA2, struct.pack("!H", pid) + vbi(0) + s16(filt))


def publish(topic, peid=None, payload=b"x", content_type=None):
    props = b"" if peid is None else b"\x26" + s16("peid") + s16(peid)
    if content_type is not None:
        props += b"\x03" + s16(content_type)
    return packet(0x30, s16(topic) + vbi(len(props)) + props + payload)


ip_id = [1]


def ip4(src, dst, l4, frag=0x4000, ident=None):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ip_id[0] if ident is None else ident, frag, 64, 6, 0,
                    bytes(src), bytes(dst))
    if ident is None:
        ip_id[0] += 1
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4


def eth(payload):
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + payload


def tcp(sport, dport, seq, ack, flags, data=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0,
                       0) + data


class Conn:
    def __init__(self, n):
        self.c = [10, 1, n >> 8 & 255, n & 255]
        self.s = [10, 0, 0, 1]
        self.cp = 20000 + n
        self.cseq = 1000 * n
        self.sseq = 7000000 + 1000 * n

    def c2s(self, flags, data=b""):
        frames.append(eth(ip4(self.c, self.s, tcp(self.cp, port, self.cseq, self.sseq, flags, data))))
        self.cseq += len(data) + (1 if flags & (SYN | FIN) else 0)

    def c2s_fragments(self, data, cuts, order, dup=None):
        """One TCP segment carrying data, sent as IPv4 fragments: cuts are
        byte offsets into the IP payload (multiples of 8), order the
        fragment indices in sending order (an index may be missing)."""
        l4 = tcp(self.cp, port, self.cseq, self.sseq, ACK | PSH, data)
        ident = 0x4000 + ip_id[0]
        ip_id[0] += 1
        bounds = [0] + cuts + [len(l4)]
        pieces = []
        for i in range(len(bounds) - 1):
            a, b = bounds[i], bounds[i + 1]
            mf = 0x2000 if i < len(bounds) - 2 else 0
            pieces.append(eth(ip4(self.c, self.s, l4[a:b], frag=mf | (a // 8), ident=ident)))
        for i in order:
            frames.append(pieces[i])
        if dup is not None:
            frames.append(pieces[dup])
        self.cseq += len(data)

    def s2c(self, flags, data=b""):
        frames.append(eth(ip4(self.s, self.c, tcp(port, self.cp, self.sseq, self.cseq, flags, data))))
        self.sseq += len(data) + (1 if flags & (SYN | FIN) else 0)

    def open(self, cid):
        frames.append(eth(ip4(self.c, self.s, tcp(self.cp, port, self.cseq, 0, SYN))))
        self.cseq += 1
        self.s2c(SYN | ACK)
        self.c2s(ACK)
        self.c2s(ACK | PSH, connect(cid))
        self.s2c(ACK | PSH, CONNACK)

    def close(self):
        self.c2s(ACK | PSH | FIN, DISCONNECT)
        self.s2c(ACK | FIN)
        self.c2s(ACK)


def subscriber_and_publisher(name, filt):
    """Conn 1 (client id name) subscribes to filt (subid 1, granted); Conn 2 "pub" connects."""
    sub, pub = Conn(1), Conn(2)
    sub.open(name)
    sub.c2s(ACK | PSH, subscribe(1, 1, filt))
    sub.s2c(ACK | PSH, suback(1))
    pub.open("pub")
    return sub, pub


result = {}
if scenario == "reload":
    res = json.load(open(sys.argv[4]))
    x1, x2 = set(res["X1"]["result"]), set(res["X2"]["result"])
    p1, p2 = sorted(x1 - x2)[0], sorted(x2 - x1)[0]
    sub, pub = Conn(1), Conn(2)
    sub.open("sub")
    sub.c2s(ACK | PSH, subscribe(1, 1, "traffic/#", "X1"))
    sub.s2c(ACK | PSH, suback(1))
    sub.c2s(ACK | PSH, subscribe(2, 2, "traffic/+", "X2"))
    sub.s2c(ACK | PSH, suback(2))
    pub.open("pub")
    for i in range(80):
        pub.c2s(ACK | PSH, publish("traffic/a", p1 if i % 2 == 0 else p2))
        pub.s2c(ACK)
    pub.close()
    sub.close()
    udp = struct.pack("!HHHH", 5000, 5001, 8 + 18, 0) + bytes(18)
    for i in range(4000):
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0, bytes([10, 9, 0, 1]),
                        bytes([10, 9, 0, 2]))
        frames.append(eth(h[:10] + struct.pack("!H", csum(h)) + h[12:] + udp))
    result = {"p1": p1, "p2": p2}
elif scenario == "share":
    members = [Conn(1), Conn(2), Conn(3)]
    for i, m in enumerate(members):
        m.open("s%d" % (i + 1))
        m.c2s(ACK | PSH, subscribe(1, i + 1, "$share/g/t/#"))
        m.s2c(ACK | PSH, suback(1))
    plain = Conn(9)
    plain.open("plain")
    plain.c2s(ACK | PSH, subscribe(1, 9, "t/#"))
    plain.s2c(ACK | PSH, suback(1))
    pubs = [Conn(10 + k) for k in range(4)]
    for k, p in enumerate(pubs):
        p.open("p%d" % (k + 1))
    for r in range(6):
        for p in pubs:
            p.c2s(ACK | PSH, publish("t/x"))
            p.s2c(ACK)
    for c in pubs + members + [plain]:
        c.close()
elif scenario == "frag":
    sub, pub = subscriber_and_publisher("sub", "f/#")
    body = bytes(range(32, 127)) * 4
    pub.c2s_fragments(publish("f/1", payload=body), [96, 200], [0, 1, 2])
    pub.s2c(ACK)
    pub.c2s_fragments(publish("f/2", payload=body), [96, 200], [2, 1, 0])
    pub.s2c(ACK)
    pub.c2s_fragments(publish("f/3", payload=body), [160], [1, 0], dup=1)
    pub.s2c(ACK)
    # #4: its first fragment is lost; the rest must be freed by the timeout
    # and the stream then has a gap the server's ACK shows (direction lost).
    pub.c2s_fragments(publish("f/4", payload=body), [96, 200], [1, 2])
    pubs = [publish("f/%d" % k, payload=body) for k in (1, 2, 3)]
    result = {"fragments": 3 + 3 + 3 + 2, "reassembled": 3, "publish_matched": 3,
              # stream bytes each connection delivers (#4 never completes)
              "flows": {"pub": {"client_port": 20002, "c2s_bytes": len(connect("pub")) + sum(map(len, pubs)),
                                "s2c_bytes": len(CONNACK), "c2s_packets": 3 + 3, "s2c_packets": 2 + 3},
                        "sub": {"client_port": 20001, "c2s_bytes": len(connect("sub")) + len(subscribe(1, 1, "f/#")),
                                "s2c_bytes": len(CONNACK) + len(suback(1)), "c2s_packets": 4, "s2c_packets": 3}}}
elif scenario == "csum":
    sub, pub = subscriber_and_publisher("S", "good/#")
    bad = bytearray(eth(ip4(pub.c, pub.s, tcp(pub.cp, port, pub.cseq, pub.sseq, ACK | PSH, publish("evil/x")))))
    bad[14 + 10] ^= 0xFF  # the IPv4 header checksum's first byte
    frames.append(bytes(bad))
    result = {"bad_frame": len(frames)}
    pub.c2s(ACK | PSH, publish("good/x"))
    pub.s2c(ACK)
    pub.close()
    sub.close()
elif scenario == "peids":
    def publish_peids(topic, n):
        props = b"".join(b"\x26" + s16("peid") + s16("x%d" % i) for i in range(n))
        return packet(0x30, s16(topic) + vbi(len(props)) + props + b"x")
    sub, pub = subscriber_and_publisher("S", "p/#")
    for n in (64, 65):
        pub.c2s(ACK | PSH, publish_peids("p/%d" % n, n))
        pub.s2c(ACK)
    pub.close()
    sub.close()
elif scenario == "plan":
    plan = json.load(open(sys.argv[4]))
    subs = {}
    for client, subid, filt, xpath in plan["subs"]:
        if client not in subs:
            subs[client] = Conn(1 + len(subs))
            subs[client].open(client)
        c = subs[client]
        c.c2s(ACK | PSH, subscribe(subid, subid, filt, xpath=xpath))
        c.s2c(ACK | PSH, suback(subid))
    pub = Conn(200)
    pub.open("pub")
    for ev in plan["events"]:
        if ev[0] == "pub":
            pub.c2s(ACK | PSH, publish(ev[1], payload=bytes.fromhex(ev[3]), content_type=ev[2]))
            pub.s2c(ACK)
        else:
            subs[ev[1]].c2s(ACK | PSH, unsubscribe(77, ev[2]))
    for c in [pub] + list(subs.values()):
        c.close()
else:
    sys.exit("unknown scenario " + scenario)

write_pcap(out_path, frames)
print(json.dumps(result))
