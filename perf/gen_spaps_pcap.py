#!/usr/bin/env python3
"""Synthetic capture of the spaPS workload for `make bench-dataplane`.

Complete MQTT v5 connections over TCP (handshake, CONNECT/CONNACK, ...,
DISCONNECT, FIN both ways), so a capture replayed in a loop (net_pcap
infinite_rx=1) reopens every connection at its SYN and is processed in full
on every pass instead of turning into retransmissions:

  - subscriber connections, each with SUBSCRIBEs carrying a subscription
    identifier and an `nbhd` user property (SUBSCRIPTIONS in total);
  - publisher connections sending PUBLISH frames of 100-200 bytes (QoS 0,
    topic traffic/<zone>/<segment>, one `peid` user property drawn from a
    Zipf(1.1) distribution over PEIDS road segments); the broker acknowledges
    every second segment.

With --world/--nbhd/--subs-out it also writes the spatial side of the same
workload, so every PUBLISH goes through the real matcher:

  - WORLD (GeoJSON, EPSG:32632, metres): the PEIDS road segments as points on
    one line 1 m apart, in a random order (so the Zipf-hot peids are spread
    over the neighborhoods, not clustered in one);
  - NBHD (the neighborhood language, control/nbhd.h): NBHDS neighborhoods
    nbhd-K = ({road-C}, {road/#}, DW R) around a random reference whose
    position is at least R from both ends, so each resolves to exactly
    2*R = NBHD_SIZE peids (`wmctl resolve` turns them into a .wmr);
  - SUBS (JSON lines for `wirematch --subs`): the SUBSCRIPTIONS
    subscriptions, instead of subscriber connections in the capture (a
    replayed loop would otherwise re-subscribe them on every pass).

usage: gen_spaps_pcap.py OUT.pcap [--publishes N] [--publishers N] [--subscribers N]
                         [--subscriptions N] [--peids N] [--port P] [--seed S] [--interleave]
                         [--world W.geojson --nbhd N.nbhd --subs-out S.jsonl
                          [--nbhds N] [--nbhd-size N]]
Prints one JSON line describing what it wrote.
"""
import argparse
import bisect
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib"))
from wire import csum, packet, s16, vbi  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--publishes", type=int, default=16000)
ap.add_argument("--publishers", type=int, default=40)
ap.add_argument("--subscribers", type=int, default=100)
ap.add_argument("--subscriptions", type=int, default=1000)
ap.add_argument("--peids", type=int, default=20000)
ap.add_argument("--port", type=int, default=1883)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--interleave", action="store_true", help="PUBLISHes of all publishers interleaved")
ap.add_argument("--world")
ap.add_argument("--nbhd")
ap.add_argument("--subs-out")
ap.add_argument("--nbhds", type=int, default=50)
ap.add_argument("--nbhd-size", type=int, default=2000)
a = ap.parse_args()
spatial = (a.world, a.nbhd, a.subs_out)
if any(spatial) and not all(spatial):
    ap.error("--world, --nbhd and --subs-out go together")
if a.nbhd_size % 2 or a.nbhd_size + 1 > a.peids:
    ap.error("--nbhd-size must be even and below --peids")
rng = random.Random(a.seed)

# Zipf(1.1) over peid ranks by inverse CDF.
weights = [1.0 / (k ** 1.1) for k in range(1, a.peids + 1)]
cdf = []
acc = 0.0
for w in weights:
    acc += w
    cdf.append(acc)


def zipf_peid():
    return bisect.bisect_left(cdf, rng.random() * acc)


def connect(cid):
    return packet(0x10, s16("MQTT") + b"\x05\x02\x00\x3c" + vbi(0) + s16(cid))


CONNACK = packet(0x20, b"\x00\x00" + vbi(0))
DISCONNECT = packet(0xE0, b"")


def subscribe(pid, subid, nbhd, filt):
    props = b"\x0b" + vbi(subid) + b"\x26" + s16("nbhd") + s16(nbhd)
    return packet(0x82, struct.pack("!H", pid) + vbi(len(props)) + props + s16(filt) + b"\x00")


def suback(pid):
    return packet(0x90, struct.pack("!H", pid) + vbi(0) + b"\x00")


def publish(topic, peid, size):
    props = b"\x26" + s16("peid") + s16(peid)
    head = s16(topic) + vbi(len(props)) + props
    # pad the payload so the MQTT frame is `size` bytes long
    room = size - 1 - len(vbi(size)) - len(head)
    pay = bytes(rng.randrange(32, 127) for _ in range(max(room, 1)))
    return packet(0x30, head + pay)


FIN, SYN, RST, PSH, ACK = 1, 2, 4, 8, 16
frames = []


def tcp_frame(src, dst, sport, dport, seq, ack, flags, data=b""):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + data
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, bytes(src), bytes(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]  # the data plane drops a bad IPv4 header checksum
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + tcp


class Conn:
    def __init__(self, n):
        self.c = [10, 1, n >> 8 & 255, n & 255]
        self.s = [10, 0, 0, 1]
        self.cp = 20000 + n
        self.cseq = rng.randrange(1 << 32)
        self.sseq = rng.randrange(1 << 32)
        self.unacked = 0

    def c2s(self, flags, data=b""):
        frames.append(tcp_frame(self.c, self.s, self.cp, a.port, self.cseq, self.sseq, flags, data))
        self.cseq += len(data) + (1 if flags & (SYN | FIN) else 0)
        self.unacked += 1
        if data and self.unacked >= 2:
            self.s2c(ACK)

    def s2c(self, flags, data=b""):
        frames.append(tcp_frame(self.s, self.c, a.port, self.cp, self.sseq, self.cseq, flags, data))
        self.sseq += len(data) + (1 if flags & (SYN | FIN) else 0)
        self.unacked = 0

    def open(self, cid):
        frames.append(tcp_frame(self.c, self.s, self.cp, a.port, self.cseq, 0, SYN))
        self.cseq += 1
        self.s2c(SYN | ACK)
        self.c2s(ACK)
        self.c2s(ACK | PSH, connect(cid))
        self.s2c(ACK | PSH, CONNACK)

    def close(self):
        self.c2s(ACK | PSH | FIN, DISCONNECT)
        self.s2c(ACK | FIN)
        self.c2s(ACK)


def sub_spec(k):
    """Subscription k: (neighborhood, topic filter). Filters of one
    subscriber (up to 10 consecutive k) are distinct, so none replaces
    another (MQTT 5.0 3.8.4)."""
    return "nbhd-%d" % (k % a.nbhds), "traffic/+/%d" % (k % 200) if k % 3 else "traffic/%d/#" % (k % 10)


n = 0
subs_per = a.subscriptions // a.subscribers
if a.subs_out:
    with open(a.subs_out, "w") as f:
        for i in range(a.subscribers):
            for j in range(subs_per):
                k = i * subs_per + j
                nb, filt = sub_spec(k)
                f.write(json.dumps({"id": "sub-%d#%d" % (i, k + 1), "client": "sub-%d" % i, "filter": filt,
                                    "nbhd": nb}) + "\n")
else:
    for i in range(a.subscribers):
        c = Conn(n); n += 1
        c.open("sub-%d" % i)
        for j in range(subs_per):
            k = i * subs_per + j
            nb, filt = sub_spec(k)
            c.c2s(ACK | PSH, subscribe(j + 1, k + 1, nb, filt))
            c.s2c(ACK | PSH, suback(j + 1))
        c.close()
def one_publish(c):
    p = zipf_peid()
    c.c2s(ACK | PSH, publish("traffic/%d/%d" % (p % 10, p % 200), "road-%d" % p, rng.randrange(100, 201)))


per_pub = a.publishes // a.publishers
if a.interleave:
    # All publishers connected at once, each PUBLISH from a random one (as a
    # broker sees many clients): consecutive frames belong to different flows.
    pubs = []
    for i in range(a.publishers):
        c = Conn(n); n += 1
        c.open("pub-%d" % i)
        pubs.append([c, per_pub])
    live = list(range(a.publishers))
    while live:
        k = rng.randrange(len(live))
        e = pubs[live[k]]
        one_publish(e[0])
        e[1] -= 1
        if e[1] == 0:
            live[k] = live[-1]
            live.pop()
    for e in pubs:
        e[0].close()
else:
    for i in range(a.publishers):
        c = Conn(n); n += 1
        c.open("pub-%d" % i)
        for _ in range(per_pub):
            one_publish(c)
        c.close()

with open(a.out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(frames):
        f.write(struct.pack("<IIII", 1700000000 + i // 1000000, i % 1000000, len(fr), len(fr)))
        f.write(fr)
desc = {"frames": len(frames), "publishes": per_pub * a.publishers, "connections": n, "interleaved": a.interleave,
        "subscriptions": subs_per * a.subscribers, "peids": a.peids, "out": a.out}
if a.world:
    # Separate generator so the capture stays the same with or without these files.
    wr = random.Random(a.seed + 1)
    pos = list(range(a.peids))
    wr.shuffle(pos)
    x0, y0, r = 500000, 5000000, a.nbhd_size // 2
    with open(a.world, "w") as f:
        f.write('{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32632"}},\n'
                ' "features": [\n')
        f.write(",\n".join('{"type": "Feature", "id": "road-%d", "properties": {"cats": ["road/segment"]}, '
                           '"geometry": {"type": "Point", "coordinates": [%d, %d]}}' % (p, x0 + pos[p], y0)
                           for p in range(a.peids)))
        f.write("\n]}\n")
    at = {q: p for p, q in enumerate(pos)}
    with open(a.nbhd, "w") as f:
        f.write("# %d neighborhoods of exactly %d peids each (gen_spaps_pcap.py)\n" % (a.nbhds, a.nbhd_size))
        for k in range(a.nbhds):
            c = at[wr.randrange(r, a.peids - r)]
            f.write("nbhd-%d: ({road-%d}, {road/#}, DW%d)\n" % (k, c, r))
    desc.update({"world": a.world, "nbhd": a.nbhd, "subs": a.subs_out, "nbhds": a.nbhds, "nbhd_size": a.nbhd_size})
print(json.dumps(desc))
