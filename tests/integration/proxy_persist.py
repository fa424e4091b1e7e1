#!/usr/bin/env python3
"""Phases of proxy_persist.sh: neighborhood subscriptions of persistent
sessions (Session Expiry Interval > 0) across reconnects through
wirematch-proxy, in front of a real mosquitto. Prints one line per check and
exits 1 at the first failure.

usage: proxy_persist.py PROXY_PORT RESOLUTION_JSON WORLD_GEOJSON PHASE N
  resume     subscribers (own identifier + nbhd, proxy identifier + nbhd,
             own identifier + nbhd overlapping a plain one with its own
             identifier) subscribe, leave with their sessions kept; N QoS 1
             publications are queued by the broker while they are away; they
             come back with Clean Start 0: each gets exactly the queued ones
             its subscriptions owe it, then exactly those of N more published
             while connected; they leave again, sessions kept.
  restarted  (through a proxy that never saw the subscriptions) the same
             subscribers resume; N publications: no neighborhood subscriber
             gets a single message (nothing can be attributed: withheld,
             never guessed); they leave with their sessions kept.
  resubscribed  (after restarted, same process) ps-proxy, whose ps/# in X2
             was made through the previous process under its first proxy
             identifier, subscribes ps/a/# in X1: the broker sends a copy
             for each subscription, the old one's under the old identifier;
             exactly the ps/a publications in X1 arrive, each once (the new
             process's identifiers do not repeat the old one's).
  clean      a subscriber starts a fresh session (Clean Start 1) with a plain
             subscription, then another fresh one with only a neighborhood
             subscription under the same identifier; N publications are
             queued; it resumes: exactly the neighborhood's arrive (the
             plain record of the dropped session is not applied).
  unsubscribed  deliveries the broker had queued for a neighborhood
             subscription are withheld after its UNSUBSCRIBE, on the same
             connection and after a resume (N unused).
  unacked    a SUBSCRIBE sent with DISCONNECT right behind it (no SUBACK
             relayed) is filtered on the resumed session (N unused).
"""
import random, socket, struct, sys, time, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props, s
from proxy_spatial import PROXY_SID_BASE, fail, ok, load

EXPIRY = 600

# subscriber -> [(filter, sid or None, nbhd or None)]
SUBS = {
    "ps-own":   [("ps/#", 5, "X1")],
    "ps-proxy": [("ps/#", None, "X2")],
    "ps-mixed": [("ps/a/#", 6, "X3"), ("ps/b/#", 8, None)],
}

def owed(name, sets, topic, peid):
    """Identifiers (None for a proxy one) of the subscriptions of `name` that want this publication."""
    out = []
    for flt, sid, nb in SUBS[name]:
        root = flt[:-2]
        if not topic.startswith(root + "/"): continue
        if nb is None or (peid is not None and peid in sets[nb]): out.append(sid)
    return out

def publish(port, rnd, sets, peids, n, tag):
    P = Client(port, "ps-pub-" + tag)
    pubs = []
    for i in range(n):
        r = rnd.random()
        if r < 0.4: peid = rnd.choice(sorted(sets[rnd.choice(["X1", "X2", "X3"])]))
        elif r < 0.9: peid = rnd.choice(peids)
        else: peid = None
        topic = "ps/%s/%d" % (rnd.choice("abc"), rnd.randrange(3))
        payload = "%s-%d" % (tag, i)
        P.publish(topic, payload, qos=1, user=[("peid", peid)] if peid else [])
        pubs.append((payload, topic, peid))
    if not P.drain(30): fail("publisher %s: acknowledgements missing" % tag)
    P.disconnect()
    return pubs

def connect(port, name, clean):
    c = Client(port, name, clean=clean, session_expiry=EXPIRY)
    if not clean and not c.session_present: fail("%s: broker did not resume the session" % name)
    return c

def check(name, c, pubs, sets, tag):
    want = {}
    for payload, topic, peid in pubs:
        sids = owed(name, sets, topic, peid)
        if sids: want[payload] = sids
    c.wait_for(lambda: sum(1 for m in c.msgs if m.payload.decode().startswith(tag + "-")) >= len(want), 30)
    time.sleep(0.5)
    got = [m for m in c.msgs if m.payload.decode().startswith(tag + "-")]
    by = {}
    for m in got: by.setdefault(m.payload.decode(), []).append(m)
    extra = [p for p in by if p not in want]
    if extra:
        peid = {p: pe for p, _, pe in pubs}
        fail("%s (%s): %d messages its subscriptions do not want, e.g. %r" %
             (name, tag, len(extra), [(p, peid[p]) for p in extra[:3]]))
    missing = [p for p in want if p not in by]
    if missing: fail("%s (%s): %d wanted messages missing, e.g. %r" % (name, tag, len(missing), missing[:3]))
    for p, ms in by.items():
        for m in ms:
            if any(s >= PROXY_SID_BASE for s in m.sids): fail("%s: a proxy identifier reached the client" % name)
            own = sorted(s for s in want[p] if s is not None)
            if sorted(m.sids) != own and len(ms) == 1:
                fail("%s: %s carried identifiers %r, expected %r" % (name, p, m.sids, own))
    ok("%s (%s): %d of %d publications, exactly the wanted ones" % (name, tag, len(got), len(pubs)))

def resume(port, sets, peids, n):
    rnd = random.Random(11)
    for name, subs in SUBS.items():
        c = connect(port, name, True)
        for flt, sid, nb in subs:
            codes, _ = c.subscribe([flt], qos=1, sid=sid, user=[("nbhd", nb)] if nb else [])
            if codes[0] >= 0x80: fail("%s: SUBACK 0x%02x" % (name, codes[0]))
        c.disconnect()
    queued = publish(port, rnd, sets, peids, n, "offline")
    cs = {name: connect(port, name, False) for name in SUBS}
    for name, c in cs.items(): check(name, c, queued, sets, "offline")
    live = publish(port, rnd, sets, peids, n, "online")
    for name, c in cs.items(): check(name, c, live, sets, "online")
    for c in cs.values(): c.disconnect()

def restarted(port, sets, peids, n):
    rnd = random.Random(12)
    cs = {name: connect(port, name, False) for name in SUBS}
    pubs = publish(port, rnd, sets, peids, n, "restarted")
    time.sleep(1.5)
    for name, c in cs.items():
        if c.msgs: fail("%s: %d deliveries the proxy could not attribute were forwarded" % (name, len(c.msgs)))
        ok("%s: nothing forwarded for subscriptions the proxy does not know (%d publications)" % (name, len(pubs)))
    for c in cs.values(): c.disconnect()

def resubscribed(port, sets, peids, n):
    rnd = random.Random(14)
    c = connect(port, "ps-proxy", False)
    codes, _ = c.subscribe(["ps/a/#"], qos=1, user=[("nbhd", "X1")])
    if codes[0] >= 0x80: fail("ps-proxy: SUBACK 0x%02x" % codes[0])
    SUBS["ps-proxy"] = [("ps/a/#", None, "X1")]   # what this process knows of the session
    pubs = publish(port, rnd, sets, peids, n, "resub")
    check("ps-proxy", c, pubs, sets, "resub")
    seen = {}
    for m in c.msgs: seen[m.payload] = seen.get(m.payload, 0) + 1
    twice = [p for p, k in seen.items() if k > 1]
    if twice:
        fail("ps-proxy: %d publications arrived twice: the broker's copy for the old process's ps/# (X2) "
             "was taken for the new ps/a/# (X1), e.g. %r" % (len(twice), twice[:3]))
    ok("ps-proxy: the old process's subscription's copies withheld, each wanted publication once")
    c.disconnect()

def clean(port, sets, peids, n):
    rnd = random.Random(13)
    # Plain "ps/#" under identifier 5, then a fresh session whose only
    # subscription is "ps/+/+" in X1 under the same identifier: a record of
    # the first one kept by mistake would pass everything.
    for flt, nb in (("ps/#", None), ("ps/+/+", "X1")):
        c = connect(port, "ps-own", True)
        if c.session_present: fail("Clean Start 1 resumed a session")
        codes, _ = c.subscribe([flt], qos=1, sid=5, user=[("nbhd", nb)] if nb else [])
        if codes[0] >= 0x80: fail("SUBACK 0x%02x" % codes[0])
        c.disconnect()
    SUBS["ps-own"] = [("ps/#", 5, "X1")]   # same deliveries as ps/+/+ for ps/x/y topics
    pubs = publish(port, rnd, sets, peids, n, "clean")
    c = connect(port, "ps-own", False)
    check("ps-own", c, pubs, sets, "clean")
    c.disconnect()

def outside(sets, peids):
    """A peid in no neighborhood, and one of X1."""
    anywhere = set().union(*sets.values())
    return next(p for p in peids if p not in anywhere), sorted(sets["X1"])[0]

def unsubscribed(port, sets, peids, n):
    # The broker keeps delivering what it had queued for a subscription after
    # its UNSUBSCRIBE (MQTT 5.0 §3.10.4), with its identifier: with no record
    # left to filter them, they must be withheld, on the same connection and
    # on the one that resumes the session.
    out, inside = outside(sets, peids)
    for resume in (False, True):
        name = "ps-unsub-%d" % resume
        c = Client(port, name, receive_max=1, auto_ack=False, session_expiry=EXPIRY)
        codes, _ = c.subscribe(["ps/u/#"], qos=1, sid=5, user=[("nbhd", "X1")])
        if codes[0] >= 0x80: fail("%s: SUBACK 0x%02x" % (name, codes[0]))
        P = Client(port, name + "-pub")
        P.publish("ps/u/in", "in", qos=1, user=[("peid", inside)])
        if not c.wait_for(lambda: len(c.msgs) >= 1, 20): fail("%s: the wanted publication did not arrive" % name)
        for i in range(3): P.publish("ps/u/out%d" % i, "out", qos=1, user=[("peid", out)])
        if not P.drain(30): fail("%s: publisher acknowledgements missing" % name)
        P.disconnect()
        time.sleep(0.5)   # queued at the broker behind the unacknowledged one (Receive Maximum 1)
        c.unsubscribe(["ps/u/#"])
        if resume:
            c.sock.close()   # leaves without acknowledging: the broker resends on resume
            c = Client(port, name, clean=False, session_expiry=EXPIRY, auto_ack=False)
            if not c.session_present: fail("%s: broker did not resume the session" % name)
        for _ in range(6):
            for m in list(c.msgs): c.send_raw(packet(0x40, struct.pack(">H", m.pid)))
            time.sleep(0.3)
        leaked = [m.topic for m in c.msgs if m.payload == b"out"]
        if leaked: fail("%s: deliveries queued before the UNSUBSCRIBE leaked: %r" % (name, leaked))
        ok("%s: nothing outside X1 forwarded after UNSUBSCRIBE%s" % (name, " and resume" if resume else ""))
        c.disconnect()

def unacked(port, sets, peids, n):
    # SUBSCRIBE and DISCONNECT in one write: the connection is gone before
    # the SUBACK comes back, yet the broker installed the subscription. The
    # session resumed later must filter it (and --prefilter must count it).
    out, inside = outside(sets, peids)
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(packet(0x10, s("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 60) + props([(0x11, EXPIRY)]) +
                        s("ps-unacked")))
    # The whole CONNACK is read: unread bytes at close() would make it a
    # reset, which may discard the SUBSCRIBE before the proxy reads it.
    head = sock.recv(2)
    if head[:1] != b"\x20" or len(head) < 2 or head[1] & 0x80: fail("no CONNACK")
    left = head[1]
    while left: left -= len(sock.recv(left))
    sub = packet(0x82, struct.pack(">H", 1) + props([(0x0B, 5), (0x26, ("nbhd", "X1"))]) + s("ps/k/#") + bytes([1]))
    sock.sendall(sub + b"\xe0\x00")
    sock.close()
    time.sleep(0.5)
    c = Client(port, "ps-unacked", clean=False, session_expiry=EXPIRY)
    if not c.session_present: fail("ps-unacked: broker did not resume the session")
    P = Client(port, "ps-unacked-pub")
    P.publish("ps/k/in", "in", qos=1, user=[("peid", inside)])
    P.publish("ps/k/out", "out", qos=1, user=[("peid", out)])
    if not P.drain(30): fail("ps-unacked: publisher acknowledgements missing")
    P.disconnect()
    c.wait_for(lambda: len(c.msgs) >= 1, 20)
    time.sleep(1)
    got = sorted(m.topic for m in c.msgs)
    if got != ["ps/k/in"]: fail("ps-unacked: got %r, expected exactly ['ps/k/in']" % got)
    ok("ps-unacked: a subscription whose SUBACK the proxy never relayed is filtered after resume")
    c.disconnect()

if __name__ == "__main__":
    port, res_json, world, phase, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    sets, peids = load(res_json, world)
    {"resume": resume, "restarted": restarted, "resubscribed": resubscribed, "clean": clean, "unsubscribed": unsubscribed,
     "unacked": unacked}[phase](port, sets, peids, n)
