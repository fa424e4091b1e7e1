#!/usr/bin/env python3
"""Raw-socket MQTT v5 client for the proxy's integration tests: sends exact
bytes (valid or deliberately broken) and reports exactly what came back, so
the tests can check reason codes byte by byte. Standard library only.

usage:
  proxy_raw.py PORT expect-close HEXBYTES...   send each packet (hex), then
      read until the peer closes (10 s bound); print the packets received as
      "TYPE:REASON" lines (e.g. "CONNACK:00", "DISCONNECT:81").
  proxy_raw.py PORT slow-sub TOPIC N SLEEP [CID]  CONNECT (client identifier
      CID, default slow-sub) + SUBSCRIBE (QoS 0), print "ready", stay silent
      without reading SLEEP seconds, or, when SLEEP is a path, until that file
      exists (60 s bound: the caller says when its publisher is done, however
      slow a loaded host made it), then read N PUBLISH packets and print
      "got N first=P last=P in-order=B".
"""
import os, socket, struct, sys, time

def vbi(n):
    out = bytearray()
    while True:
        b = n & 0x7F; n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n: return bytes(out)

def packet(first, body): return bytes([first]) + vbi(len(body)) + body
def s(x): x = x.encode(); return struct.pack(">H", len(x)) + x
def connect(cid): return packet(0x10, s("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 60) + b"\x00" + s(cid))

class Reader:
    def __init__(self, sock): self.sock, self.buf = sock, b""
    def _fill(self):
        d = self.sock.recv(65536)
        if not d: raise EOFError
        self.buf += d
    def packet(self):
        while True:
            if len(self.buf) >= 2:
                n, mul, i = 0, 1, 1
                while i < len(self.buf) and i <= 4:
                    b = self.buf[i]; n += (b & 0x7F) * mul; mul *= 128; i += 1
                    if not b & 0x80:
                        if len(self.buf) >= i + n:
                            p = self.buf[:i + n]; self.buf = self.buf[i + n:]
                            return p[0], p[i:]
                        break
            self._fill()

NAMES = {1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 9: "SUBACK", 13: "PINGRESP", 14: "DISCONNECT"}

def expect_close(port, hexes):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    r = Reader(sock)

    def show(t, body):
        name = NAMES.get(t >> 4, str(t >> 4))
        reason = body[1] if name == "CONNACK" else (body[0] if name == "DISCONNECT" and body else None)
        print(name + ("" if reason is None else ":%02x" % reason))
        return name

    try:
        for i, h in enumerate(hexes):
            sock.sendall(bytes.fromhex(h))
            # After a CONNECT, wait for its CONNACK before the next packets: on a
            # loaded host the broker's CONNACK can take longer than any fixed
            # pause, and a bad packet before it is answered with a CONNACK
            # instead (a different, also correct, outcome).
            if h[:2] == "10" and i + 1 < len(hexes):
                while show(*r.packet()) != "CONNACK": pass
            time.sleep(0.05)
        while True:
            show(*r.packet())
    except (EOFError, ConnectionResetError):
        print("closed")

def slow_sub(port, topic, n, pause, cid="slow-sub"):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
    sock.sendall(connect(cid))
    r = Reader(sock)
    assert r.packet()[0] >> 4 == 2
    sock.sendall(packet(0x82, struct.pack(">H", 1) + b"\x00" + s(topic) + b"\x00"))
    assert r.packet()[0] >> 4 == 9
    print("ready", flush=True)
    if isinstance(pause, str):
        end = time.monotonic() + 60
        while not os.path.exists(pause) and time.monotonic() < end: time.sleep(0.05)
    else:
        time.sleep(pause)
    got, first, last, ordered = 0, None, None, True
    sock.settimeout(20)  # generous: a loaded CI host can stall the publisher for seconds
    while got < n:
        try:
            t, body = r.packet()
        except (TimeoutError, socket.timeout, EOFError) as e:
            print("got %d first=%s last=%s in-order=%s, then %s" % (got, first, last, ordered, type(e).__name__))
            sys.exit(1)
        if t >> 4 != 3: continue
        tl = struct.unpack(">H", body[:2])[0]
        off = 2 + tl
        plen, mul = 0, 1                      # property length VBI (QoS 0: no packet id)
        while True:
            b = body[off]; off += 1; plen += (b & 0x7F) * mul; mul *= 128
            if not b & 0x80: break
        seq = int(body[off + plen:].split(b"-")[0])
        if last is not None and seq != last + 1: ordered = False
        first = seq if first is None else first; last = seq; got += 1
    print("got %d first=%s last=%s in-order=%s" % (got, first, last, ordered), flush=True)
    sock.sendall(b"\xe0\x00")

if __name__ == "__main__":
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "expect-close": expect_close(port, sys.argv[3:])
    elif mode == "slow-sub": slow_sub(port, sys.argv[3], int(sys.argv[4]),
                                          sys.argv[5] if "/" in sys.argv[5] else float(sys.argv[5]), *sys.argv[6:7])
    else: sys.exit("unknown mode " + mode)
