#!/usr/bin/env python3
"""Scenario of proxy_content_room.sh: content filters valid alone that do not
compile together (the worker's path automaton is bounded by WM_XPF_MAX_STATES,
65,536 states; finding 3 of REVIEW6). Prints one line per check, exits 1 at
the first failure.

usage: proxy_content_room.py new PORT PAYLOAD.exi
       proxy_content_room.py resume PORT PAYLOAD.exi
       proxy_content_room.py burst PORT PAYLOAD.exi
PAYLOAD.exi: a SenML pack with one record, v = 23.1 (ex1.gen.exi).

new: A takes //s:senml/*^10 (10 wildcard steps: valid alone, and two such
texts do not fit together); D sends a slow matches() text (a compile in
flight), then B //s:bn/*^10 and C //s:senml[@v > 5] come while it runs, so
the worker compiles B's and C's texts in one job. B must get SUBACK 0x97
(Quota exceeded) whose Reason String says the worker's set is full and names
the limit, C and D are granted, C's filter delivers the pack and A's text
(which selects nothing in SenML) keeps its place: B's text again is refused
again, and once A has gone B's text is granted.

resume: S (persistent session) subscribes rr/1 //s:senml[@v > 0] and rr/2
//s:bn/*^10 and gets the pack on rr/1; S leaves; A takes //s:senml/*^10; S
resumes: rr/1 must still deliver (its text fits), rr/2's text does not fit
(the summary counts it, stderr names it: checked by the .sh); S subscribing
rr/2 again gets 0x97 with the reason; once A has gone it is granted.

burst (REVIEW7 finding 2): A takes //s:senml/*^10; B pipelines 16
SUBSCRIBEs, each with a distinct //s:bK/*^10 (valid alone, none fits with
A's); C then subscribes //s:senml[@v > 5]. Every one of B's gets 0x97 with
the reason, C is granted and gets the pack. B sends the same 16 again: 0x97
again, with the same reason. The set builds this cost (about one per
refused text in the first round, none in the second) are checked by the .sh
on the summary: before, each refused text cost log2(n) + 1 failing builds and
every round cost the same again."""
import os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s
from proxy_spatial import fail, ok

mode, port, pay = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
CT = "application/exi; schema=senml"
# 10 wildcard steps: each text alone is small, two under different names exceed the limit (so do the
# review's 14-step texts, whose every set compile takes over a minute under ASan)
wide = lambda name: "//s:%s" % name + "/*" * 10


def suback(c, pid, timeout=60):
    if not c.wait_for(lambda: (9, pid) in c.acks, timeout): fail("no SUBACK %d" % pid)
    b = c.acks.pop((9, pid))
    from proxy_mqtt5 import parse_props
    p, off = parse_props(b, 2)
    return list(b[off:]), dict(p)


def full(codes, pr, what):
    why = pr.get(0x1F, "")
    if codes != [0x97] or "content filters are full" not in why or "WM_XPF_MAX_STATES" not in why \
            or "compiles alone" not in why:
        fail("%s: SUBACK %r %r, expected 0x97 with the reason" % (what, codes, pr))
    return why


def gets(c, topic, n0, want, what):
    """c gets (want) or does not get (not want) one more pack on topic."""
    pub = Client(port, "room-pub-%d" % time.monotonic_ns())
    pub.publish(topic, pay, qos=1, content_type=CT)
    if not pub.drain(): fail("publish to %s not acknowledged" % topic)
    got = c.wait_for(lambda: sum(m.topic == topic for m in c.msgs) > n0, 5 if want else 1.5)
    pub.disconnect()
    if got != want: fail("%s: %s the pack on %s" % (what, "did not get" if want else "got", topic))


if mode == "new":
    a = Client(port, "room-a")
    codes, pr = a.subscribe(["sl/a"], user=[("xpath", wide("senml"))], timeout=60)
    if codes != [1]: fail("A: SUBACK %r %r" % (codes, pr))
    d, b, c = Client(port, "room-d"), Client(port, "room-b"), Client(port, "room-c")
    sub = lambda pid, topic, q: packet(0x82, struct.pack(">H", pid) + props([(0x26, ("xpath", q))]) + s(topic) + b"\x01")
    d.send_raw(sub(1, "sl/d", '//s:senml[matches(@vs, ".{230}s%d")]' % time.time_ns()))
    time.sleep(0.2)
    b.send_raw(sub(1, "sl/b", wide("bn")))
    c.send_raw(sub(1, "sl/c", "//s:senml[@v > 5]"))
    codes, pr = suback(d, 1)
    if codes != [1]: fail("D: SUBACK %r %r" % (codes, pr))
    why = full(*suback(b, 1), "B, valid alone, with A's text on the worker")
    codes, pr = suback(c, 1)
    if codes != [1]: fail("C, a small text that came with B's: SUBACK %r %r" % (codes, pr))
    ok("B's text refused for want of room (0x97 %r), C's and D's granted" % why)
    gets(c, "sl/c", 0, True, "C")
    b2 = Client(port, "room-b2")
    full(*b2.subscribe(["sl/b2"], user=[("xpath", wide("bn"))], timeout=60), "B's text again, A still there")
    ok("C's filter delivers; B's text again refused while A holds its text")
    a.disconnect()
    time.sleep(0.5)
    codes, pr = b2.subscribe(["sl/b3"], user=[("xpath", wide("bn"))], timeout=60)
    if codes != [1]: fail("B's text once A has gone: SUBACK %r %r" % (codes, pr))
    gets(c, "sl/c", 1, True, "C, after B's text came in")
    ok("once A has gone B's text is granted; C's filter still delivers")
elif mode == "resume":
    s1 = Client(port, "room-s", clean=True, session_expiry=3600)
    for topic, q in (("rr/1", "//s:senml[@v > 0]"), ("rr/2", wide("bn"))):
        codes, pr = s1.subscribe([topic], user=[("xpath", q)], timeout=60)
        if codes != [1]: fail("S %s: SUBACK %r %r" % (topic, codes, pr))
    gets(s1, "rr/1", 0, True, "S before it left")
    s1.disconnect()
    time.sleep(0.5)
    a = Client(port, "room-a")
    codes, pr = a.subscribe(["rr/a"], user=[("xpath", wide("senml"))], timeout=60)
    if codes != [1]: fail("A while S is away: SUBACK %r %r" % (codes, pr))
    s2 = Client(port, "room-s", clean=False, session_expiry=3600)
    if not s2.session_present: fail("S: no session present")
    gets(s2, "rr/1", 0, True, "S resumed, rr/1 (//s:senml[@v > 0] fits)")
    ok("S resumed: rr/1 still delivers")
    full(*s2.subscribe(["rr/2"], user=[("xpath", wide("bn"))], timeout=60), "S re-subscribing rr/2, A still there")
    a.disconnect()
    time.sleep(0.5)
    codes, pr = s2.subscribe(["rr/2"], user=[("xpath", wide("bn"))], timeout=60)
    if codes != [1]: fail("S re-subscribing rr/2 once A has gone: SUBACK %r %r" % (codes, pr))
    gets(s2, "rr/1", 1, True, "S, rr/1 at the end")
    s2.disconnect()
    ok("S re-subscribing rr/2: 0x97 while A holds its text, granted once A has gone")
elif mode == "burst":
    N = 16
    a = Client(port, "room-a")
    codes, pr = a.subscribe(["sb/a"], user=[("xpath", wide("senml"))], timeout=60)
    if codes != [1]: fail("A: SUBACK %r %r" % (codes, pr))
    b, c = Client(port, "room-b"), Client(port, "room-c")
    sub = lambda pid, topic, q: packet(0x82, struct.pack(">H", pid) + props([(0x26, ("xpath", q))]) + s(topic) + b"\x01")
    for rnd in range(2):
        b.send_raw(b"".join(sub(rnd * N + i + 1, "sb/b%d" % i, wide("b%d" % i)) for i in range(N)))
        if rnd == 0:
            codes, pr = c.subscribe(["sb/c"], user=[("xpath", "//s:senml[@v > 5]")], timeout=120)
            if codes != [1]: fail("C, a small text after B's burst: SUBACK %r %r" % (codes, pr))
        for i in range(N):
            why = full(*suback(b, rnd * N + i + 1, 120), "B's text %d, round %d" % (i, rnd + 1))
        ok("round %d: B's %d texts refused for want of room (0x97 %r)" % (rnd + 1, N, why))
    gets(c, "sb/c", 0, True, "C")
    ok("C's filter, granted after B's burst, delivers")
else:
    fail("usage")
