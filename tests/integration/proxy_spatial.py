#!/usr/bin/env python3
"""Scenarios of proxy_spatial.sh, each against a wirematch-proxy (with
--resolution) in front of a real mosquitto. Prints one line per check and
exits 1 at the first failure.

usage: proxy_spatial.py PROXY_PORT RESOLUTION_JSON WORLD_GEOJSON SCENARIO [ARGS]
  isolation N        N random publications (QoS 0/1/2, random peids of the world,
                     unknown peids, none) to subscribers of 5 neighborhoods, with
                     proxy-added and client identifiers and overlapping plain
                     subscriptions; every subscriber must get exactly what its
                     subscriptions owe it, and never a proxy identifier.
  window N           a subscriber with Receive Maximum 5 and a neighborhood; N
                     publications outside it (QoS 1 and 2 alternating), then one
                     inside: that one must arrive, promptly.
  unknown            SUBSCRIBE with an unknown neighborhood: SUBACK 0x80 + Reason
                     String for every filter, nothing installed at the broker.
  mosquitto_sub ...  (driven from the shell script)
"""
import json, random, sys, time, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client

PROXY_SID_BASE = 0x0F000000

def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)

def ok(msg): print("ok: " + msg, flush=True)

def load(res_json, world):
    with open(res_json) as f:
        sets = {k: set(v["result"]) for k, v in json.load(f).items()}
    with open(world) as f:
        peids = sorted(str(ft["id"]) for ft in json.load(f)["features"])
    return sets, peids

def settle(clients_and_counts, timeout):
    """Waits until each client has at least its expected number of messages, then 1 s more for extras."""
    end = time.time() + timeout
    for c, n in clients_and_counts:
        c.wait_for(lambda: len(c.msgs) >= n, max(0.1, end - time.time()))
    time.sleep(1.0)

def isolation(port, sets, peids, n):
    rnd = random.Random(7)
    # subscriber -> list of (filter, nbhd or None, qos, sid or None)
    A = Client(port, "sp-A")
    codes, _ = A.subscribe(["sp/#"], qos=1, user=[("nbhd", "X1")])
    B = Client(port, "sp-B")
    codes += B.subscribe(["sp/#"], qos=2, sid=7, user=[("nbhd", "X2")])[0]
    C = Client(port, "sp-C")
    codes += C.subscribe(["sp/+/t"], qos=0, user=[("nbhd", "X5")])[0]
    D = Client(port, "sp-D")   # overlapping: a neighborhood on everything, a plain one (client id 9) on sp/+/t
    codes += D.subscribe(["sp/#"], qos=1, user=[("nbhd", "X3")])[0]
    codes += D.subscribe(["sp/+/t"], qos=1, sid=9)[0]
    E = Client(port, "sp-E")   # overlapping: a neighborhood with the client's id 4 and a plain one without id
    codes += E.subscribe(["sp/+/u"], qos=1, sid=4, user=[("nbhd", "X4")])[0]
    codes += E.subscribe(["sp/1/#"], qos=1)[0]
    if any(c >= 0x80 for c in codes): fail("SUBACK codes %r" % codes)
    P = Client(port, "sp-pub")
    pubs = []
    for i in range(n):
        r = rnd.random()
        peid = rnd.choice(peids) if r < 0.85 else ("nowhere-%d" % i if r < 0.93 else None)
        # bias towards the small neighborhoods so each has wanted messages
        if r < 0.25: peid = rnd.choice(sorted(sets[rnd.choice(["X1", "X2", "X3", "X4", "X5"])]))
        topic = "sp/%d/%s" % (rnd.randrange(3), "t" if rnd.random() < 0.5 else "u")
        qos = rnd.randrange(3)
        user = [("kind", "flow")] + ([("peid", peid)] if peid else [])
        P.publish(topic, "m%d" % i, qos=qos, user=user)
        pubs.append((i, topic, peid, qos))
    if not P.drain(30): fail("publisher: acknowledgements missing")

    def inn(name, peid): return peid is not None and peid in sets[name]
    t_match = lambda topic: topic.split("/")[2] == "t"
    u_match = lambda topic: topic.split("/")[2] == "u"
    want = {
        "A": [p for p in pubs if inn("X1", p[2])],
        "B": [p for p in pubs if inn("X2", p[2])],
        "C": [p for p in pubs if t_match(p[1]) and inn("X5", p[2])],
    }
    # D: one copy per subscription that passes (mosquitto sends a copy per
    # matching subscription) -- counted per payload below, at least 1 and at
    # most the number of D's subscriptions that pass.
    d_owed = {p[0]: (1 if inn("X3", p[2]) else 0) + (1 if t_match(p[1]) else 0) for p in pubs}
    e_owed = {p[0]: (1 if (u_match(p[1]) and inn("X4", p[2])) else 0) + (1 if p[1].startswith("sp/1/") else 0)
              for p in pubs}
    settle([(A, len(want["A"])), (B, len(want["B"])), (C, len(want["C"])),
            (D, sum(1 for v in d_owed.values() if v)), (E, sum(1 for v in e_owed.values() if v))], 30)

    for name, cl in (("A", A), ("B", B), ("C", C), ("D", D), ("E", E)):
        for m in cl.msgs:
            if any(s >= PROXY_SID_BASE for s in m.sids): fail("%s received a proxy identifier %r" % (name, m.sids))
    for name, cl in (("A", A), ("B", B), ("C", C)):
        got = sorted(int(m.payload[1:]) for m in cl.msgs)
        exp = sorted(p[0] for p in want[name])
        if got != exp:
            extra = sorted(set(got) - set(exp))[:5]; missing = sorted(set(exp) - set(got))[:5]
            fail("%s: got %d, want %d (extra %r, missing %r)" % (name, len(got), len(exp), extra, missing))
        ok("%s: %d of %d publications, exactly those in its neighborhood" % (name, len(got), n))
    for m in B.msgs:
        if m.sids != [7]: fail("B: identifiers %r, want [7]" % m.sids)
    for m in A.msgs + C.msgs:
        if m.sids: fail("identifiers %r where the client set none" % m.sids)
    for name, cl, owed in (("D", D, d_owed), ("E", E, e_owed)):
        cnt = {}
        for m in cl.msgs: cnt[int(m.payload[1:])] = cnt.get(int(m.payload[1:]), 0) + 1
        for i, o in owed.items():
            if (o == 0 and cnt.get(i, 0)) or (o > 0 and not 1 <= cnt.get(i, 0) <= o):
                fail("%s: publication %d (%s, peid %s) owed %d copies, got %d" %
                     (name, i, pubs[i][1], pubs[i][2], o, cnt.get(i, 0)))
        ok("%s: overlapping subscriptions, %d publications owed, all arrived, nothing else"
           % (name, sum(1 for v in owed.values() if v)))
    for m in D.msgs:
        if m.sids not in ([], [9]): fail("D: identifiers %r" % m.sids)
        if not t_match(m.topic) and m.sids: fail("D: %s with identifier %r" % (m.topic, m.sids))
    for m in E.msgs:
        if m.sids not in ([], [4]): fail("E: identifiers %r" % m.sids)
    for c in (A, B, C, D, E, P): c.disconnect()

def window(port, sets, peids, n):
    inside = sorted(sets["X3"])[0]
    outside = next(p for p in peids if p not in sets["X3"])
    W = Client(port, "win-sub", receive_max=5)
    codes, _ = W.subscribe(["win/#"], qos=2, user=[("nbhd", "X3")])
    if codes != [2]: fail("SUBACK %r" % codes)
    P = Client(port, "win-pub")
    t0 = time.time()
    for i in range(n):
        P.publish("win/%d" % (i % 7), "w%d" % i, qos=1 + i % 2, user=[("peid", outside)])
    if not P.drain(40): fail("publisher: acknowledgements missing")
    t1 = time.time()
    P.publish("win/last", "wanted", qos=1, user=[("peid", inside)])
    if not W.wait_for(lambda: len(W.msgs) >= 1, 10):
        fail("the wanted message did not arrive within 10 s after %d withheld ones: the window leaked" % n)
    lat = time.time() - t1
    time.sleep(0.5)
    if [m.payload for m in W.msgs] != [b"wanted"]: fail("got %r" % [m.payload[:10] for m in W.msgs][:5])
    ok("%d withheld QoS 1/2 publications in %.1f s, then the wanted one arrived after %.3f s"
       % (n, t1 - t0, lat))
    W.disconnect(); P.disconnect()

def unknown(port, sets, peids):
    U = Client(port, "unk-sub")
    codes, pr = U.subscribe(["unk/#", "unk2/+"], qos=1, user=[("nbhd", "X9")])
    if codes != [0x80, 0x80]: fail("SUBACK codes %r, want [0x80, 0x80]" % codes)
    if "X9" not in pr.get(0x1F, ""): fail("Reason String %r does not name X9" % pr.get(0x1F))
    ok("unknown neighborhood: SUBACK %r, reason %r" % (codes, pr[0x1F]))
    # Nothing installed: a plain subscriber of the same filter gets it, U does not.
    V = Client(port, "unk-plain")
    V.subscribe(["unk/#"], qos=1)
    P = Client(port, "unk-pub")
    P.publish("unk/a", "x", qos=1, user=[("peid", sorted(sets["X1"])[0])])
    P.drain()
    if not V.wait_for(lambda: len(V.msgs) == 1, 10): fail("plain subscriber got nothing")
    time.sleep(0.5)
    if U.msgs: fail("the refused subscription received %d messages" % len(U.msgs))
    # Without problem information the SUBACK carries no Reason String (§3.1.2.11.7).
    Q = Client(port, "unk-quiet", problem_info=0)
    codes, pr = Q.subscribe(["unk/#"], qos=0, user=[("nbhd", "X9")])
    if codes != [0x80] or 0x1F in pr: fail("quiet client: %r %r" % (codes, pr))
    # A client may not use the proxy's identifiers.
    codes, pr = Q.subscribe(["unk/#"], qos=0, sid=PROXY_SID_BASE + 1)
    if codes != [0x83]: fail("reserved identifier: SUBACK %r" % codes)
    ok("refused subscriptions installed nothing; reserved identifier refused with 0x83")
    for c in (U, V, P, Q): c.disconnect()

if __name__ == "__main__":
    port, res_json, world, scen = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    sets, peids = load(res_json, world)
    if scen == "isolation": isolation(port, sets, peids, int(sys.argv[5]))
    elif scen == "window": window(port, sets, peids, int(sys.argv[5]))
    elif scen == "unknown": unknown(port, sets, peids)
    else: sys.exit("unknown scenario " + scen)
