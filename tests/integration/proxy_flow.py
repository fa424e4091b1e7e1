#!/usr/bin/env python3
"""Raw-socket MQTT v5 scenarios for the flow-control limits of MQTT 5.0
(Receive Maximum §3.1.2.11.3 / §3.2.2.3.3 / §4.9, Maximum Packet Size
§3.1.2.11.4 / §3.2.2.3.6), run by proxy_flow.sh straight to a broker and
through wirematch-proxy. Each mode prints what the client saw, one line per
event, with nothing that depends on timing or ports, so the two runs can be
compared line for line. Standard library only; reuses proxy_raw's framing.

usage: proxy_flow.py PORT MODE ARGS
  quota ID N QOS          CONNECT, print the CONNACK's Receive Maximum, send N
                          PUBLISHes of QoS 1 or 2 (topic flow/quota/ID,
                          payloads q1..qN) without waiting, print every answer
                          ("PUBREC 3 00", "PUBREC 6 97", "DISCONNECT 93",
                          "closed") until 1.5 s of silence; then complete every
                          accepted QoS 2 flow (PUBREL -> "PUBCOMP 3 00").
  window ID TOPIC RM N    CONNECT with Receive Maximum RM, SUBSCRIBE QoS 1 to
                          TOPIC, print "ready"; then repeatedly read PUBLISHes
                          without acknowledging until 1.5 s of silence, print
                          "batch P P ..." (their payloads), PUBACK them all;
                          until N arrived (or 3 silent rounds).
  big-in ID SIZE          CONNECT, print the CONNACK's Maximum Packet Size,
                          send a QoS 0 PUBLISH of SIZE bytes in total, then a
                          PINGREQ; print what comes back until close/silence.
  small-out ID TOPIC MAX N
                          CONNECT with Maximum Packet Size MAX, SUBSCRIBE QoS 1
                          to TOPIC, print "ready", print the payload length of
                          each PUBLISH received until N arrived or silence.
"""
import os, socket, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_raw import Reader, packet, s, vbi  # noqa: E402

NAMES = {2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 5: "PUBREC", 6: "PUBREL", 7: "PUBCOMP",
         9: "SUBACK", 13: "PINGRESP", 14: "DISCONNECT"}


def props(items):
    """items: [(id, bytes value)] -> property block with its length VBI."""
    body = b"".join(bytes([i]) + v for i, v in items)
    return vbi(len(body)) + body


def connect(cid, extra=()):
    return packet(0x10, s("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 60) + props(extra) + s(cid))


def parse_props(b):
    """-> (dict id -> raw value bytes for the fixed-size ones we read, rest of b)."""
    n, mul, i = 0, 1, 0
    while True:
        c = b[i]; i += 1; n += (c & 0x7F) * mul; mul *= 128
        if not c & 0x80: break
    block, rest, out, j = b[i:i + n], b[i + n:], {}, 0
    sizes = {0x21: 2, 0x27: 4, 0x22: 2, 0x24: 1, 0x25: 1, 0x28: 1, 0x29: 1, 0x2A: 1, 0x13: 2, 0x11: 4}
    while j < len(block):
        pid = block[j]; j += 1
        if pid in sizes:
            out[pid] = block[j:j + sizes[pid]]; j += sizes[pid]
        elif pid in (0x12, 0x1A, 0x1C, 0x1F, 0x15, 0x16, 0x03, 0x08, 0x09):   # string/binary
            ln = struct.unpack(">H", block[j:j + 2])[0]; j += 2 + ln
        elif pid == 0x26:
            for _ in range(2):
                ln = struct.unpack(">H", block[j:j + 2])[0]; j += 2 + ln
        elif pid == 0x0B:
            while block[j] & 0x80: j += 1
            j += 1
        else:
            raise ValueError("property 0x%02x" % pid)
    return out, rest


def open_conn(port, cid, extra=()):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(connect(cid, extra))
    r = Reader(sock)
    t, body = r.packet()
    assert t >> 4 == 2, "no CONNACK"
    p, _ = parse_props(body[2:])
    return sock, r, body[1], p


def read_until_silence(sock, r, quiet=1.5):
    """Yields (type, flags, body) until `quiet` seconds pass without a packet;
    yields ("closed", ...) when the peer closes."""
    sock.settimeout(quiet)
    while True:
        try:
            t, body = r.packet()
        except (socket.timeout, TimeoutError):
            return
        except (EOFError, ConnectionResetError):
            yield "closed", 0, b""
            return
        yield NAMES.get(t >> 4, str(t >> 4)), t & 0x0F, body


def quota(port, cid, n, qos):
    sock, r, rc, p = open_conn(port, cid)
    rm = struct.unpack(">H", p[0x21])[0] if 0x21 in p else 65535
    print("CONNACK %02x receive-maximum %d" % (rc, rm))
    for i in range(1, n + 1):
        sock.sendall(packet(0x30 | qos << 1, s("flow/quota/" + cid) + struct.pack(">H", i) + b"\x00" + b"q%d" % i))
    accepted = []
    for name, _, body in read_until_silence(sock, r):
        if name == "closed":
            print("closed"); return
        if name in ("PUBACK", "PUBREC"):
            pid = struct.unpack(">H", body[:2])[0]; code = body[2] if len(body) > 2 else 0
            print("%s %d %02x" % (name, pid, code))
            if name == "PUBREC" and code < 0x80: accepted.append(pid)
        elif name == "DISCONNECT":
            print("DISCONNECT %02x" % (body[0] if body else 0))
        else:
            print(name)
    for pid in accepted:
        sock.sendall(packet(0x62, struct.pack(">H", pid)))
    for name, _, body in read_until_silence(sock, r):
        if name == "PUBCOMP":
            print("PUBCOMP %d %02x" % (struct.unpack(">H", body[:2])[0], body[2] if len(body) > 2 else 0))
        else:
            print(name); return
    sock.sendall(b"\xe0\x00")


def subscribe(sock, r, topic, qos):
    sock.sendall(packet(0x82, struct.pack(">H", 1) + b"\x00" + s(topic) + bytes([qos])))
    t, body = r.packet()
    assert t >> 4 == 9 and body[-1] < 0x80, "SUBSCRIBE refused"


def publish_fields(flags, body):
    """-> (packet id or None, payload) of a PUBLISH body."""
    tl = struct.unpack(">H", body[:2])[0]; off = 2 + tl; pid = None
    if (flags >> 1) & 3:
        pid = struct.unpack(">H", body[off:off + 2])[0]; off += 2
    _, payload = parse_props(body[off:])
    return pid, payload


def window(port, cid, topic, rm, n):
    sock, r, rc, _ = open_conn(port, cid, [(0x21, struct.pack(">H", rm))])
    subscribe(sock, r, topic, 1)
    print("ready", flush=True)
    got, silent = 0, 0
    while got < n and silent < 3:
        batch = []
        for name, flags, body in read_until_silence(sock, r):
            if name == "closed":
                print("closed"); return
            if name != "PUBLISH":
                print(name); continue
            batch.append(publish_fields(flags, body))
        if not batch:
            silent += 1; continue
        print("batch " + " ".join(p.decode() for _, p in batch), flush=True)
        got += len(batch)
        for pid, _ in batch:
            sock.sendall(packet(0x40, struct.pack(">H", pid)))
    print("received %d" % got)
    sock.sendall(b"\xe0\x00")


def big_in(port, cid, size):
    sock, r, rc, p = open_conn(port, cid)
    mps = struct.unpack(">I", p[0x27])[0] if 0x27 in p else None
    print("CONNACK %02x maximum-packet-size %s" % (rc, mps))
    topic = s("flow/big/" + cid) + b"\x00"
    head = 1 + len(vbi(size))            # a guess; fix the payload so the total is exactly SIZE
    payload_len = size - head - len(topic)
    pkt = packet(0x30, topic + b"B" * payload_len)
    if len(pkt) != size:
        payload_len -= len(pkt) - size
        pkt = packet(0x30, topic + b"B" * payload_len)
    assert len(pkt) == size
    sock.sendall(pkt + b"\xc0\x00")
    for name, _, body in read_until_silence(sock, r):
        if name == "DISCONNECT":
            print("DISCONNECT %02x" % (body[0] if body else 0))
        else:
            print(name)
        if name == "closed": return
    print("open")


def small_out(port, cid, topic, mx, n):
    sock, r, rc, _ = open_conn(port, cid, [(0x27, struct.pack(">I", mx))])
    subscribe(sock, r, topic, 1)
    print("ready", flush=True)
    got = 0
    for name, flags, body in read_until_silence(sock, r, 3):
        if name != "PUBLISH":
            print(name); continue
        pid, payload = publish_fields(flags, body)
        print("PUBLISH payload %d" % len(payload))
        if pid is not None: sock.sendall(packet(0x40, struct.pack(">H", pid)))
        got += 1
        if got == n: break
    sock.sendall(b"\xe0\x00")


if __name__ == "__main__":
    port, mode, a = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if mode == "quota": quota(port, a[0], int(a[1]), int(a[2]))
    elif mode == "window": window(port, a[0], a[1], int(a[2]), int(a[3]))
    elif mode == "big-in": big_in(port, a[0], int(a[1]))
    elif mode == "small-out": small_out(port, a[0], a[1], int(a[2]), int(a[3]))
    else: sys.exit("unknown mode " + mode)
