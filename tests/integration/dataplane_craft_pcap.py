#!/usr/bin/env python3
"""Writes a pcap of crafted frames covering the data plane's hard cases below
MQTT, and prints (as JSON) the counters build/wirematch must report for it.

The frames are built here with the struct module, independently of the C
frame builder the unit tests use (tests/lib/pkt_craft.c), so the expected
numbers are a second opinion, not the code's own output.

usage: dataplane_craft_pcap.py OUT.pcap MQTT_PORT  > expected.json
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from wire import csum  # noqa: E402

out_path, port = sys.argv[1], int(sys.argv[2])
frames = []
expect = {"packets": {}, "segments": {}, "flows": {}, "stream": {}}


def bump(group, name, n=1):
    expect[group][name] = expect[group].get(name, 0) + n


def eth(ethertype, payload, vlans=()):
    hdr = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01"
    for tpid, vid in vlans:
        hdr += struct.pack("!HH", tpid, vid)
    return hdr + struct.pack("!H", ethertype) + payload


def tcp(sport, dport, seq, ack, flags, data=b"", opts=b""):
    doff = (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       doff << 4, flags, 65535, 0, 0) + opts + data


def ip4(src, dst, l4, proto=6, frag=0x4000, opts=b""):
    ihl = (20 + len(opts)) // 4
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(l4), 1, frag, 64, proto, 0,
                    bytes(src), bytes(dst)) + opts
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + l4


def ip6(src, dst, l4, nh=6, ext=b""):
    return struct.pack("!IHBB16s16s", 0x60000000, len(ext) + len(l4), nh, 64, bytes(src),
                       bytes(dst)) + ext + l4


FIN, SYN, RST, PSH, ACK = 1, 2, 4, 8, 16


class Conn:
    """A TCP connection between a client and the broker port."""

    def __init__(self, c, s, cport, v6=False, vlans=(), cisn=1000, sisn=9000):
        self.c, self.s, self.cport, self.v6, self.vlans = c, s, cport, v6, vlans
        self.cisn, self.sisn = cisn, sisn

    def frame(self, from_client, seq, ack, flags, data=b""):
        sp, dp = (self.cport, port) if from_client else (port, self.cport)
        src, dst = (self.c, self.s) if from_client else (self.s, self.c)
        seg = tcp(sp, dp, seq, ack, flags, data)
        l3 = ip6(src, dst, seg) if self.v6 else ip4(src, dst, seg)
        return eth(0x86DD if self.v6 else 0x0800, l3, self.vlans)

    def handshake(self):
        frames.append(self.frame(True, self.cisn, 0, SYN))
        frames.append(self.frame(False, self.sisn, self.cisn + 1, SYN | ACK))
        frames.append(self.frame(True, self.cisn + 1, self.sisn + 1, ACK))
        bump("segments", "control", 3)
        bump("flows", "opened_syn")

    def c2s(self, off, data, disp):
        frames.append(self.frame(True, self.cisn + 1 + off, self.sisn + 1, ACK | PSH, data))
        bump("segments", disp)

    def fin_both(self, cbytes, sbytes):
        frames.append(self.frame(True, self.cisn + 1 + cbytes, self.sisn + 1 + sbytes, FIN | ACK))
        frames.append(self.frame(False, self.sisn + 1 + sbytes, self.cisn + 2 + cbytes, FIN | ACK))
        frames.append(self.frame(True, self.cisn + 2 + cbytes, self.sisn + 2 + sbytes, ACK))
        bump("segments", "control", 2)
        bump("segments", "after_close")
        bump("flows", "closed_fin")
        bump("flows", "dir_fin", 2)


A4 = [10, 0, 0, 1]
B4 = [10, 0, 0, 2]
A6 = [0x20, 0x01, 0x0D, 0xB8] + [0] * 11 + [1]
B6 = [0x20, 0x01, 0x0D, 0xB8] + [0] * 11 + [2]

# 1. In order, then a segment split inside an MQTT fixed header.
c = Conn(A4, B4, 40001)
c.handshake()
c.c2s(0, b"\x10\x05\x00\x04MQ", "delivered")
c.c2s(6, b"TT", "delivered")
c.fin_both(8, 0)
bump("stream", "delivered_bytes", 8)

# 2. Out of order, a duplicate and an overlapping retransmission (first copy wins).
c = Conn(A4, B4, 40002, cisn=0xFFFFFFF0)  # sequence numbers wrap
c.handshake()
c.c2s(4, b"EFGH", "ooo_buffered")
c.c2s(4, b"EFGH", "ooo_buffered")
c.c2s(0, b"ABCDxx", "delivered")
c.c2s(2, b"CD", "duplicate")
c.fin_both(8, 0)
bump("stream", "delivered_bytes", 8)
bump("stream", "duplicate_bytes", 2)
bump("stream", "overlap_bytes", 4 + 2)

# 3. A missing segment the server keeps acknowledging: the direction is lost.
c = Conn(A4, B4, 40003)
c.handshake()
c.c2s(0, b"abc", "delivered")
c.c2s(6, b"ghi", "ooo_buffered")
# (repeated: a hole is declared lost only when it stays open for 16 packets)
for _ in range(16):
    frames.append(c.frame(False, c.sisn + 1, c.cisn + 1 + 9, ACK))
bump("segments", "control", 16)
bump("flows", "dir_lost_acked")
c.c2s(9, b"jkl", "dir_ended")
frames.append(c.frame(True, c.cisn + 1 + 12, 0, RST))
bump("segments", "rst")
bump("flows", "closed_rst")
bump("stream", "delivered_bytes", 3)
bump("stream", "discarded_bytes", 3)

# 4. VLAN and QinQ, IPv6 with a hop-by-hop header.
for cport, vlans in ((40004, ((0x8100, 10),)), (40005, ((0x88A8, 20), (0x8100, 30)))):
    c = Conn(A4, B4, cport, vlans=vlans)
    c.handshake()
    c.c2s(0, b"vlan", "delivered")
    bump("stream", "delivered_bytes", 4)
c = Conn(A6, B6, 40006, v6=True)
c.handshake()
c.c2s(0, b"six", "delivered")
bump("stream", "delivered_bytes", 3)
bump("flows", "closed_shutdown", 3)  # still open when the capture ends

# 5. A connection first seen mid-stream: counted once, never delivered.
c = Conn(A4, B4, 40007)
c.c2s(100, b"mid", "midstream")
c.c2s(103, b"dle", "midstream")
bump("flows", "midstream")

# 6. Frames that are not ours or are malformed, each with its verdict.
seg = tcp(40008, port, 1, 1, ACK, b"x")
frames.append(eth(0x0806, b"\0" * 28)); bump("packets", "not_ip")
frames.append(eth(0x0800, ip4(A4, B4, b"\0" * 8 + b"udp!", proto=17))); bump("packets", "not_tcp")
frames.append(eth(0x0800, ip4(A4, B4, seg, frag=0x2000))); bump("packets", "ip_fragment")
frames.append(eth(0x0800, ip4(A4, B4, seg, opts=b"\x07\x01\0\0"))); bump("packets", "ip4_bad_options")
bad_ihl = bytearray(eth(0x0800, ip4(A4, B4, seg))); bad_ihl[14] = 0x44
frames.append(bytes(bad_ihl)); bump("packets", "ip4_bad_ihl")
frames.append(eth(0x0800, ip4(A4, B4, tcp(40008, port, 1, 1, ACK, b"", opts=b"\x02\x03\x05\x00")))); bump("packets", "tcp_bad_options")
frames.append(eth(0x8100, b"\0\x0a")); bump("packets", "vlan_truncated")
frames.append(b"\0" * 10); bump("packets", "eth_truncated")
frames.append(eth(0x0800, ip4(A4, B4, tcp(40009, 80, 1, 1, ACK, b"http")))); bump("packets", "not_mqtt_port")
frames.append(eth(0x86DD, ip6(A6, B6, seg, nh=44, ext=bytes([6, 0, 0, 9, 0, 0, 0, 1])))); bump("packets", "ip_fragment")
frames.append(eth(0x0800, ip4(A4, B4, tcp(40010, port, 1, 1, SYN | FIN)))); bump("packets", "tcp_bad_flags")

expect["packets"]["rx"] = len(frames)
with open(out_path, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(frames):
        f.write(struct.pack("<IIII", 1700000000 + i, 0, len(fr), len(fr)))
        f.write(fr)
json.dump(expect, sys.stdout, indent=1, sort_keys=True)
print()
