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
                    4,000 UDP frames (so a looped replay logs fewer lines);
                    "sub" disconnects last.
                    Prints {"p1": PEID, "p2": PEID}.
  resub RES.json    a subscriber "S" on p/# with nbhd X1 (subid 1, granted)
                    subscribes p/# again with nbhd NOPE (subid 2, which no
                    resolution defines; the broker grants it); a publisher
                    "pub" sends p/in (a peid of X1) and p/out (one outside).
                    Prints {"in": PEID, "out": PEID}.
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
                    control/peid_props.h), p/65 with 65, p/empty with one
                    empty peid and p/64-and-empty with 64 and an empty one
                    (an empty value is no peid).
  plan PLAN.json    a scripted scenario: {"subs": [[CLIENT, SUBID, FILTER,
                    XPATH|null], ...], "events": [["pub", TOPIC, CONTENT_TYPE|null,
                    PAYLOAD_HEX], ["unsub", CLIENT, FILTER] (UNSUBACK 0x00),
                    ["will", CLIENT, TOPIC, CONTENT_TYPE, PAYLOAD_HEX] (a
                    connection with that Will, lost with RST), ...]}: each
                    subscriber connects and subscribes (SUBACK granted),
                    then the events run in order (publications from one
                    publisher "pub"), then everyone disconnects.
  session           the broker's side of sessions (README "MQTT sessions"):
                    session ends (DISCONNECT, RST, Clean Start takeover,
                    Session Expiry kept, resumed or lost), SUBACK grants and
                    refusals, a $share member that left, CONNACK limits and
                    the broker's DISCONNECT, QoS 2 matched at its PUBREL (a
                    resend on a resumed session, one with DUP 0, a PUBREC
                    with an error code releasing its id, a subscription
                    made before the PUBREL, a session ended before it), UNSUBSCRIBEs the UNSUBACK takes (0x00, 0x11),
                    refuses or never answers, Wills published (lost
                    connection, DISCONNECT 0x04, Will Delay with Session
                    Expiry 0, a new session, a takeover), discarded,
                    cancelled by a resumed session or still waiting.
                    Prints the match log's expected lines
                    [[TOPIC, [KEYS]] or [TOPIC, [KEYS], "will"], ...] as
                    JSON, written here by hand.
  deliver           subscribers the broker does not send a matched PUBLISH:
                    one whose CONNECT Maximum Packet Size it exceeds, a
                    detached session (QoS 0 is not queued for it). Prints
                    the expected match log lines.
  retained          retained messages the broker sends after a SUBACK (and
                    RETAIN 1 forwarding elsewhere). Prints the expected
                    match log lines.
  evict N           a quiet subscriber "S" (Keep Alive 0) on ev/# (subid 1),
                    then N clients connect and disconnect, then "pub"
                    publishes ev/x (S's connection stays open). Prints the
                    expected match log lines.
  churn N K         N clients each subscribe K filters and disconnect, then
                    "live" subscribes z/# and stays; "pub" publishes z/1.
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


def subscribe(pid, subid, filt, nbhd=None, xpath=None, qos=0):
    props = b"\x0b" + vbi(subid)
    if nbhd is not None:
        props += b"\x26" + s16("nbhd") + s16(nbhd)
    if xpath is not None:
        props += b"\x26" + s16("xpath") + s16(xpath)
    return packet(0x82, struct.pack("!H", pid) + vbi(len(props)) + props + s16(filt) + bytes([qos]))


def suback(pid, codes=b"\x00"):
    return packet(0x90, struct.pack("!H", pid) + vbi(0) + codes)


def connect_props(cid, clean=True, expiry=None):
    props = b"" if expiry is None else b"\x11" + struct.pack("!I", expiry)
    return packet(0x10, s16("MQTT") + b"\x05" + (b"\x02" if clean else b"\x00") + b"\x00\x3c" + vbi(len(props))
                  + props + s16(cid))


def connack_props(props=b"", present=False):
    return packet(0x20, (b"\x01" if present else b"\x00") + b"\x00" + vbi(len(props)) + props)


def unsubscribe(pid, filt):
    return packet(0xA2, struct.pack("!H", pid) + vbi(0) + s16(filt))


def unsubscribe_n(pid, filts):
    return packet(0xA2, struct.pack("!H", pid) + vbi(0) + b"".join(s16(f) for f in filts))


def unsuback(pid, codes):
    return packet(0xB0, struct.pack("!H", pid) + vbi(0) + codes)


def connect_will(cid, topic, clean=True, expiry=None, delay=None, peid=None, content_type=None, payload=b"gone"):
    """CONNECT with a Will (QoS 0) on topic; Will Delay Interval delay, a
    `peid` User Property and a Content Type when given."""
    props = b"" if expiry is None else b"\x11" + struct.pack("!I", expiry)
    wprops = b"" if delay is None else b"\x18" + struct.pack("!I", delay)
    if peid is not None:
        wprops += b"\x26" + s16("peid") + s16(peid)
    if content_type is not None:
        wprops += b"\x03" + s16(content_type)
    flags = (0x02 if clean else 0) | 0x04
    return packet(0x10, s16("MQTT") + b"\x05" + bytes([flags]) + b"\x00\x3c" + vbi(len(props)) + props + s16(cid)
                  + vbi(len(wprops)) + wprops + s16(topic) + struct.pack("!H", len(payload)) + payload)


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

    def open(self, cid, conn=None, ack=CONNACK):
        frames.append(eth(ip4(self.c, self.s, tcp(self.cp, port, self.cseq, 0, SYN))))
        self.cseq += 1
        self.s2c(SYN | ACK)
        self.c2s(ACK)
        self.c2s(ACK | PSH, conn or connect(cid))
        self.s2c(ACK | PSH, ack)

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


def granted_subscriber(name, *subs):
    """Conn 1 (client id name) subscribes to each (filter, nbhd) of subs in
    turn (packet id and subid 1, 2, ...), each granted; Conn 2 "pub" connects."""
    sub, pub = Conn(1), Conn(2)
    sub.open(name)
    for i, (filt, nbhd) in enumerate(subs, 1):
        sub.c2s(ACK | PSH, subscribe(i, i, filt, nbhd))
        sub.s2c(ACK | PSH, suback(i))
    pub.open("pub")
    return sub, pub


result = {}
if scenario == "reload":
    res = json.load(open(sys.argv[4]))
    x1, x2 = set(res["X1"]["result"]), set(res["X2"]["result"])
    p1, p2 = sorted(x1 - x2)[0], sorted(x2 - x1)[0]
    sub, pub = granted_subscriber("sub", ("traffic/#", "X1"), ("traffic/+", "X2"))
    for i in range(80):
        pub.c2s(ACK | PSH, publish("traffic/a", p1 if i % 2 == 0 else p2))
        pub.s2c(ACK)
    pub.close()
    udp = struct.pack("!HHHH", 5000, 5001, 8 + 18, 0) + bytes(18)
    for i in range(4000):
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0, bytes([10, 9, 0, 1]),
                        bytes([10, 9, 0, 2]))
        frames.append(eth(h[:10] + struct.pack("!H", csum(h)) + h[12:] + udp))
    # The subscriber's session (and its learned subscriptions) lasts the
    # whole pass: a reload at any moment finds them.
    sub.close()
    result = {"p1": p1, "p2": p2}
elif scenario == "resub":
    res = json.load(open(sys.argv[4]))
    x1 = set(res["X1"]["result"])
    others = set(p for v in res.values() for p in v["result"]) - x1
    pin, pout = sorted(x1)[0], sorted(others)[0]
    sub, pub = granted_subscriber("S", ("p/#", "X1"), ("p/#", "NOPE"))
    for topic, peid in (("p/in", pin), ("p/out", pout)):
        pub.c2s(ACK | PSH, publish(topic, peid))
        pub.s2c(ACK)
    pub.close()
    sub.close()
    result = {"in": pin, "out": pout}
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
    def publish_peids(topic, values):
        props = b"".join(b"\x26" + s16("peid") + s16(v) for v in values)
        return packet(0x30, s16(topic) + vbi(len(props)) + props + b"x")
    sub, pub = subscriber_and_publisher("S", "p/#")
    xs = ["x%d" % i for i in range(65)]
    for topic, values in (("p/64", xs[:64]), ("p/65", xs), ("p/empty", [""]), ("p/64-and-empty", xs[:64] + [""])):
        pub.c2s(ACK | PSH, publish_peids(topic, values))
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
    nwill = 0
    for ev in plan["events"]:
        if ev[0] == "pub":
            pub.c2s(ACK | PSH, publish(ev[1], payload=bytes.fromhex(ev[3]), content_type=ev[2]))
            pub.s2c(ACK)
        elif ev[0] == "will":
            nwill += 1
            w = Conn(300 + nwill)
            w.open(ev[1], conn=connect_will(ev[1], ev[2], content_type=ev[3], payload=bytes.fromhex(ev[4])))
            w.c2s(ACK | RST)  # lost: the broker publishes the Will
        else:
            subs[ev[1]].c2s(ACK | PSH, unsubscribe(77, ev[2]))
            subs[ev[1]].s2c(ACK | PSH, unsuback(77, b"\x00"))
    for c in [pub] + list(subs.values()):
        c.close()
elif scenario == "session":
    n = [0]

    def conn(cid, **kw):
        n[0] += 1
        c = Conn(n[0])
        c.open(cid, **kw)
        return c

    def sub(c, pid, subid, filt, codes=b"\x00"):
        c.c2s(ACK | PSH, subscribe(pid, subid, filt, qos=codes[0] if codes and codes[0] < 3 else 0))
        if codes is not None:
            c.s2c(ACK | PSH, suback(pid, codes))

    a = conn("A"); sub(a, 1, 1, "a/#"); a.close()                 # DISCONNECT, expiry 0: gone
    b = conn("B"); sub(b, 1, 1, "b/#"); sub(b, 2, 2, "b/#")       # replaced: B#2, stays
    e1 = conn("E"); sub(e1, 1, 1, "e/#")
    e2 = conn("E")                                                # Clean Start 1: E's session is new
    f = conn("F"); sub(f, 1, 1, "f/#"); f.c2s(ACK | RST)          # lost, expiry 0: gone
    # G, H, K: detached sessions keep their subscriptions (QoS 1), but no QoS 0 message is queued for them
    g = conn("G", conn=connect_props("G", expiry=600)); sub(g, 1, 1, "g/#", b"\x01"); g.close()  # kept 600 s
    h = conn("H", conn=connect_props("H", expiry=600)); sub(h, 1, 1, "h/#", b"\x01"); h.c2s(ACK | RST)  # kept 600 s
    k = conn("K", conn=connect_props("K", expiry=2)); sub(k, 1, 1, "k/#", b"\x01")
    k.c2s(ACK | PSH | FIN, packet(0xE0, b"\x00" + vbi(5) + b"\x11\x00\x00\x02\x58"))  # DISCONNECT: expiry 600
    k.s2c(ACK | FIN); k.c2s(ACK)
    s_ = conn("S")
    s_.c2s(ACK | PSH, packet(0x82, struct.pack("!H", 1) + vbi(2) + b"\x0b\x01" + s16("r/#") + b"\x00" + s16("q/#")
                            + b"\x00"))
    s_.s2c(ACK | PSH, suback(1, b"\x87\x00"))                      # r/# not authorized, q/# granted
    sub(s_, 2, 2, "w/#", codes=None)                              # no SUBACK (yet): not installed
    m1 = conn("M1"); sub(m1, 1, 1, "$share/g/s/#")
    m2 = conn("M2"); sub(m2, 1, 1, "$share/g/s/#")
    m1.close()                                                    # left the group
    pub = conn("pub")
    expect = []

    def publish_and_expect(c, pkt, topic, keys):
        c.c2s(ACK | PSH, pkt)
        c.s2c(ACK)
        if topic is not None:
            expect.append([topic, keys])

    for t, keys in [("a/x", []), ("b/x", ["B#2"]), ("e/x", []), ("f/x", []), ("g/x", []), ("h/x", []),
                    ("k/x", []), ("r/x", []), ("q/x", ["S#1"]), ("w/x", [])]:
        publish_and_expect(pub, publish(t), t, keys)
    for i, (t, keys) in enumerate([("g/y", ["G#1"]), ("h/y", ["H#1"]), ("k/y", ["K#1"])]):  # QoS 1: queued
        publish_and_expect(pub, packet(0x32, s16(t) + struct.pack("!H", 40 + i) + vbi(0) + b"x"), t, keys)
    for i in range(4):
        publish_and_expect(pub, publish("s/%d" % i), "s/%d" % i, ["M2#1"])
    h2 = conn("H", conn=connect_props("H", clean=False, expiry=600), ack=connack_props(present=True))  # resumed
    publish_and_expect(pub, publish("h/z"), "h/z", ["H#1"])
    k2 = conn("K", conn=connect_props("K", clean=False, expiry=600), ack=connack_props())  # broker lost it
    publish_and_expect(pub, publish("k/z"), "k/z", [])
    # The broker's CONNACK limits: Topic Alias Maximum 2, Maximum Packet Size 64, Maximum QoS 1, Retain Available 0.
    lim = b"\x22\x00\x02" + b"\x27\x00\x00\x00\x40" + b"\x24\x01" + b"\x25\x00"
    bad = [(packet(0x30, s16("b/alias") + vbi(3) + b"\x23\x00\x03" + b"x"), b"\x94"),
           (publish("b/big", payload=b"y" * 80), b"\x95"),
           (packet(0x34, s16("b/qos2") + b"\x00\x05" + vbi(0) + b"x"), b"\x9b"),
           (packet(0x31, s16("b/retain") + vbi(0) + b"x"), b"\x9a")]
    for i, (pkt, reason) in enumerate(bad):
        c = conn("L%d" % i, ack=connack_props(lim))
        publish_and_expect(c, packet(0x30, s16("b/ok") + vbi(3) + b"\x23\x00\x02" + b"x"), "b/ok", ["B#2"])
        publish_and_expect(c, pkt, None, None)
        c.s2c(ACK | PSH, packet(0xE0, reason + b"\x00"))           # the broker refuses it
        publish_and_expect(c, publish("b/after"), None, None)      # in flight: never delivered
        c.s2c(ACK | RST)
    # QoS 2 is delivered at the PUBREL (mosquitto, §4.3.3 Method A): a PUBLISH sent again with DUP on a resumed
    # session, or with DUP 0, before the PUBREL is one publication, matched at its PUBREL.
    q = conn("Q", conn=connect_props("Q", expiry=3600))
    publish_and_expect(q, packet(0x34, s16("b/q2") + b"\x00\x05" + vbi(0) + b"once"), None, None)
    q.c2s(ACK | RST)
    q2 = conn("Q", conn=connect_props("Q", clean=False, expiry=3600), ack=connack_props(present=True))
    publish_and_expect(q2, packet(0x3C, s16("b/q2") + b"\x00\x05" + vbi(0) + b"once"), None, None)
    q2.s2c(ACK | PSH, packet(0x50, b"\x00\x05"))                  # PUBREC
    publish_and_expect(q2, packet(0x62, b"\x00\x05"), "b/q2", ["B#2"])  # PUBREL: delivered; id 5 is free again
    publish_and_expect(q2, packet(0x34, s16("b/q2") + b"\x00\x05" + vbi(0) + b"twice"), None, None)
    publish_and_expect(q2, packet(0x34, s16("b/q2") + b"\x00\x05" + vbi(0) + b"twice"), None, None)  # DUP 0 again
    q2.s2c(ACK | PSH, packet(0x50, b"\x00\x05"))
    publish_and_expect(q2, packet(0x62, b"\x00\x05"), "b/q2", ["B#2"])
    # A PUBREC with an error code ends the QoS 2 exchange (§4.3.3): never delivered, the id is free, DUP 1 is a new
    # message; after a successful PUBREC (0x10 No matching subscribers) it is still the same message.
    publish_and_expect(q2, packet(0x34, s16("b/r1") + b"\x00\x07" + vbi(0) + b"x"), None, None)
    q2.s2c(ACK | PSH, packet(0x50, b"\x00\x07\x97"))             # PUBREC 0x97 Quota exceeded
    publish_and_expect(q2, packet(0x3C, s16("b/r2") + b"\x00\x07" + vbi(0) + b"x"), None, None)
    q2.s2c(ACK | PSH, packet(0x50, b"\x00\x07"))
    publish_and_expect(q2, packet(0x62, b"\x00\x07"), "b/r2", ["B#2"])
    publish_and_expect(q2, packet(0x34, s16("b/r3") + b"\x00\x08" + vbi(0) + b"x"), None, None)
    q2.s2c(ACK | PSH, packet(0x50, b"\x00\x08\x10"))             # PUBREC 0x10: success, PUBREL to come
    publish_and_expect(q2, packet(0x3C, s16("b/r3") + b"\x00\x08" + vbi(0) + b"x"), None, None)
    publish_and_expect(q2, packet(0x62, b"\x00\x08"), "b/r3", ["B#2"])
    # Matched at the PUBREL: a subscription the broker granted between PUBLISH and PUBREL receives it.
    publish_and_expect(q2, packet(0x34, s16("nq/x") + b"\x00\x0c" + vbi(0) + b"x"), None, None)
    nq = conn("NQ"); sub(nq, 1, 1, "nq/#")
    q2.s2c(ACK | PSH, packet(0x50, b"\x00\x0c"))
    publish_and_expect(q2, packet(0x62, b"\x00\x0c"), "nq/x", ["NQ#1"])
    # ... and one whose PUBREL never comes before its session ends (Session Expiry 0 on DISCONNECT) reaches nobody.
    publish_and_expect(q2, packet(0x34, s16("b/never") + b"\x00\x0d" + vbi(0) + b"x"), None, None)
    # UNSUBSCRIBE takes effect at its UNSUBACK: 0x00 and 0x11 remove, 0x87 keeps, none never comes.
    u = conn("U")
    for i in range(1, 5):
        sub(u, i, i, "u%d/#" % i)
    u.c2s(ACK | PSH, unsubscribe_n(10, ["u1/#", "u2/#", "u3/#"]))
    publish_and_expect(pub, publish("u1/x"), "u1/x", ["U#1"])    # not yet: no UNSUBACK
    u.s2c(ACK | PSH, unsuback(10, b"\x00\x11\x87"))
    u.c2s(ACK | PSH, unsubscribe_n(11, ["u4/#"]))                 # never answered
    for t, keys in [("u1/x", []), ("u2/x", []), ("u3/x", ["U#3"]), ("u4/x", ["U#4"])]:
        publish_and_expect(pub, publish(t), t, keys)
    # Wills: WS and WG subscribe will/#; WG leaves before any Will is published.
    ws = conn("WS"); sub(ws, 1, 1, "will/#")
    wg = conn("WG"); sub(wg, 1, 1, "will/#"); wg.close()

    def will(c, topic, keys):
        expect.append([topic, keys, "will"])

    w1 = conn("W1", conn=connect_will("W1", "will/1", peid="p1")); w1.c2s(ACK | RST)    # lost: published
    will(w1, "will/1", ["WS#1"])
    w2 = conn("W2", conn=connect_will("W2", "will/2")); w2.close()                      # DISCONNECT 0x00: discarded
    w3 = conn("W3", conn=connect_will("W3", "will/3"))
    w3.c2s(ACK | PSH | FIN, packet(0xE0, b"\x04\x00")); w3.s2c(ACK | FIN); w3.c2s(ACK)   # 0x04: published
    will(w3, "will/3", ["WS#1"])
    w4 = conn("W4", conn=connect_will("W4", "will/4", delay=600))                      # expiry 0: the session ends
    w4.c2s(ACK | FIN); w4.s2c(ACK | FIN); w4.c2s(ACK)                                  # FIN, no DISCONNECT
    will(w4, "will/4", ["WS#1"])
    w5 = conn("W5", conn=connect_will("W5", "will/5", expiry=600, delay=600)); w5.c2s(ACK | RST)  # waits
    w5b = conn("W5", conn=connect_props("W5", clean=False, expiry=600), ack=connack_props(present=True))  # cancelled
    w6 = conn("W6", conn=connect_will("W6", "will/6", expiry=600, delay=600)); w6.c2s(ACK | RST)  # waits
    w6b = conn("W6", conn=connect_props("W6", expiry=600))        # Clean Start: the old session ended, Will now
    will(w6, "will/6", ["WS#1"])
    w7 = conn("W7", conn=connect_will("W7", "will/7", expiry=600)); sub(w7, 1, 7, "will/#")
    w7.c2s(ACK | RST)                # detached session: its own subscription stays, but queues no QoS 0 Will
    will(w7, "will/7", ["WS#1"])
    w8 = conn("W8", conn=connect_will("W8", "will/8")); sub(w8, 1, 8, "will/#")
    w8.c2s(ACK | RST)                                             # expiry 0: its session ended first
    will(w8, "will/8", ["WS#1"])                                  # no W8#8 (nor W7#7: detached)
    w9 = conn("W9", conn=connect_will("W9", "will/9", expiry=600, delay=600)); w9.c2s(ACK | RST)  # still waiting
    t1 = conn("T", conn=connect_will("T", "will/t", expiry=600))
    t2 = conn("T", conn=connect_props("T", clean=False, expiry=600), ack=connack_props(present=True))
    t1.s2c(ACK | PSH, packet(0xE0, b"\x8e\x00"))                  # Session taken over: delay 0, published
    t1.s2c(ACK | RST)
    will(t1, "will/t", ["WS#1"])
    publish_and_expect(pub, publish("will/x"), "will/x", ["WS#1"])
    publish_and_expect(pub, packet(0x32, s16("will/y") + b"\x00\x2b" + vbi(0) + b"x"), "will/y", ["WS#1"])  # W7: QoS 0
    # An empty `nbhd` names no neighborhood and an empty `xpath` is no query: refused, never a plain subscription.
    ne = conn("NE"); ne.c2s(ACK | PSH, subscribe(1, 1, "ne/#", nbhd="")); ne.s2c(ACK | PSH, suback(1))
    xe = conn("XE"); xe.c2s(ACK | PSH, subscribe(1, 2, "ne/#", xpath="")); xe.s2c(ACK | PSH, suback(1))
    publish_and_expect(pub, publish("ne/x"), "ne/x", [])
    # A refused CONNECT (CONNACK 0x87): the broker processes nothing the client sent after it (§3.1.4), neither
    # the PUBLISH pipelined behind it nor the one crossing the refusal; an accepted one's pipelined PUBLISH is
    # delivered, at the CONNACK.
    n[0] += 1; rf = Conn(n[0])
    rf.open("RF", conn=connect("RF") + publish("b/pipelined"), ack=packet(0x20, b"\x00\x87" + vbi(0)))
    rf.c2s(ACK | PSH, publish("b/after-refusal")); rf.c2s(ACK | RST)
    pp = conn("PP", conn=connect("PP") + publish("b/pipelined-ok"))
    expect.append(["b/pipelined-ok", ["B#2"]])
    # A second CONNECT is a Protocol Error (§3.1 [MQTT-3.1.0-2]): the broker closes the connection, reads nothing
    # after it, and the session stays the first one's (expiry 0: it ends with the connection).
    sc = conn("SC"); sub(sc, 1, 1, "sc/#")
    sc.c2s(ACK | PSH, connect("SD") + publish("sc/from-sd"))
    sc.s2c(ACK | FIN); sc.c2s(ACK | FIN); sc.s2c(ACK)
    publish_and_expect(pub, publish("sc/x"), "sc/x", [])
    # After its own DISCONNECT the client sends nothing the broker reads (§3.14.4).
    dc = conn("DC")
    dc.c2s(ACK | PSH, DISCONNECT + publish("b/after-disconnect")); dc.s2c(ACK | FIN); dc.c2s(ACK | FIN); dc.s2c(ACK)
    # Client ids over 128 bytes are not followed (counted), never cut and merged: LA's subscription is not
    # installed, its PUBLISH not matched, LB (same first 128 bytes) is another client.
    la = conn("L" * 130 + "A"); sub(la, 1, 1, "ll/#")
    la.c2s(ACK | PSH, publish("b/long"))
    lb = conn("L" * 130 + "B")
    publish_and_expect(pub, publish("ll/x"), "ll/x", [])
    # SUBSCRIBE + DISCONNECT in one segment (Session Expiry 0), the SUBACK written before the broker read the
    # DISCONNECT: the session ended with the connection, the subscription with it (§4.6 order).
    go = conn("GO"); go.c2s(ACK | PSH, subscribe(1, 7, "go/#") + DISCONNECT)
    go.s2c(ACK | PSH, suback(1)); go.s2c(ACK | FIN); go.c2s(ACK)
    publish_and_expect(pub, publish("go/x"), "go/x", [])
    # A QoS 1 PUBLISH the broker refuses (PUBACK 0x87): its line stays (written at the PUBLISH), the refusal is
    # counted (as the PUBREC 0x97 above).
    publish_and_expect(pub, packet(0x32, s16("b/refused") + b"\x00\x09" + vbi(0) + b"x"), "b/refused", ["B#2"])
    pub.s2c(ACK | PSH, packet(0x40, b"\x00\x09\x87" + vbi(0)))
    # Q's session ends (DISCONNECT with Session Expiry 0) while b/never awaits its PUBREL: discarded.
    q2.c2s(ACK | PSH | FIN, packet(0xE0, b"\x00" + vbi(5) + b"\x11\x00\x00\x00\x00"))
    q2.s2c(ACK | FIN); q2.c2s(ACK)
    for c in [pub, b, e1, e2, s_, m2, h2, k2, u, ws, w5b, w6b, t2, nq]:
        c.close()
    result = expect
elif scenario == "deliver":
    # What the broker does not send a matched subscriber (README "Deliveries"). MP's CONNECT says Maximum
    # Packet Size 40: a PUBLISH to it of 11 + payload bytes (QoS 0: fixed header 2, topic 2 + 4, properties 1 + 2
    # for its Subscription Identifier) fits up to payload 29, at QoS 1 (packet id) up to 27; a publisher's Topic
    # Alias is not forwarded. OF's session is detached: QoS 0 is not queued for it, QoS 1 is; OG was granted
    # QoS 0, so nothing is queued for it. MQ has no limit.
    def conn(n, cid, props=b"", clean=True):
        c = Conn(n)
        c.open(cid, conn=packet(0x10, s16("MQTT") + b"\x05" + (b"\x02" if clean else b"\x00") + b"\x00\x00"
                                + vbi(len(props)) + props + s16(cid)),
               ack=packet(0x20, (b"\x00" if clean else b"\x01") + b"\x00" + vbi(3) + b"\x22\x00\x05"))  # aliases
        return c

    def sub(c, subid, filt, qos):
        c.c2s(ACK | PSH, subscribe(subid, subid, filt, qos=qos))
        c.s2c(ACK | PSH, suback(subid, bytes([qos])))

    mp = conn(1, "MP", b"\x27\x00\x00\x00\x28"); sub(mp, 1, "mp/#", 1)
    mq = conn(2, "MQ"); sub(mq, 2, "mp/#", 1)
    of = conn(3, "OF", b"\x11\x00\x00\x02\x58"); sub(of, 1, "of/#", 1); of.close()
    og = conn(4, "OG", b"\x11\x00\x00\x02\x58"); sub(og, 1, "of/#", 0); og.close()
    pub = conn(5, "pub")
    expect = []

    def pub_(pkt, topic, keys):
        pub.c2s(ACK | PSH, pkt)
        pub.s2c(ACK)
        expect.append([topic, keys])

    pub_(publish("mp/a", payload=b"y" * 29), "mp/a", ["MP#1", "MQ#2"])
    pub_(publish("mp/a", payload=b"y" * 30), "mp/a", ["MQ#2"])
    pub_(packet(0x30, s16("mp/a") + vbi(3) + b"\x23\x00\x01" + b"y" * 29), "mp/a", ["MP#1", "MQ#2"])  # alias
    pub_(packet(0x32, s16("mp/b") + b"\x00\x01" + vbi(0) + b"y" * 27), "mp/b", ["MP#1", "MQ#2"])
    pub_(packet(0x32, s16("mp/b") + b"\x00\x02" + vbi(0) + b"y" * 28), "mp/b", ["MQ#2"])
    pub_(publish("of/a"), "of/a", [])
    pub_(packet(0x32, s16("of/b") + b"\x00\x03" + vbi(0) + b"x"), "of/b", ["OF#1"])
    of2 = conn(6, "OF", b"\x11\x00\x00\x02\x58", clean=False)  # back: Session Present 1
    pub_(publish("of/c"), "of/c", ["OF#1"])
    for c in (pub, mp, mq, of2):
        c.close()
    result = expect
elif scenario == "retained":
    # Retained messages the broker sends for a new subscription: right after its SUBACK, RETAIN 1 (mosquitto
    # 2.0.11 does exactly this, Subscription Identifier included). Elsewhere RETAIN 1 is Retain As Published
    # forwarding of a message matched at its PUBLISH: no second line.
    def ret(c, topic, subid=None, payload=b"kept"):
        props = b"" if subid is None else b"\x0b" + vbi(subid)
        c.s2c(ACK | PSH, packet(0x31, s16(topic) + vbi(len(props)) + props + payload))

    r, pub, r2 = Conn(1), Conn(2), Conn(3)
    r.open("R")
    r.c2s(ACK | PSH, subscribe(1, 8, "x/#"))
    r.s2c(ACK | PSH, suback(1))
    pub.open("pub")
    pub.c2s(ACK | PSH, packet(0x31, s16("r/a") + vbi(0) + b"kept"))  # sets the retained message: reaches nobody
    pub.s2c(ACK)
    r.c2s(ACK | PSH, subscribe(2, 7, "r/#"))
    r.s2c(ACK | PSH, suback(2) + packet(0x31, s16("r/a") + vbi(2) + b"\x0b\x07" + b"kept"))  # in one segment
    ret(r, "r/b", 7)
    r2.open("R2")
    r2.c2s(ACK | PSH, packet(0x82, b"\x00\x01" + vbi(0) + s16("r/a") + b"\x00"))
    r2.s2c(ACK | PSH, suback(1))
    ret(r2, "r/a")
    pub.c2s(ACK | PSH, publish("r/c"))
    pub.s2c(ACK)
    r.s2c(ACK | PSH, publish("r/c"))
    ret(r, "r/c", 7)                              # Retain As Published forwarding: not a retained delivery
    r.s2c(ACK | PSH, packet(0xD0, b""))           # PINGRESP
    ret(r, "r/d", 7)                              # ... nor after another packet
    for c in (pub, r, r2):
        c.close()
    result = [["r/a", []], ["r/a", ["R#7"], "retained"], ["r/b", ["R#7"], "retained"], ["r/a", ["R2#r/a"], "retained"],
              ["r/c", ["R#7"]]]
elif scenario == "evict":
    # A quiet subscriber (Keep Alive 0) whose connection the flow table evicts (replayed with --max-flows 4)
    # while the broker still holds it: its subscription must stay. N clients come and go meanwhile.
    nfill = int(sys.argv[4])
    s_ = Conn(1)
    s_.open("S", conn=packet(0x10, s16("MQTT") + b"\x05\x02\x00\x00" + vbi(0) + s16("S")))
    s_.c2s(ACK | PSH, subscribe(1, 1, "ev/#"))
    s_.s2c(ACK | PSH, suback(1))
    for i in range(nfill):
        c = Conn(10 + i)
        c.open("f%d" % i)
        c.close()
    pub = Conn(2)
    pub.open("pub")
    pub.c2s(ACK | PSH, publish("ev/x"))
    pub.s2c(ACK)
    pub.close()
    result = [["ev/x", ["S#1"]]]
elif scenario == "churn":
    nc, nf = int(sys.argv[4]), int(sys.argv[5])
    for i in range(nc):
        c = Conn(1 + i)
        c.open("c%d" % i)
        for j in range(nf):
            c.c2s(ACK | PSH, subscribe(1 + j, 1 + j, "t/%d/#" % j))
            c.s2c(ACK | PSH, suback(1 + j))
        c.close()
    live, pub = Conn(nc + 1), Conn(nc + 2)
    live.open("live")
    live.c2s(ACK | PSH, subscribe(1, 1, "z/#"))
    live.s2c(ACK | PSH, suback(1))
    pub.open("pub")
    pub.c2s(ACK | PSH, publish("z/1"))
    pub.s2c(ACK)
    pub.close()
    live.close()
else:
    sys.exit("unknown scenario " + scenario)

write_pcap(out_path, frames)
print(json.dumps(result))
