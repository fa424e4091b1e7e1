"""Byte builders shared by the capture generators (tests/integration's
crafted captures, perf/gen_spaps_pcap.py); frames are built here,
independently of the C code under test: the MQTT v5 pieces (§1.5.5 Variable Byte Integer, §1.5.4 UTF-8
string, fixed header), the Internet checksum (RFC 1071) and a pcap writer."""
import struct


def vbi(n):
    out = b""
    while True:
        b = n % 128
        n //= 128
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def s16(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def packet(first, body):
    return bytes([first]) + vbi(len(body)) + body


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def write_pcap(path, frames):
    """Ethernet frames, 1 ms apart."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i // 1000, (i % 1000) * 1000, len(fr), len(fr)))
            f.write(fr)
