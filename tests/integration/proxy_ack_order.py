#!/usr/bin/env python3
"""Scenarios of proxy_ack_order.sh: the answers the proxy makes itself must
not overtake the peer's answers to earlier packets of the same side
(dataplane/proxy_answers.h, REVIEW6 finding 5). Prints one line per check,
exits 1 at the first failure.

usage: proxy_ack_order.py client PORT   (proxy --resolution --schemas --prefilter in front of mosquitto)
       proxy_ack_order.py broker PORT   (proxy --resolution in front of fake_broker.py --aliases)
       proxy_ack_order.py late PORT     (proxy --resolution --schemas in front of fake_broker.py --ping-delay 3)

client: one raw client pipelines, in ONE write, packets the broker answers
and packets the proxy answers itself, then a PINGREQ; every answer it gets
is logged in arrival order (PUBREC included) and must come in the order of
the packets:
  (a) QoS 1 PUBLISH 1 to a topic with a subscriber (the broker answers),
      QoS 1 PUBLISH 2 and QoS 2 PUBLISH 3 to topics nobody can receive
      (--prefilter: PUBACK / PUBREC 0x10 from the proxy), QoS 2 PUBLISH 4 to
      the subscriber, QoS 1 PUBLISH 5 to nobody, PINGREQ (5 rounds);
  (b) SUBSCRIBE 101 plain, SUBSCRIBE 102 with an unknown nbhd (SUBACK 0x80
      from the proxy), UNSUBSCRIBE 103, SUBSCRIBE 104 with an invalid
      xpath (0x80 from the proxy once a compile has validated it: held
      until then, so the PINGRESP may come before its SUBACK), PINGREQ;
  (c) SUBSCRIBE 201 with a new content filter (held until compiled, then
      sent to the broker), SUBSCRIBE 202 with a refused one, PINGREQ (it
      passes the held SUBSCRIBE: its PINGRESP may come before the SUBACKs,
      which §4.6 allows; the SUBACKs must come in order).
late: (c) with a broker whose PINGRESP comes after the compile has ended
(fake_broker.py --ping-delay: 3 s late, answering nothing meanwhile):
SUBSCRIBE 301 with a new content filter, SUBSCRIBE 302 with a refused one,
PINGREQ. The PINGREQ passes the held 301 to the broker; the compile ends,
301 goes, 302 is refused; the broker answers PINGRESP, then SUBACK 301.
The refusal must follow SUBACK 301, not the PINGRESP: the PINGREQ is one of
the client's packets the broker answers, counted as such. Before: it went
uncounted, so the PINGRESP counted as the answer to 301 and released the
refusal of 302 ahead of SUBACK 301 (the flake of (c) under load, where
mosquitto's PINGRESP came after the compile; here every time).
broker: fake_broker.py sends a subscriber of X1 eight QoS 1 PUBLISHes at
once, 1, 4 and 7 outside X1 (withheld: the proxy acknowledges them to the
broker on the client's behalf); the client acknowledges what it receives,
in order, 0.3 s late. MQTT 5.0 [MQTT-4.6.0-2]: the broker (fake_broker.py's
stdout, "puback ID") must get PUBACK 1 to 8 in order."""
import os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s
from proxy_spatial import fail, ok

NAMES = {4: "PUBACK", 5: "PUBREC", 7: "PUBCOMP", 9: "SUBACK", 11: "UNSUBACK", 13: "PINGRESP"}

class Logged(Client):
    """Client that also logs every answer it receives, in arrival order: (name, packet id, first reason code)."""
    def __init__(self, *a, **k):
        self.log = []
        Client.__init__(self, *a, **k)

    def _handle(self, t, body):
        kind = t >> 4
        if kind in NAMES:
            pid = struct.unpack(">H", body[:2])[0] if kind != 13 else None
            code = None
            if kind in (4, 5, 7): code = body[2] if len(body) > 2 else 0
            elif kind in (9, 11): code = body[-1]
            with self.cond: self.log.append((NAMES[kind], pid, code))
        Client._handle(self, t, body)

def pub(topic, pid, qos): return packet(0x30 | qos << 1, s(topic) + struct.pack(">H", pid) + props([]) + b"x")

def sub(pid, topic, user=()): return packet(0x82, struct.pack(">H", pid) + props([(0x26, kv) for kv in user]) + s(topic) + b"\x01")

def exchange(c, data, until=None, timeout=30):
    """Sends data; waits for its PINGRESP and, if given, until(answers so far); then 0.2 s for anything more
    (an answer after them would be out of order or extra)."""
    n0 = len(c.log)
    c.send_raw(data)
    def done():
        got = c.log[n0:]
        return any(x[0] == "PINGRESP" for x in got) and (until is None or until(got))
    if not c.wait_for(done, timeout): fail("no PINGRESP or answers missing; got %r" % c.log[n0:])
    time.sleep(0.2)
    return [x for x in c.log[n0:] if x[0] != "PUBCOMP"]

def check_held(case, got, want, first_held):
    """got must be want (the answers §4.6 orders, in the order of their packets) plus one PINGRESP, which may
    come before the answers from want[first_held] on: the PINGREQ passes a SUBSCRIBE held for its compile and
    what is behind it (proxy_frame.h), never a packet that was not held."""
    rest = [x for x in got if x[0] != "PINGRESP"]
    at = [i for i, x in enumerate(got) if x[0] == "PINGRESP"]
    if rest != want or len(at) != 1 or at[0] < first_held:
        fail("(%s) answers %r, want %r with one PINGRESP after the first %d" % (case, got, want, first_held))
    return "PINGRESP after %d of %d" % (at[0], len(want))

def client(port):
    S = Client(port, "ao-sub")
    if S.subscribe(["ao/wanted"], qos=2)[0] != [2]: fail("subscriber")
    c = Logged(port, "ao-pub")
    for r in range(5):
        b = 10 * r
        got = exchange(c, pub("ao/wanted", b + 1, 1) + pub("ao/nobody", b + 2, 1) + pub("ao/nobody", b + 3, 2) +
                       pub("ao/wanted", b + 4, 2) + pub("ao/nobody", b + 5, 1) + b"\xc0\x00")
        want = [("PUBACK", b + 1, 0), ("PUBACK", b + 2, 0x10), ("PUBREC", b + 3, 0x10), ("PUBREC", b + 4, 0),
                ("PUBACK", b + 5, 0x10), ("PINGRESP", None, None)]
        if got != want: fail("(a) round %d: answers %r, want %r" % (r, got, want))
    ok("(a) --prefilter's PUBACK / PUBREC 0x10 follow the broker's answers to earlier PUBLISHes (5 rounds): %r"
       % [x[:2] for x in got])
    got = exchange(c, sub(101, "ao/x") + sub(102, "ao/y", [("nbhd", "NOPE")]) +
                   packet(0xA2, struct.pack(">H", 103) + props([]) + s("ao/x")) +
                   sub(104, "ao/z", [("xpath", "//s:senml[")]) + b"\xc0\x00")
    # 104's text is new: validated by a compile, its SUBSCRIBE held until then (the PINGREQ may pass it)
    where = check_held("b", got, [("SUBACK", 101, 1), ("SUBACK", 102, 0x80), ("UNSUBACK", 103, 0),
                                  ("SUBACK", 104, 0x80)], 3)
    ok("(b) refused SUBSCRIBEs answered in order between the broker's SUBACK and UNSUBACK (%s): %r"
       % (where, [x[:2] for x in got]))
    got = exchange(c, sub(201, "ao/c1", [("xpath", '//s:senml[matches(@n, "^ao%d.*$")]' % int(time.time()))]) +
                   sub(202, "ao/c2", [("xpath", '//s:senml[matches(@n, "(x")]')]) + b"\xc0\x00",
                   until=lambda g: sum(1 for x in g if x[0] == "SUBACK") >= 2, timeout=120)
    # §4.6 orders the SUBACKs (the order of the SUBSCRIBEs), not PINGRESP relative to them: the PINGREQ passes
    # the held SUBSCRIBE 201 (a held client keeps its keep-alive, §3.1.2.10), so its PINGRESP may come first.
    where = check_held("c", got, [("SUBACK", 201, 1), ("SUBACK", 202, 0x80)], 0)
    ok("(c) a refused SUBSCRIBE behind a held content SUBSCRIBE is answered after it (%s): %r"
       % (where, [x[:2] for x in got]))
    c.disconnect(); S.disconnect()

def late(port):
    c = Logged(port, "ao-late-ping")
    got = exchange(c, sub(301, "ao/l1", [("xpath", '//s:senml[matches(@n, "^late%d.*$")]' % int(time.time()))]) +
                   sub(302, "ao/l2", [("xpath", '//s:senml[matches(@n, "(x")]')]) + b"\xc0\x00",
                   until=lambda g: sum(1 for x in g if x[0] == "SUBACK") >= 2, timeout=120)
    where = check_held("late", got, [("SUBACK", 301, 1), ("SUBACK", 302, 0x80)], 0)
    ok("(late) a refused SUBSCRIBE behind a held one follows its SUBACK, not the PINGRESP of a PINGREQ "
       "that passed it (%s): %r" % (where, [x[:2] for x in got]))
    c.disconnect()

def broker(port):
    c = Client(port, "ao-late", topic_alias_max=10, auto_ack=False)
    if c.subscribe(["t/#"], qos=1, user=[("nbhd", "X1")])[0] != [1]: fail("subscriber")
    if not c.wait_for(lambda: len(c.msgs) >= 5, 15): fail("got %d of the 5 deliveries in X1" % len(c.msgs))
    time.sleep(0.3)
    for m in c.msgs: c.send_raw(packet(0x40, struct.pack(">H", m.pid)))
    ok("client acknowledged %r, 0.3 s late" % [m.pid for m in c.msgs])
    time.sleep(0.5)
    c.disconnect()

if __name__ == "__main__":
    {"client": client, "broker": broker, "late": late}[sys.argv[1]](int(sys.argv[2]))
