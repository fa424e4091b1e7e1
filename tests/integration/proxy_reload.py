#!/usr/bin/env python3
"""Scenario of proxy_reload.sh: live connections through wirematch-proxy
across SIGHUP reloads of its resolution. Prints one line per check, exits 1
at the first failure.

usage: proxy_reload.py PORT PROXY_PID PROXY_STDERR LIVE_WMR JSON1 NEW_WMR JSON2 N
  1. subscribers: A X1 (proxy identifier), B X3 (own identifier 4), C X2
     (own identifier 6); N publications: each gets exactly its neighborhood
     of JSON1;
  2. NEW_WMR (X1 and X2 swapped, X3 gone) replaces LIVE_WMR, SIGHUP: the same
     connections now get exactly the neighborhoods of JSON2 by name (A the
     new X1, C the new X2, B nothing), and so does D, subscribed after it;
  3. a corrupt file replaces LIVE_WMR, SIGHUP: refused (stderr says why),
     and N more publications are filtered exactly as in 2.
"""
import json, os, random, signal, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client
from proxy_spatial import PROXY_SID_BASE, fail, ok

def sets_of(path):
    with open(path) as f: return {k: set(v["result"]) for k, v in json.load(f).items()}

def sighup(pid, log, marker, count):
    os.kill(pid, signal.SIGHUP)
    end = time.time() + 10
    while time.time() < end:
        with open(log) as f:
            if f.read().count(marker) >= count: return
        time.sleep(0.05)
    fail("the proxy did not log %r after SIGHUP" % marker)

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
    sighup(pid, log, "reloaded", 1)
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

main()
