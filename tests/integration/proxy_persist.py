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
  clean      a subscriber starts a fresh session (Clean Start 1) with a plain
             subscription, then another fresh one with only a neighborhood
             subscription under the same identifier; N publications are
             queued; it resumes: exactly the neighborhood's arrive (the
             plain record of the dropped session is not applied).
"""
import random, sys, time, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client
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

if __name__ == "__main__":
    port, res_json, world, phase, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    sets, peids = load(res_json, world)
    {"resume": resume, "restarted": restarted, "clean": clean}[phase](port, sets, peids, n)
