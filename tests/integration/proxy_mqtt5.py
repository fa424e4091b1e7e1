#!/usr/bin/env python3
"""A small MQTT v5 client on raw sockets for the proxy's spatial tests
(standard library only): it encodes and decodes exactly the fields the tests
check (Subscription Identifiers, User Properties, Topic Alias, Reason
Strings), which the stock clients do not all expose. Written from the MQTT
5.0 spec, independently of the codec under test.

Import it (sys.path) and use Client; nothing here runs on its own.
"""
import socket, struct, threading, time

def vbi(n):
    out = bytearray()
    while True:
        b = n & 0x7F; n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n: return bytes(out)

def read_vbi(b, off):
    n, mul = 0, 1
    while True:
        x = b[off]; off += 1; n += (x & 0x7F) * mul; mul *= 128
        if not x & 0x80: return n, off

def s(x):
    x = x.encode() if isinstance(x, str) else x
    return struct.pack(">H", len(x)) + x

def packet(first, body): return bytes([first]) + vbi(len(body)) + body

def until_close(c):
    """What raw socket c receives until the peer closes it: (bytes, None), or
    (the bytes so far, the OSError) if a read fails or times out (c's timeout)."""
    got = b""
    try:
        while True:
            d = c.recv(100)
            if not d: return got, None
            got += d
    except OSError as e:
        return got, e

# property encoders: list of (id, value)
def props(items):
    out = bytearray()
    for pid, v in items:
        out += vbi(pid)
        if pid in (0x0B,): out += vbi(v)                                  # Subscription Identifier
        elif pid in (0x21, 0x22, 0x23): out += struct.pack(">H", v)       # Receive Max, Topic Alias Max, Topic Alias
        elif pid in (0x11, 0x27, 0x02): out += struct.pack(">I", v)       # Session Expiry, Max Packet, Message Expiry
        elif pid in (0x17, 0x19, 0x01): out += bytes([v])
        elif pid == 0x26: out += s(v[0]) + s(v[1])                         # User Property
        elif pid in (0x1F, 0x03, 0x08): out += s(v)
        else: raise ValueError("property %d" % pid)
    return vbi(len(out)) + bytes(out)

def parse_props(b, off):
    n, off = read_vbi(b, off)
    end, out = off + n, []
    while off < end:
        pid, off = read_vbi(b, off)
        if pid == 0x0B: v, off = read_vbi(b, off)
        elif pid in (0x21, 0x22, 0x23, 0x13): v = struct.unpack(">H", b[off:off + 2])[0]; off += 2
        elif pid in (0x11, 0x27, 0x02, 0x18): v = struct.unpack(">I", b[off:off + 4])[0]; off += 4
        elif pid in (0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A): v = b[off]; off += 1
        elif pid == 0x26:
            kl = struct.unpack(">H", b[off:off + 2])[0]; k = b[off + 2:off + 2 + kl].decode(); off += 2 + kl
            vl = struct.unpack(">H", b[off:off + 2])[0]; v = (k, b[off + 2:off + 2 + vl].decode()); off += 2 + vl
        elif pid in (0x03, 0x08, 0x09, 0x12, 0x15, 0x16, 0x1A, 0x1C, 0x1F):
            l = struct.unpack(">H", b[off:off + 2])[0]; v = b[off + 2:off + 2 + l]; off += 2 + l
            if pid != 0x09 and pid != 0x16: v = v.decode()
        else: raise ValueError("property 0x%02x" % pid)
        out.append((pid, v))
    return out, end

def subscribe_texts(c, texts, topic_fmt, pid0, bound=600):
    """Subscribes c to topic_fmt % i with content filter texts[i] (QoS 1,
    packet identifiers pid0 + i), all in one write so that they compile
    together, sending PINGREQs while it waits (the SUBSCRIBEs are held for
    the compile; the pings pass them). Returns (the SUBACKs' last reason code
    per text, None if missing; the seconds it took)."""
    c.send_raw(b"".join(packet(0x82, struct.pack(">H", pid0 + i) + props([(0x26, ("xpath", t))]) + s(topic_fmt % i)
                               + b"\x01") for i, t in enumerate(texts)))
    t0 = time.time()
    while not c.wait_for(lambda: (9, pid0 + len(texts) - 1) in c.acks, 20) and time.time() - t0 < bound and not c.closed:
        c.send_raw(b"\xc0\x00")
    return [c.acks[(9, pid0 + i)][-1] if (9, pid0 + i) in c.acks else None for i in range(len(texts))], time.time() - t0

def evict_texts(port, cid):
    """Another connection's new content filter (cid, on port's worker): the
    worker commits its table without the texts of sessions away, so that a
    resume of one waits for their compile. Returns the SUBACK's reason codes."""
    e = Client(port, cid, timeout=None)
    codes, _ = e.subscribe(["ev/#"], user=[("xpath", "//s:senml[@v > 98765]")], timeout=300)
    e.disconnect()
    return codes

class Publish:
    def __init__(self, topic, payload, qos, retain, pid, pr):
        self.topic, self.payload, self.qos, self.retain, self.pid = topic, payload, qos, retain, pid
        self.props = pr
        self.sids = [v for k, v in pr if k == 0x0B]
        self.user = [v for k, v in pr if k == 0x26]
        self.alias = next((v for k, v in pr if k == 0x23), None)
        self.peids = [v for k, v in self.user if k == "peid"]

class Client:
    """One connection. A reader thread decodes everything; PUBLISHes are
    acknowledged as the spec says (PUBACK, PUBREC then PUBCOMP on PUBREL)
    unless auto_ack is False, and collected in self.msgs.
    timeout: the socket's, in seconds, from the CONNACK on (None: blocking,
    the bounds are wait_for's). Set here, never on self.sock afterwards: the
    reader thread is in a recv then, and CPython's recv in timeout mode,
    seeing the timeout switched under it, raises BlockingIOError (EAGAIN),
    which the reader takes for the end of the connection (closed) and the
    caller's close then sends the proxy a FIN: a client "closed right after
    its CONNACK" (resumed sessions, whose queued deliveries come at once:
    1 to 13 of the ~1,500 session connections of each 10 s churn run, 9
    runs of 9, before proxy_churn_concurrent passed the timeout here)."""
    def __init__(self, port, cid, receive_max=None, topic_alias_max=None, clean=True, session_expiry=None,
                 problem_info=None, auto_ack=True, keepalive=60, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30 if timeout is None else timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.auto_ack, self.msgs, self.acks, self.cond = auto_ack, [], {}, threading.Condition()
        self.aliases, self.closed, self.other = {}, False, []
        self.inflight = set()
        pr = []
        if receive_max: pr.append((0x21, receive_max))
        if topic_alias_max: pr.append((0x22, topic_alias_max))
        if session_expiry: pr.append((0x11, session_expiry))
        if problem_info is not None: pr.append((0x17, problem_info))
        self.sock.sendall(packet(0x10, s("MQTT") + bytes([5, 0x02 if clean else 0]) + struct.pack(">H", keepalive) +
                                 props(pr) + s(cid)))
        self.buf = b""
        t, body = self._packet()
        assert t >> 4 == 2 and body[1] == 0, "CONNACK %r" % body
        self.session_present = bool(body[0] & 1)
        self.connack_props, _ = parse_props(body, 2)
        self.server_receive_max = dict(self.connack_props).get(0x21, 65535)
        self.next_pid = 1
        self.sock.settimeout(timeout)
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _packet(self):
        while True:
            if len(self.buf) >= 2:
                try:
                    n, off = read_vbi(self.buf, 1)
                except IndexError:
                    n = None
                if n is not None and len(self.buf) >= off + n:
                    p = self.buf[:off + n]; self.buf = self.buf[off + n:]
                    return p[0], p[off:]
            d = self.sock.recv(1 << 16)
            if not d: raise EOFError
            self.buf += d

    def _run(self):
        try:
            while True:
                t, body = self._packet()
                self._handle(t, body)
        except (EOFError, OSError) as e:
            self.end_reason = repr(e)
            with self.cond:
                self.closed = True
                self.cond.notify_all()

    def _answer(self, data):
        """The reader's acknowledgement. A connection the peer is closing
        may refuse it (EPIPE, reset): what was received before the close
        (a DISCONNECT with its reason, say) is still read, to EOF."""
        try:
            self.sock.sendall(data)
        except OSError:
            pass

    def _handle(self, t, body):
        kind = t >> 4
        if kind == 3:
            qos, retain = (t >> 1) & 3, bool(t & 1)
            tl = struct.unpack(">H", body[:2])[0]
            topic = body[2:2 + tl].decode(); off = 2 + tl
            pid = None
            if qos:
                pid = struct.unpack(">H", body[off:off + 2])[0]; off += 2
            pr, off = parse_props(body, off)
            m = Publish(topic, body[off:], qos, retain, pid, pr)
            if m.alias is not None:
                if topic: self.aliases[m.alias] = topic
                else: m.topic = self.aliases.get(m.alias, "?alias-%d" % m.alias)
            if self.auto_ack:
                if qos == 1: self._answer(packet(0x40, struct.pack(">H", pid)))
                elif qos == 2: self._answer(packet(0x50, struct.pack(">H", pid)))
            with self.cond:
                self.msgs.append(m)
                self.cond.notify_all()
        elif kind == 6:   # PUBREL from the broker
            pid = struct.unpack(">H", body[:2])[0]
            self._answer(packet(0x70, struct.pack(">H", pid)))
        else:
            pid = struct.unpack(">H", body[:2])[0] if len(body) >= 2 else None
            if kind == 5:   # PUBREC for our QoS 2 publish
                self._answer(packet(0x62, struct.pack(">H", pid)))
                return
            with self.cond:
                if kind in (4, 7): self.inflight.discard(pid)
                self.acks[(kind, pid)] = body
                self.other.append((kind, body))
                self.cond.notify_all()

    def _pid(self):
        p = self.next_pid
        self.next_pid = p % 65535 + 1
        return p

    def wait_for(self, pred, timeout=20):
        end = time.time() + timeout
        with self.cond:
            while not pred():
                left = end - time.time()
                if left <= 0 or self.closed: return pred()
                self.cond.wait(left)
            return True

    def subscribe(self, filters, qos=1, sid=None, user=(), timeout=20):
        """filters: list of topic filters; returns (reason codes, SUBACK properties)."""
        pid = self._pid()
        pr = ([(0x0B, sid)] if sid else []) + [(0x26, kv) for kv in user]
        body = struct.pack(">H", pid) + props(pr) + b"".join(s(f) + bytes([qos]) for f in filters)
        self.sock.sendall(packet(0x82, body))
        assert self.wait_for(lambda: (9, pid) in self.acks, timeout), "no SUBACK"
        b = self.acks.pop((9, pid))
        p, off = parse_props(b, 2)
        return list(b[off:]), dict(p)

    def unsubscribe(self, filters, timeout=20):
        pid = self._pid()
        self.sock.sendall(packet(0xA2, struct.pack(">H", pid) + props([]) + b"".join(s(f) for f in filters)))
        assert self.wait_for(lambda: (11, pid) in self.acks, timeout), "no UNSUBACK"
        self.acks.pop((11, pid))

    def publish(self, topic, payload, qos=0, user=(), retain=False, alias=None, window=None, content_type=None):
        """Sends one PUBLISH; for QoS > 0 waits while `window` (default: the
        broker's Receive Maximum) publications are unacknowledged."""
        pr = ([(0x03, content_type)] if content_type else []) + ([(0x23, alias)] if alias else []) + \
             [(0x26, kv) for kv in user]
        body = s(topic)
        first = 0x30 | (qos << 1) | (1 if retain else 0)
        if qos:
            win = min(window or self.server_receive_max, self.server_receive_max)
            assert self.wait_for(lambda: len(self.inflight) < win, 30), "publish window stuck"
            pid = self._pid()
            with self.cond: self.inflight.add(pid)
            body += struct.pack(">H", pid)
        body += props(pr) + (payload.encode() if isinstance(payload, str) else payload)
        self.sock.sendall(packet(first, body))

    def drain(self, timeout=30):
        """Waits until every QoS > 0 publication is acknowledged."""
        return self.wait_for(lambda: not self.inflight, timeout)

    def send_raw(self, data): self.sock.sendall(data)

    def disconnect(self):
        try:
            self.sock.sendall(b"\xe0\x00")
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.th.join(5)
        self.sock.close()
