#!/usr/bin/env python3
"""Scenario of proxy_reload.sh: live connections through wirematch-proxy
across SIGHUP reloads of its resolution. Prints one line per check, exits 1
at the first failure.

usage: proxy_reload.py PORT PROXY_PID PROXY_STDERR LIVE_WMR JSON1 NEW_WMR JSON2 N [BROKER_PORT]
Without BROKER_PORT (a proxy without --prefilter):
  1. subscribers: A X1 (proxy identifier), B X3 (own identifier 4), C X2
     (own identifier 6); N publications: each gets exactly its neighborhood
     of JSON1;
  2. NEW_WMR (X1 and X2 swapped, X3 gone) replaces LIVE_WMR, SIGHUP: the same
     connections now get exactly the neighborhoods of JSON2 by name (A the
     new X1, C the new X2, B nothing), and so does D, subscribed after it;
  3. a corrupt file replaces LIVE_WMR, SIGHUP: refused (stderr says why),
     and N more publications are filtered exactly as in 2.
With BROKER_PORT (the proxy runs with --prefilter): what the prefilter lets
reach the broker, seen by W, a subscriber connected straight to the broker
(invisible to the proxy); 4 publishers through the proxy (spread over its
workers), the publications dealt out among them:
  1. S1 X1 and S3 X3 through the proxy: W gets exactly the publications
     with a peid in X1 or X3 of JSON1;
  2. reload to NEW_WMR (X1 and X2 swapped, X3 gone): exactly X1 of JSON2
     (S1 by name, S3's neighborhood is gone), then S2 subscribes to X2 (the
     old X1) after the reload: exactly X1 | X2 of JSON2;
  3. corrupt file, refused: unchanged.
"""
import json, os, random, signal, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client
from proxy_spatial import APPLIED, PROXY_SID_BASE, fail, ok, sighup

def sets_of(path):
    with open(path) as f: return {k: set(v["result"]) for k, v in json.load(f).items()}

def replace(path, data):
    tmp = path + ".new"
    with open(tmp, "wb") as f: f.write(data)
    os.rename(tmp, path)

def round_(subs, sets, pool, n, tag, rnd, port):
    P = Client(port, "rl-pub-" + tag)
    pubs = []
    for i in range(n):
        r = rnd.random()
        peid = rnd.choice(pool) if r < 0.9 else None
        P.publish("rl/x", "%s-%d" % (tag, i), qos=rnd.randrange(3), user=[("peid", peid)] if peid else [])
        pubs.append(peid)
    if not P.drain(30): fail("publisher: acknowledgements missing")
    P.disconnect()
    for name, (c, nb, sid) in subs.items():
        want = {i for i, p in enumerate(pubs) if p is not None and nb in sets and p in sets[nb]}
        c.wait_for(lambda: sum(1 for m in c.msgs if m.payload.decode().startswith(tag + "-")) >= len(want), 20)
    time.sleep(0.7)
    for name, (c, nb, sid) in subs.items():
        want = {i for i, p in enumerate(pubs) if p is not None and nb in sets and p in sets[nb]}
        got = [m for m in c.msgs if m.payload.decode().startswith(tag + "-")]
        ids = [int(m.payload.decode().split("-")[1]) for m in got]
        if len(ids) != len(set(ids)): fail("%s (%s): duplicates" % (name, tag))
        if set(ids) != want:
            fail("%s (%s, %s): got %d, wanted %d; unwanted %r, missing %r" %
                 (name, tag, nb, len(ids), len(want), sorted(set(ids) - want)[:5], sorted(want - set(ids))[:5]))
        for m in got:
            if any(s >= PROXY_SID_BASE for s in m.sids) or m.sids != ([sid] if sid else []):
                fail("%s: identifiers %r" % (name, m.sids))
        ok("%s (%s): exactly its %d of %d publications (%s)" % (name, tag, len(ids), n, nb))

def main():
    port, pid, log, live, j1, new, j2, n = sys.argv[1:9]
    port, pid, n = int(port), int(pid), int(n)
    s1, s2 = sets_of(j1), sets_of(j2)
    pool = sorted(s1["X1"] | s1["X2"] | s1["X3"])
    rnd = random.Random(3)
    subs = {}
    for name, nb, sid in (("A", "X1", None), ("B", "X3", 4), ("C", "X2", 6)):
        c = Client(port, "rl-" + name)
        codes, _ = c.subscribe(["rl/#"], qos=1, sid=sid, user=[("nbhd", nb)])
        if codes[0] >= 0x80: fail("%s: SUBACK 0x%02x" % (name, codes[0]))
        subs[name] = (c, nb, sid)
    round_(subs, s1, pool, n, "before", rnd, port)

    with open(new, "rb") as f: replace(live, f.read())
    sighup(pid, log, APPLIED, 1)
    D = Client(port, "rl-D")
    codes, _ = D.subscribe(["rl/#"], qos=1, user=[("nbhd", "X1")])
    if codes[0] >= 0x80: fail("D: SUBACK 0x%02x" % codes[0])
    subs["D"] = (D, "X1", None)
    # B's X3 is gone from the new file: it must get nothing (an empty set).
    round_(subs, s2, pool, n, "after", rnd, port)

    replace(live, b"WMR1 this is not a resolution file\n")
    sighup(pid, log, "reload refused", 1)
    round_(subs, s2, pool, n, "refused", rnd, port)
    # A new subscription to X3 is refused now: the live tables are the second file's.
    E = Client(port, "rl-E", problem_info=1)
    codes, pr = E.subscribe(["rl/#"], qos=1, user=[("nbhd", "X3")])
    if codes[0] != 0x80: fail("X3 after the reload: SUBACK 0x%02x" % codes[0])
    ok("X3 is unknown to the live tables: SUBACK 0x80 %r" % pr.get(0x1F))
    for c, _, _ in subs.values(): c.disconnect()
    E.disconnect()

def prefilter_round(W, pubs, sets, nbs, pool, n, tag, rnd):
    """n publications through the proxy; W (straight at the broker) must see
    exactly those some subscription of neighborhoods nbs (in sets) can receive."""
    sent = []
    for i in range(n):
        peid = rnd.choice(pool) if rnd.random() < 0.9 else None
        pubs[i % len(pubs)].publish("rl/%s/%d" % (tag, i), "x", qos=rnd.randrange(3),
                                    user=[("peid", peid)] if peid else [])
        sent.append(peid)
    for P in pubs:
        if not P.drain(30): fail("publisher: acknowledgements missing")
    want = {i for i, p in enumerate(sent) if p is not None and any(p in sets.get(nb, ()) for nb in nbs)}
    def seen(): return {int(m.topic.split("/")[2]) for m in W.msgs if m.topic.split("/")[1] == tag}
    W.wait_for(lambda: len(seen()) >= len(want), 20)
    time.sleep(0.7)
    got = seen()
    if got != want:
        fail("W (%s): %d reached the broker, %d should; unwanted %r, missing %r" %
             (tag, len(got), len(want), sorted(got - want)[:5], sorted(want - got)[:5]))
    ok("prefilter (%s): exactly the %d of %d publications that %s can receive reached the broker" %
       (tag, len(got), n, " or ".join(nbs)))
    return n - len(got)

def prefilter_main():
    port, pid, log, live, j1, new, j2, n, bport = sys.argv[1:10]
    port, pid, n, bport = int(port), int(pid), int(n), int(bport)
    s1, s2 = sets_of(j1), sets_of(j2)
    pool = sorted(s1["X1"] | s1["X2"] | s1["X3"])
    rnd = random.Random(4)
    W = Client(bport, "rl-W")
    W.subscribe(["rl/#"], qos=2)
    subs = []
    for name, nb in (("S1", "X1"), ("S3", "X3")):
        c = Client(port, "rl-" + name)
        codes, _ = c.subscribe(["rl/#"], qos=1, user=[("nbhd", nb)])
        if codes[0] >= 0x80: fail("%s: SUBACK 0x%02x" % (name, codes[0]))
        subs.append(c)
    pubs = [Client(port, "rl-P%d" % i) for i in range(4)]
    dropped = prefilter_round(W, pubs, s1, ["X1", "X3"], pool, n, "p1", rnd)

    with open(new, "rb") as f: replace(live, f.read())
    sighup(pid, log, APPLIED, 1)
    dropped += prefilter_round(W, pubs, s2, ["X1"], pool, n, "p2", rnd)
    S2 = Client(port, "rl-S2")
    codes, _ = S2.subscribe(["rl/#"], qos=1, user=[("nbhd", "X2")])
    if codes[0] >= 0x80: fail("S2: SUBACK 0x%02x" % codes[0])
    subs.append(S2)
    dropped += prefilter_round(W, pubs, s2, ["X1", "X2"], pool, n, "p3", rnd)

    replace(live, b"WMR1 this is not a resolution file\n")
    sighup(pid, log, "reload refused", 1)
    dropped += prefilter_round(W, pubs, s2, ["X1", "X2"], pool, n, "p4", rnd)
    for c in subs + pubs + [W]: c.disconnect()
    print("dropped %d" % dropped, flush=True)

if len(sys.argv) > 9: prefilter_main()
else: main()
