#!/usr/bin/env python3
"""Bad MQTT v5 packets sent to a real broker and to `wmctl mqtt decode`.

Each case is one client->server packet sent right after a good CONNECT on its own
connection. The broker's reaction (DISCONNECT reason code, SUBACK reason codes,
a plain close, or nothing within the wait) is set next to our decoder's verdict
on the same bytes (`--from client`, `--topic-alias-maximum` = the broker's
CONNACK value) and next to the MQTT 5.0 specification:

  spec      the reason code the specification names for the case (section given),
            or None where it only says MUST NOT without naming a code;
  corrob    True where the broker is expected to react with that same code: the
            spec reading is then corroborated by an independent implementation.

Checks (exit 1 if any fails):
  * ours == spec wherever the spec names a code; ours rejects every bad case;
  * the control case (a good PUBLISH) is accepted by both;
  * the broker reacts with the spec's code on the `corrob` cases.
Every other broker divergence is printed (DIVERGES lines), not failed: it is the
broker's behaviour, reported for the record.

usage: mqtt5_peer_errors.py --wmctl build/wmctl --port PORT
"""
import argparse
import json
import socket
import subprocess
import sys
import time


def s16(b):
    return len(b).to_bytes(2, "big") + b


def vbi(n):
    out = b""
    while True:
        d, n = n % 128, n // 128
        out += bytes([d | (0x80 if n else 0)])
        if not n:
            return out


def pkt(h, body):
    return bytes([h]) + vbi(len(body)) + body


def props(p):
    return vbi(len(p)) + p


CONNECT = pkt(0x10, s16(b"MQTT") + b"\x05\x02\x00\x3c" + props(b"") + s16(b"wm-peer-errors"))
SUB = lambda flt, pr=b"": pkt(0x82, b"\x00\x01" + props(pr) + s16(flt) + b"\x00")
PUB0 = lambda topic, pr=b"": pkt(0x30, s16(topic) + props(pr) + b"x")

# name, bytes (may use {alias_max}), spec code or None, section, corroborated by the broker
CASES = [
    ("good_publish", lambda m: PUB0(b"a/b", b"\x26" + s16(b"peid") + s16(b"r1.0")), 0, "3.3", True),
    ("topic_alias_above_maximum", lambda m: PUB0(b"a/b", b"\x23" + (m + 1).to_bytes(2, "big")), 0x94, "3.3.2.3.4, Table 2-6", True),
    ("topic_alias_zero", lambda m: PUB0(b"a/b", b"\x23\x00\x00"), None, "3.3.2.3.4 [MQTT-3.3.2-8]", False),
    ("empty_topic_without_alias", lambda m: PUB0(b""), 0x82, "3.3.2.1", True),
    ("wildcard_in_topic_name", lambda m: PUB0(b"a/+"), None, "3.3.2.1 [MQTT-3.3.2-2]", False),
    ("vbi_not_minimal", lambda m: bytes([0x30, 0x87, 0x00]) + s16(b"a/b") + props(b"") + b"x", None, "1.5.5 [MQTT-1.5.5-1]", False),
    ("property_twice", lambda m: PUB0(b"a/b", b"\x02\x00\x00\x00\x05\x02\x00\x00\x00\x06"), 0x82, "2.2.2.2", False),
    ("subscription_identifier_in_client_publish", lambda m: PUB0(b"a/b", b"\x0b\x05"), None, "3.3.4 [MQTT-3.3.4-6]", False),
    ("subscription_identifier_zero", lambda m: SUB(b"a/b", b"\x0b\x00"), 0x82, "3.8.2.1.2", False),
    ("nul_in_topic", lambda m: PUB0(b"a/\x00b"), 0x81, "1.5.4 [MQTT-1.5.4-2]", True),
    ("surrogate_in_topic", lambda m: PUB0(b"a/\xed\xa0\x80"), 0x81, "1.5.4 [MQTT-1.5.4-1]", True),
    ("subscribe_reserved_flags", lambda m: pkt(0x80, b"\x00\x01" + props(b"") + s16(b"a/b") + b"\x00"), 0x81, "2.1.3", True),
    ("publish_qos_3", lambda m: pkt(0x36, s16(b"a/b") + b"\x00\x01" + props(b"") + b"x"), 0x81, "3.3.1.2", True),
    ("hash_not_last", lambda m: SUB(b"a/#/b"), None, "4.7.1.2", False),
    ("plus_sharing_a_level", lambda m: SUB(b"a/b+"), None, "4.7.1.3", False),
    ("share_name_empty", lambda m: SUB(b"$share//a"), None, "4.8.2 [MQTT-4.8.2-1]", False),
]


def broker_reaction(port, data, wait):
    """'disconnect 0xNN', 'suback [..]', 'closed' (no DISCONNECT) or 'accepted' (nothing in `wait` s)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(CONNECT)
    connack = b""
    while len(connack) < 2 or len(connack) < 2 + connack[1]:
        d = s.recv(4096)
        if not d:
            raise RuntimeError("broker closed before CONNACK")
        connack += d
    s.sendall(data)
    s.settimeout(wait)
    got = b""
    closed = False
    try:
        while True:
            d = s.recv(4096)
            if not d:
                closed = True
                break
            got += d
    except socket.timeout:
        pass
    s.close()
    if got[:1] == b"\xe0":
        return "disconnect 0x%02x" % (got[2] if got[1] else 0)
    if got[:1] == b"\x90":
        plen = got[4]  # property length (< 128 here)
        return "suback %s" % ["0x%02x" % c for c in got[5 + plen:2 + got[1]]]
    return "closed" if closed else "accepted"


def connack_alias_max(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(CONNECT)
    data = b""
    while len(data) < 2 or len(data) < 2 + data[1]:
        data += s.recv(4096)
    s.close()
    # CONNACK: flags, reason, property length, properties (short here: 1-byte VBI)
    p, end = 5, 5 + data[4]
    while p < end:
        pid = data[p]
        if pid == 0x22:
            return int.from_bytes(data[p + 1:p + 3], "big")
        size = {0x11: 4, 0x21: 2, 0x24: 1, 0x25: 1, 0x27: 4, 0x28: 1, 0x29: 1, 0x2A: 1, 0x13: 2}.get(pid)
        if size is None:
            break
        p += 1 + size
    return 0


def ours(wmctl, data, alias_max):
    p = subprocess.run([wmctl, "mqtt", "decode", "--topic-alias-maximum", str(max(alias_max, 1)), "-"],
                       input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    last = json.loads(p.stdout.decode().splitlines()[-1])
    if "error" in last:
        return last["reason_code"], last["error"]
    return 0, last["type"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wmctl", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--wait", type=float, default=1.5, help="seconds a broker gets to react")
    a = ap.parse_args()
    alias_max = connack_alias_max(a.port)
    fails, diverges = [], []
    print("%-42s %-10s %-28s %-24s %s" % ("case", "spec", "ours", "broker", "section"))
    for name, make, spec, section, corrob in CASES:
        data = make(alias_max)
        rc, what = ours(a.wmctl, data, alias_max)
        peer = broker_reaction(a.port, data, a.wait)
        want_peer = "accepted" if spec == 0 else "disconnect 0x%02x" % spec if spec else None
        print("%-42s %-10s %-28s %-24s %s" % (name, "0x%02x" % spec if spec is not None else "(no code)",
                                               "0x%02x %s" % (rc, what), peer, section))
        if spec is not None and rc != spec:
            fails.append("%s: ours 0x%02x (%s), spec %s says 0x%02x" % (name, rc, what, section, spec))
        if spec is None and rc == 0:
            fails.append("%s: ours accepted a packet the spec forbids (%s)" % (name, section))
        if corrob and peer != want_peer:
            fails.append("%s: broker %s, expected %s" % (name, peer, want_peer))
        elif not corrob and (want_peer is None or peer != want_peer):
            if not (want_peer is None and peer == "disconnect 0x%02x" % rc):
                diverges.append("%s: broker %s, ours 0x%02x, spec %s (%s)" % (
                    name, peer, rc, "0x%02x" % spec if spec is not None else "names no code", section))
    for d in diverges:
        print("DIVERGES " + d)
    for f in fails:
        print("FAIL " + f)
    print("peer errors: %d cases (broker Topic Alias Maximum %d), %d failures, broker differs from ours on %d"
          % (len(CASES), alias_max, len(fails), len(diverges)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
