#!/usr/bin/env python3
"""Raw clients for proxy_connect_wait.sh: what a client that owes its CONNECT
sees, to the millisecond. Standard library only (proxy_raw.py's encoders).

usage: proxy_connect_wait.py PORT SCENARIO [ARGS]
  silent N         open N connections at once, send nothing; print one line
                   "eof MS" (time from before the connect to the proxy's close) or
                   "open" (still open after 10 s) per connection, in order
  partial          send the first 10 bytes of a CONNECT, nothing more: "eof MS" / "open"
  slow PAUSE IDLE  send a CONNECT in two halves PAUSE ms apart, print its CONNACK
                   ("CONNACK:00"), stay silent IDLE ms, send PINGREQ: "PINGRESP" or "closed"
  busy             send a CONNECT and read until the proxy closes (10 s): the bytes
                   received in hex, then "closed" (or "open")
  hold SECONDS     CONNECT, print "ready" once its CONNACK came, stay connected
                   SECONDS (or until the proxy closes), print "closed"
"""
import os, selectors, socket, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_raw import connect, Reader, NAMES

BOUND = 10.0

def wait_eof(sock, t0):
    """ms from t0 until the peer closes (data before it is ignored), or None."""
    sock.settimeout(0.05)
    while time.monotonic() - t0 < BOUND:
        try:
            if not sock.recv(65536): return int((time.monotonic() - t0) * 1000)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return int((time.monotonic() - t0) * 1000)
    return None

def show(ms): print("open" if ms is None else "eof %d" % ms, flush=True)

def silent(port, n):
    """Each connection's close is timed as it happens (all watched at once)."""
    socks, done = [], {}
    for _ in range(n):
        t0 = time.monotonic()   # before the SYN: the proxy's time cannot start earlier
        sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
        sock.setblocking(False)
        socks.append((sock, t0))
    sel = selectors.DefaultSelector()
    for i, (sock, _) in enumerate(socks): sel.register(sock, selectors.EVENT_READ, i)
    while len(done) < n and time.monotonic() - socks[0][1] < BOUND:
        for key, _ in sel.select(0.05):
            i = key.data
            try:
                d = socks[i][0].recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionResetError:
                d = b""
            if not d:
                done[i] = int((time.monotonic() - socks[i][1]) * 1000)
                sel.unregister(socks[i][0])
    for i in range(n): show(done.get(i))

def partial(port):
    t0 = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    sock.sendall(connect("partial")[:10])
    show(wait_eof(sock, t0))

def slow(port, pause, idle):
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    c = connect("slow")
    sock.sendall(c[:7]); time.sleep(pause / 1000); sock.sendall(c[7:])
    r = Reader(sock)
    t, body = r.packet()
    print("%s:%02x" % (NAMES.get(t >> 4, t >> 4), body[1]), flush=True)
    time.sleep(idle / 1000)
    try:
        sock.sendall(b"\xc0\x00")
        print(NAMES.get(r.packet()[0] >> 4, "?"))
    except (EOFError, ConnectionResetError, BrokenPipeError):
        print("closed")

def busy(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    t0 = time.monotonic()
    sock.sendall(connect("busy"))
    sock.settimeout(0.05)
    got = b""
    while time.monotonic() - t0 < BOUND:
        try:
            d = sock.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            d = b""
        if not d:
            print(got.hex(), "closed")
            return
        got += d
    print(got.hex(), "open")

def hold(port, secs):
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    sock.sendall(connect("hold-%d" % os.getpid()))
    Reader(sock).packet()
    print("ready", flush=True)
    sock.settimeout(secs)
    try:
        sock.recv(1)
    except (socket.timeout, ConnectionResetError):
        pass
    print("closed", flush=True)

if __name__ == "__main__":
    port, sc, args = int(sys.argv[1]), sys.argv[2], [int(a) for a in sys.argv[3:]]
    {"silent": silent, "partial": partial, "slow": slow, "busy": busy, "hold": hold}[sc](port, *args)
