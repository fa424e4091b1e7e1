#!/usr/bin/env python3
"""Raw clients for tests/integration/proxy_linger.sh (the proxy's lingering
close). Standard library only; packets from proxy_raw.py.

usage:
  proxy_linger.py backed PORT BPORT CID
      subscribe lg/x (receive buffer 16 KiB), have 1,000 messages of ~1 KB
      published at the broker (BPORT, mosquitto_pub) and read none of them
      until at least 16 KiB wait in the socket (so more waits in the proxy's
      send buffer); then send a PUBLISH over --max-packet 2048 and go on
      writing valid PUBLISHes for 100 ms (non-blocking), then read until the
      end; prints "deliveries=N in-order=B last=P end=E write_error=W" (P the
      last packet not a PUBLISH, E EOF or the errno of the read).
  proxy_linger.py hostile PORT SECONDS fast|slow|none
      CONNECT, then (fast/slow) a PUBLISH over --max-packet 2048, then write
      and never close: fast 16 KiB at a time, slow (and none) one small
      PUBLISH every 10 ms, for at most SECONDS or until a write fails; what
      comes is read without waiting for it. none sends no bad packet and
      prints "ready" once acknowledged (the caller stops the proxy). slow:
      once the proxy's FIN came, a second client connects ("probe=" its
      first packet: CONNACK:89 when the lingering connection still holds
      the slot of --max-conns 1). Prints "reset_after=T" (seconds from the
      bad packet, or from "ready", to the failed write) or "no_reset",
      "fin_after=T", then what was read: "read=P,..." and "end=E".
  proxy_linger.py deaf PORT BPORT SECONDS
      deliveries backed up as for backed (8,000 of them: more than the proxy's
      socket takes in), then a PUBLISH over --max-packet
      2048, and nothing read any more, the socket left open: the proxy's
      DISCONNECT waits behind deliveries it cannot send. Every 0.1 s a new
      client connects (--max-conns 1: CONNACK:89 while the deaf one holds
      the slot); prints "freed_after=T" (seconds from the bad packet to a
      CONNACK 0x00) or "never_freed" after SECONDS.
"""
import errno, fcntl, os, socket, struct, subprocess, sys, termios, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxy_raw as r

BIG = r.packet(0x30, r.s("lg/big") + b"\x00" + b"x" * 3000)
SMALL = r.packet(0x30, r.s("lg/other") + b"\x00" + b"y" * 200)

def show(t, body):
    return "%s:%02x" % (r.NAMES.get(t >> 4, str(t >> 4)), body[1] if t >> 4 == 2 else (body[0] if body else 0))

def read_rest(rd):
    """Packets until the end: (list of (type, body), "EOF" or the errno name)."""
    got = []
    try:
        while True: got.append(rd.packet())
    except EOFError: return got, "EOF"
    except OSError as e: return got, errno.errorcode.get(e.errno, str(e))

def connect(port, cid, rcvbuf=None):
    s = socket.socket()
    if rcvbuf: s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(r.connect(cid))
    rd = r.Reader(s)
    t, body = rd.packet()
    if t >> 4 != 2 or body[1] != 0: sys.exit("no CONNACK 0x00: %s" % show(t, body))
    return s, rd

def backed_up(port, bport, cid, n=1000):
    """A subscriber of lg/x with n deliveries of ~1 KB sent its way and at
    least 16 KiB of them waiting in its socket, none read."""
    s, rd = connect(port, cid, 16384)
    s.sendall(r.packet(0x82, struct.pack(">H", 1) + b"\x00" + r.s("lg/x") + b"\x00"))
    if rd.packet()[0] >> 4 != 9: sys.exit("no SUBACK")
    lines = "".join("%d-%s\n" % (i, "p" * 1000) for i in range(1, n + 1))
    subprocess.run(["mosquitto_pub", "-V", "mqttv5", "-h", "127.0.0.1", "-p", str(bport), "-t", "lg/x", "-l"],
                   input=lines.encode(), check=True, timeout=30)
    end = time.monotonic() + 10
    while True:   # deliveries backed up: the socket's receive queue is full enough
        n = struct.unpack("i", fcntl.ioctl(s, termios.FIONREAD, b"\0\0\0\0"))[0]
        if n >= 16384: break
        if time.monotonic() > end: sys.exit("deliveries did not back up (%d bytes waiting)" % n)
        time.sleep(0.01)
    return s, rd

def backed(port, bport, cid):
    s, rd = backed_up(port, bport, cid)
    werr = None
    s.setblocking(False)
    try:
        s.send(BIG + SMALL * 20)
        end = time.monotonic() + 0.1
        while time.monotonic() < end:
            try: s.send(SMALL * 20)
            except BlockingIOError: pass
            time.sleep(0.001)
    except OSError as e:
        werr = errno.errorcode.get(e.errno, str(e))
    s.setblocking(True); s.settimeout(10)
    got, how = read_rest(rd)
    seqs = [int(b[2 + struct.unpack(">H", b[:2])[0] + 1:].split(b"-")[0]) for t, b in got if t >> 4 == 3]
    others = [show(t, b) for t, b in got if t >> 4 != 3]
    print("deliveries=%d in-order=%s last=%s end=%s write_error=%s" %
          (len(seqs), seqs == list(range(1, len(seqs) + 1)), others[-1] if others else None, how, werr))

class Drained:
    """A socket read to its end already."""
    def recv(self, n): return b""

def first_packet(port, cid):
    """A new client's first answer ("CONNACK:xx"), or what ended it."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(r.connect(cid))
        with s: return show(*r.Reader(s).packet())
    except (OSError, EOFError) as e:
        return type(e).__name__

def hostile(port, seconds, mode):
    s, rd = connect(port, "hostile-" + mode)
    if mode == "none": print("ready", flush=True)
    else: s.sendall(BIG)
    t0 = time.monotonic()
    chunk = SMALL * 80 if mode == "fast" else SMALL
    s.settimeout(5)
    reset = fin = probe = None
    inbuf, end = b"", None
    while time.monotonic() - t0 < seconds:
        try:
            s.sendall(chunk)
        except OSError:
            reset = time.monotonic() - t0
            break
        while end is None:   # what the proxy sent, without waiting: it never waits for this client to read
            try:
                d = s.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError: break
            except OSError as e: end = errno.errorcode.get(e.errno, str(e)); break
            if not d: end, fin = "EOF", time.monotonic() - t0
            inbuf += d
        if fin is not None and probe is None and mode == "slow":
            probe = first_packet(port, "probe")   # the proxy half-closed: lingering, its slot taken
        if mode != "fast": time.sleep(0.01)
    print("reset_after=%.3f" % reset if reset is not None else "no_reset", flush=True)
    if fin is not None: print("fin_after=%.3f" % fin)
    if probe is not None: print("probe=%s" % probe)
    rd.buf = inbuf
    if end is not None: rd.sock = Drained()   # the packets in inbuf, then the end already seen
    got, how = read_rest(rd)
    how = end or how
    print("read=%s" % ",".join(show(t, b) for t, b in got))
    print("end=%s" % how)

def deaf(port, bport, seconds):
    # more than the proxy's send buffer can take in (tcp_wmem's 4 MiB at most)
    s, rd = backed_up(port, bport, "deaf", 8000)
    time.sleep(0.5)
    s.sendall(BIG)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if first_packet(port, "probe") == "CONNACK:00":
            print("freed_after=%.3f" % (time.monotonic() - t0))
            return
        time.sleep(0.1)
    print("never_freed")

if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "backed": backed(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif mode == "hostile": hostile(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    elif mode == "deaf": deaf(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else: sys.exit("unknown mode " + mode)
