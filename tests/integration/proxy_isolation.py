#!/usr/bin/env python3
"""Scenarios of proxy_isolation.sh: a delivery must never be attributed to a
subscription it was not made for (reviewer findings 1-5, /work/REVIEW.md of
2026-12-01). Prints one line per check, exits 1 at the first failure.

usage: proxy_isolation.py SCENARIO PORT RES_JSON WORLD [ARGS]
  resub PROXY_ERR      a subscriber with Receive Maximum 1 holds a delivery of
                       t/# (own identifier 5, X1) unacknowledged while the
                       broker queues 3 QoS 1 publications outside every
                       neighborhood, then subscribes t/# again with X2 (no
                       identifier; then again with identifier 6): the queued
                       ones (they carry identifier 5) must be withheld, a
                       later X2 publication delivered.
  reload PID ERR LIVE NEW   A: t/# with X1 (proxy identifier); NEW (X2 listed
                       first) replaces LIVE by rename, SIGHUP; A: t/+ with X2.
                       20 publications in X1 not X2, 20 in X2 not X1 on t/x:
                       A gets each exactly once (the identifier of its X2
                       subscription must not name its X1 one).
  xreload PID ERR DOC  C: zz/# with one query, unsubscribed; A: sen/# with
                       @u = "Cel"; SIGHUP (content slots renumbered); A: sen/+
                       with @u = "V". 20 "Cel" documents DOC on sen/x: A gets
                       each exactly once.
  inplace PID ERR LIVE NEW BAD   an X1 subscriber; NEW (valid, X2 first) is
                       written over LIVE in place (same inode, no signal):
                       publications in X2 not X1 still withheld, X1 ones
                       delivered; then BAD (corrupt) in place + SIGHUP:
                       refused, nothing changes.
  manysids             (against a minimal fake broker, fake_broker.py, that
                       lists every matching identifier in one PUBLISH, as
                       §3.3.4 allows and HiveMQ/EMQX do; mosquitto sends one
                       PUBLISH per subscription, so this is the only way to
                       get more than 64 identifiers on one PUBLISH): 65
                       overlapping X1 subscriptions with own identifiers 1..65
                       and one with a proxy identifier: a publication outside
                       X1 is withheld, one inside delivered with exactly the
                       65 client identifiers.
  hup2 PID ERR LIVE FEWER   a second SIGHUP while the first reload is still
                       reaching the workers (150 pairs 0-3 ms apart, --threads
                       2, a publisher flooding meanwhile): remembered and
                       applied after it, never refused (SIGHUPs arriving during
                       one reload may be applied as one). The last pair's
                       second SIGHUP follows FEWER (4 neighborhoods) renamed
                       over LIVE: the last reload must have loaded it. Racy by
                       nature: the binary before the fix refused 13-19 of 150.
"""
import itertools, os, signal, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet
from proxy_spatial import APPLIED, PROXY_SID_BASE, fail, ok, sighup, load

def settle(c, n, timeout=10):
    c.wait_for(lambda: len(c.msgs) >= n, timeout)
    time.sleep(1.0)

def resub(port, sets, peids, err):
    X1, X2 = sets["X1"], sets["X2"]
    inside = sorted(X1 - X2)[0]
    out = next(p for p in peids if all(p not in v for v in sets.values()))
    in2 = sorted(X2 - X1)[0]
    for mode, sid2 in (("no identifier", None), ("identifier 6", 6)):
        tag = "r%s" % (sid2 or 0)
        c = Client(port, "iso-" + tag, receive_max=1, auto_ack=False)
        codes, _ = c.subscribe(["t/#"], qos=1, sid=5, user=[("nbhd", "X1")])
        P = Client(port, "iso-pub-" + tag)
        P.publish("t/in", "held", qos=1, user=[("peid", inside)])
        if not c.wait_for(lambda: len(c.msgs) >= 1, 10): fail("resub %s: first delivery missing" % mode)
        for i in range(3): P.publish("t/out%d" % i, "queued", qos=1, user=[("peid", out)])
        if not P.drain(10): fail("resub %s: publisher not acknowledged" % mode)
        time.sleep(0.5)   # mosquitto queues them for c (window full), identifier 5
        codes += c.subscribe(["t/#"], qos=1, sid=sid2, user=[("nbhd", "X2")])[0]
        if any(x >= 0x80 for x in codes): fail("resub %s: SUBACK codes %r" % (mode, codes))
        acked = set()
        for _ in range(8):   # acknowledge whatever arrives, so the broker sends what it queued
            for m in list(c.msgs):
                if m.pid not in acked:
                    acked.add(m.pid)
                    c.send_raw(packet(0x40, struct.pack(">H", m.pid)))
            time.sleep(0.25)
        P.publish("t/x2", "wanted", qos=1, user=[("peid", in2)])
        c.wait_for(lambda: any(m.payload == b"wanted" for m in c.msgs), 10)
        time.sleep(0.5)
        got = [(m.topic, m.payload, m.sids) for m in c.msgs]
        leaked = [g for g in got if g[1] == b"queued"]
        if leaked: fail("resub %s: deliveries queued for the replaced X1 subscription leaked: %r" % (mode, leaked))
        want = [g for g in got if g[1] == b"wanted"]
        if len(want) != 1 or want[0][2] != ([sid2] if sid2 else []):
            fail("resub %s: the X2 publication after the re-subscription: %r" % (mode, got))
        if any(s >= PROXY_SID_BASE for g in got for s in g[2]): fail("resub %s: proxy identifier %r" % (mode, got))
        ok("resub %s: 3 deliveries queued under identifier 5 withheld, X2 one delivered" % mode)
        c.disconnect(); P.disconnect()

def replace(path, data):
    with open(path + ".new", "wb") as f: f.write(data)
    os.rename(path + ".new", path)

def exactly_once(A, n_want, what):
    settle(A, n_want)
    topics = [m.payload for m in A.msgs]
    dup = len(topics) - len(set(topics))
    if len(A.msgs) != n_want or dup:
        fail("%s: A got %d deliveries (%d duplicates), owed %d" % (what, len(A.msgs), dup, n_want))
    ok("%s: A got each of its %d publications exactly once" % (what, n_want))

def reload_(port, sets, peids, pid, err, live, new):
    X1, X2 = sets["X1"], sets["X2"]
    A = Client(port, "iso-A")
    if A.subscribe(["t/#"], qos=0, user=[("nbhd", "X1")])[0] != [0]: fail("reload: SUBACK X1")
    with open(new, "rb") as f: replace(live, f.read())
    sighup(pid, err, APPLIED, 1)
    if A.subscribe(["t/+"], qos=0, user=[("nbhd", "X2")])[0] != [0]: fail("reload: SUBACK X2")
    P = Client(port, "iso-P")
    only1, only2 = sorted(X1 - X2)[:20], sorted(X2 - X1)[:20]
    if len(only1) < 20 or len(only2) < 20: fail("reload: the example neighborhoods overlap too much")
    for i in range(20):
        P.publish("t/x", "1-%d" % i, qos=0, user=[("peid", only1[i])])
        P.publish("t/x", "2-%d" % i, qos=0, user=[("peid", only2[i])])
    exactly_once(A, 40, "reload (X2 now first in the file)")
    A.disconnect(); P.disconnect()

CT = "application/exi; schema=senml"

def xreload(port, sets, peids, pid, err, doc_path):
    with open(doc_path, "rb") as f: doc = f.read()
    C = Client(port, "iso-C")
    if C.subscribe(["zz/#"], qos=0, user=[("xpath", '//s:senml[@u = "K"]')])[0] != [0]: fail("xreload: SUBACK C")
    A = Client(port, "iso-XA")
    if A.subscribe(["sen/#"], qos=0, user=[("xpath", '//s:senml[@u = "Cel"]')])[0] != [0]: fail("xreload: SUBACK Cel")
    C.unsubscribe(["zz/#"])
    sighup(pid, err, APPLIED, 1)
    if A.subscribe(["sen/+"], qos=0, user=[("xpath", '//s:senml[@u = "V"]')])[0] != [0]: fail("xreload: SUBACK V")
    P = Client(port, "iso-XP")
    for i in range(20): P.publish("sen/x", doc, qos=0, content_type=CT, user=[("n", str(i))])
    settle(A, 20)
    if len(A.msgs) != 20: fail("xreload: A got %d deliveries of 20 \"Cel\" documents, owed 20" % len(A.msgs))
    ok("xreload: A got each \"Cel\" document once after the reload renumbered content slots")
    A.disconnect(); C.disconnect(); P.disconnect()

def inplace(port, sets, peids, pid, err, live, new, bad):
    X1, X2 = sets["X1"], sets["X2"]
    S = Client(port, "iso-S")
    if S.subscribe(["t/#"], qos=0, user=[("nbhd", "X1")])[0] != [0]: fail("inplace: SUBACK")
    P = Client(port, "iso-IP")
    only2, in1 = sorted(X2 - X1)[:3], sorted(X1)[:3]
    def round_(tag):
        n0 = len(S.msgs)
        for p in only2: P.publish("t/a", "out-" + tag, qos=0, user=[("peid", p)])
        for p in in1: P.publish("t/a", "in-" + tag, qos=0, user=[("peid", p)])
        settle(S, n0 + 3)
        got = [m.payload.decode() for m in S.msgs[n0:]]
        if got != ["in-" + tag] * 3: fail("inplace %s: X1 subscriber got %r, owed 3 x in-%s" % (tag, got, tag))
        ok("inplace %s: X1 subscriber got exactly its 3 publications" % tag)
    round_("before")
    for path, tag in ((new, "valid file written in place"), (bad, "corrupt file written in place")):
        with open(path, "rb") as f: data = f.read()
        with open(live, "r+b") as f:   # the same inode, as `cp` or an editor writing in place does
            f.write(data); f.truncate(len(data))
        time.sleep(0.3)
        round_(tag)
    with open(err) as f: before = f.read().count("reload refused")
    os.kill(pid, signal.SIGHUP)
    end = time.time() + 10
    while time.time() < end:
        with open(err) as f:
            if f.read().count("reload refused") > before: break
        time.sleep(0.05)
    else: fail("inplace: the corrupt file was not refused")
    round_("corrupt file + SIGHUP, refused")
    S.disconnect(); P.disconnect()

def manysids(port, sets, peids):
    X1 = sets["X1"]
    inside = sorted(X1)[0]
    out = next(p for p in peids if all(p not in v for v in sets.values()))
    lv = "a/b/c/d/e/f/g".split("/")
    filters = ["/".join("+" if m else x for m, x in zip(mask, lv)) for mask in itertools.product([0, 1], repeat=7)]
    S = Client(port, "iso-many")
    for i, f in enumerate(filters[:65]):
        if S.subscribe([f], qos=0, sid=i + 1, user=[("nbhd", "X1")])[0] != [0]: fail("manysids: SUBACK %d" % i)
    if S.subscribe([filters[65]], qos=0, user=[("nbhd", "X1")])[0] != [0]: fail("manysids: SUBACK proxy id")
    P = Client(port, "iso-many-pub")
    P.publish("a/b/c/d/e/f/g", "outside-X1", qos=0, user=[("peid", out)])
    P.publish("a/b/c/d/e/f/g", "inside-X1", qos=0, user=[("peid", inside)])
    settle(S, 1)
    got = [(m.payload, sorted(m.sids)) for m in S.msgs]
    if len(got) != 1 or got[0][0] != b"inside-X1":
        fail("manysids: received %r, owed only inside-X1" % [g[0] for g in got])
    if got[0][1] != list(range(1, 66)): fail("manysids: identifiers delivered %r, owed 1..65" % got[0][1])
    ok("manysids: 66 identifiers on one PUBLISH: outside X1 withheld, inside delivered with the 65 client ones")
    S.disconnect(); P.disconnect()

def hup2(port, sets, peids, pid, err, live, fewer):
    import threading
    S = Client(port, "iso-h-sub")
    S.subscribe(["h/#"], qos=0, user=[("nbhd", "X1")])
    inside = sorted(sets["X1"])[0]
    stop = []
    def flood():
        P = Client(port, "iso-h-pub")
        while not stop: P.publish("h/x", "x" * 100, qos=0, user=[("peid", inside)])
        P.disconnect()
    th = threading.Thread(target=flood, daemon=True)
    th.start()
    for i in range(150):
        os.kill(pid, signal.SIGHUP)
        t = time.perf_counter() + (i % 15) * 0.0002
        while time.perf_counter() < t: pass
        if i == 149:
            with open(fewer, "rb") as f: replace(live, f.read())
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.03)
    stop.append(1)
    th.join(10)
    end = time.time() + 20
    while True:
        time.sleep(0.5)
        with open(err) as f: log = f.read()
        lines = [l for l in log.splitlines() if "SIGHUP: reloaded" in l]
        if (lines and "(4 neighborhoods)" in lines[-1]) or time.time() > end: break
    refused = log.count("reload refused")
    if refused: fail("hup2: %d SIGHUPs refused during a reload: %r" % (refused, [l for l in log.splitlines() if "refused" in l][:2]))
    if not lines or "(4 neighborhoods)" not in lines[-1]:
        fail("hup2: the file renamed before the last SIGHUP was not loaded: %r" % lines[-1:])
    ok("hup2: 300 SIGHUPs in pairs: %d reloads, none refused, the last one loaded the last file" % len(lines))
    S.disconnect()

if __name__ == "__main__":
    scen, port, res_json, world = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    sets, peids = load(res_json, world)
    a = sys.argv[5:]
    if scen == "resub": resub(port, sets, peids, *a)
    elif scen == "reload": reload_(port, sets, peids, int(a[0]), *a[1:])
    elif scen == "xreload": xreload(port, sets, peids, int(a[0]), *a[1:])
    elif scen == "inplace": inplace(port, sets, peids, int(a[0]), *a[1:])
    elif scen == "manysids": manysids(port, sets, peids)
    elif scen == "hup2": hup2(port, sets, peids, int(a[0]), *a[1:])
    else: fail("unknown scenario " + scen)
