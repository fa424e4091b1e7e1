#!/usr/bin/env python3
"""Scenarios of proxy_spatial.sh, each against a wirematch-proxy (with
--resolution) in front of a real mosquitto. Prints one line per check and
exits 1 at the first failure.

usage: proxy_spatial.py PROXY_PORT RESOLUTION_JSON WORLD_GEOJSON SCENARIO [ARGS]
  isolation N [WANT]  N random publications (QoS 0/1/2, random peids of the world,
                     unknown peids, none) to subscribers of 5 neighborhoods, with
                     proxy-added and client identifiers and overlapping plain
                     subscriptions; every subscriber must get exactly what its
                     subscriptions owe it, and never a proxy identifier. WANT:
                     a file to write the payloads owed to a subscriber of sp/#
                     with neighborhood X4 into, one a line (the shell's
                     mosquitto_sub).
  window N           a subscriber with Receive Maximum 5 and a neighborhood; N
                     publications outside it (QoS 1 and 2 alternating), then one
                     inside: that one must arrive, promptly.
  unknown            SUBSCRIBE with an unknown neighborhood: SUBACK 0x80 + Reason
                     String for every filter, nothing installed at the broker.
  mosquitto_sub ...  (driven from the shell script)
"""
import json, os, random, signal, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client

PROXY_SID_BASE = 0x0F000000

def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)

def ok(msg): print("ok: " + msg, flush=True)

# Logged once every worker has taken a reload in (dataplane/proxy_reload.h).
APPLIED = "in use by every worker"

# Sends SIGHUP to the proxy and waits (10 s) until its log holds marker count times.
def sighup(pid, log, marker, count):
    os.kill(pid, signal.SIGHUP)
    end = time.time() + 10
    while time.time() < end:
        with open(log) as f:
            if f.read().count(marker) >= count: return
        time.sleep(0.05)
    fail("the proxy did not log %r after SIGHUP" % marker)

def load(res_json, world):
    with open(res_json) as f:
        sets = {k: set(v["result"]) for k, v in json.load(f).items()}
    with open(world) as f:
        peids = sorted(str(ft["id"]) for ft in json.load(f)["features"])
    return sets, peids

def load_docs(d, n):
    """The content-filter inputs senml_docs.py wrote to d: the queries (queries.txt, one per line), libxml2's
    answers (refs.json: refs[doc][query]) and the n EXI documents dNN.exi."""
    queries = [l.rstrip("\n") for l in open(os.path.join(d, "queries.txt"))]
    refs = json.load(open(os.path.join(d, "refs.json")))
    return queries, refs, [open(os.path.join(d, "d%02d.exi" % i), "rb").read() for i in range(n)]

def settle(clients_and_counts, timeout):
    """Waits until each client has at least its expected number of messages, then 1 s more for extras."""
    end = time.time() + timeout
    for c, n in clients_and_counts:
        c.wait_for(lambda: len(c.msgs) >= n, max(0.1, end - time.time()))
    time.sleep(1.0)

def isolation(port, sets, peids, n, want_x4=None):
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
    if want_x4:
        with open(want_x4, "w") as f:
            for p in pubs:
                if inn("X4", p[2]): f.write("m%d\n" % p[0])
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

def shared(port, sets, peids):
    """Members of one shared subscription must use one neighborhood: the broker
    gives each message to one member, whose filter would withhold what
    another member wants (proxy_share.h)."""
    F = "$share/g1/sh/#"
    A = Client(port, "sh-A"); D = Client(port, "sh-D"); B = Client(port, "sh-B"); C = Client(port, "sh-C")
    codes, _ = A.subscribe([F], qos=1, user=[("nbhd", "X1")])
    if codes != [1]: fail("first member: SUBACK %r" % codes)
    codes, pr = B.subscribe([F], qos=1, user=[("nbhd", "X2")])
    if codes != [0x9E] or '"X1"' not in pr.get(0x1F, ""): fail("member with X2: SUBACK %r %r" % (codes, pr))
    ok("a member with another neighborhood: SUBACK 0x9E, %r" % pr[0x1F])
    codes, pr = C.subscribe(["sh/x", F], qos=1)
    if codes != [0x9E, 0x9E]: fail("plain member: SUBACK %r %r" % (codes, pr))
    codes, _ = D.subscribe([F], qos=1, user=[("nbhd", "X1")])
    if codes != [1]: fail("second member with X1: SUBACK %r" % codes)
    E = Client(port, "sh-E")
    codes, _ = E.subscribe(["$share/g2/sh/#"], qos=1, user=[("nbhd", "X2")])
    if codes != [1]: fail("another group with X2: SUBACK %r" % codes)
    inside, outside = sorted(sets["X1"]), [p for p in peids if p not in sets["X1"]]
    P = Client(port, "sh-pub")
    want = set()
    for i in range(40):
        pe = inside[i % len(inside)] if i % 2 == 0 else outside[i % len(outside)]
        if i % 2 == 0: want.add("m%d" % i)
        P.publish("sh/a", "m%d" % i, qos=1, user=[("peid", pe)])
    P.drain()
    got = lambda: [m.payload.decode() for m in A.msgs + D.msgs]
    A.wait_for(lambda: len(got()) >= len(want), 10)
    time.sleep(0.5)
    if sorted(got()) != sorted(want): fail("members with X1 together: %r, want %r" % (sorted(got()), sorted(want)))
    if B.msgs or C.msgs: fail("refused members received %d / %d" % (len(B.msgs), len(C.msgs)))
    ok("members with X1 together got each of the %d in X1 once (%d / %d), refused ones nothing"
       % (len(want), len(A.msgs), len(D.msgs)))
    A.disconnect(); D.disconnect()
    end, refused = time.time() + 10, 0
    while True:   # the members' records go when the proxy sees them close
        codes, _ = B.subscribe([F], qos=1, user=[("nbhd", "X2")])
        if codes == [1]: break
        if codes != [0x9E] or time.time() > end: fail("after the X1 members left: SUBACK %r" % codes)
        refused += 1
        time.sleep(0.1)
    ok("once the X1 members left, a member with X2 is taken (refused %d times while they were closing)" % refused)
    print("shared-refused-while-closing %d" % refused, flush=True)
    # The only member may replace its own subscription (same filter, §3.8.4)
    # with another neighborhood or none: nobody else's filter is at stake.
    codes, pr = B.subscribe([F], qos=1, user=[("nbhd", "X1")])
    if codes != [1]: fail("the only member replacing X2 by X1: SUBACK %r %r" % (codes, pr))
    codes, pr = C.subscribe([F], qos=1, user=[("nbhd", "X2")])
    if codes != [0x9E] or '"X1"' not in pr.get(0x1F, ""): fail("after it, a member with X2: SUBACK %r %r" % (codes, pr))
    codes, _ = C.subscribe([F], qos=1, user=[("nbhd", "X1")])
    if codes != [1]: fail("a second member with X1: SUBACK %r" % codes)
    codes, pr = B.subscribe([F], qos=1)
    if codes != [0x9E]: fail("replacing with another member in the group: SUBACK %r %r" % (codes, pr))
    C.unsubscribe([F])
    codes, pr = B.subscribe([F], qos=1)
    if codes != [1]: fail("the only member again, replacing X1 by none: SUBACK %r %r" % (codes, pr))
    n0 = len(B.msgs)
    for i in range(10):
        P.publish("sh/b", "r%d" % i, qos=1, user=[("peid", inside[i] if i % 2 else outside[i])])
    P.drain()
    if not B.wait_for(lambda: len(B.msgs) >= n0 + 10, 10) or len(B.msgs) != n0 + 10:
        fail("the member with no neighborhood now got %d of 10" % (len(B.msgs) - n0))
    ok("the only member replaced its neighborhood (X2 -> X1 -> none), granted; refused (0x9E) while another "
       "member was in the group; its new record decides: all 10 delivered")
    for c in (B, C, E, P): c.disconnect()

def prefilter(port, sets, peids, broker_port, n):
    """The proxy runs with --prefilter; a subscriber straight on the broker
    (invisible to the proxy) shows what the broker received."""
    inside = sorted(sets["X3"])
    outside = [p for p in peids if p not in sets["X3"]]
    rnd = random.Random(11)
    B = Client(broker_port, "pf-direct")          # behind the proxy's back
    B.subscribe(["pf/#"], qos=2)
    S1 = Client(port, "pf-s1")
    S1.subscribe(["pf/a/#"], qos=1, user=[("nbhd", "X3")])
    S2 = Client(port, "pf-s2")
    S2.subscribe(["pf/plain/#"], qos=1)
    S3 = Client(port, "pf-s3", session_expiry=300)  # persistent session, then offline
    S3.subscribe(["pf/sess/#"], qos=1)
    S3.disconnect()
    time.sleep(0.3)
    P = Client(port, "pf-pub")
    pubs, expect = [], set()
    for i in range(n):
        kind = rnd.random()
        topic = "pf/plain/%d" % i if kind < 0.2 else "pf/a/%d" % (i % 5)
        peid = rnd.choice(inside) if rnd.random() < 0.2 else rnd.choice(outside)
        retain = rnd.random() < 0.02
        qos = rnd.randrange(3)
        P.publish(topic, "p%d" % i, qos=qos, user=[("peid", peid)], retain=retain)
        pubs.append((i, topic, peid, qos, retain))
        if retain or topic.startswith("pf/plain/") or peid in sets["X3"]: expect.add(i)
    if not P.drain(30): fail("publisher: acknowledgements missing")
    # The persistent session's subscription still counts while its client is away.
    P.publish("pf/sess/1", "queued", qos=1, user=[("peid", outside[0])])
    # Topic alias (client -> broker): the PUBLISH that binds it is kept back,
    # the alias-only one that follows must reach the broker with the topic.
    P.publish("pf/a/alias", "bind", qos=1, alias=3, user=[("peid", outside[0])])
    P.publish("", "use", qos=1, alias=3, user=[("peid", inside[0])])
    if not P.drain(10) or P.closed: fail("publisher: the alias-only PUBLISH was refused (connection closed)")
    # UNSUBSCRIBE: the plain subscription is gone, so is its traffic.
    S2.unsubscribe(["pf/plain/#"])
    P.publish("pf/plain/after", "gone", qos=1, user=[("peid", outside[0])])
    P.drain()
    settle([(B, len(expect) + 2)], 30)
    got = [int(m.payload[1:]) for m in B.msgs if m.payload[:1] == b"p"]
    if sorted(got) != sorted(expect):
        extra = sorted(set(got) - expect)[:5]; missing = sorted(expect - set(got))[:5]
        fail("broker received %d, want %d (extra %r, missing %r)" % (len(got), len(expect), extra, missing))
    ok("prefilter: the broker received %d of %d publications, exactly those some subscription could receive "
       "(retained always)" % (len(got), n))
    extra = [m for m in B.msgs if m.payload[:1] != b"p"]
    names = sorted((m.topic, m.payload.decode()) for m in extra)
    if names != [("pf/a/alias", "use"), ("pf/sess/1", "queued")]:
        fail("extra messages at the broker: %r (want the alias-only one with its topic and the queued one)" % names)
    ok("prefilter: alias-only PUBLISH after a withheld binding reached the broker as pf/a/alias; "
       "an offline persistent session's subscription kept its traffic; UNSUBSCRIBE ended it")
    dropped_q1 = sum(1 for p in pubs if p[3] == 1 and p[0] not in expect) + 1  # + the alias binding
    acks10 = sum(1 for k, b in P.other if k == 4 and len(b) > 2 and b[2] == 0x10)
    # the "gone" one too
    if acks10 != dropped_q1 + 1: fail("PUBACK 0x10: %d, want %d" % (acks10, dropped_q1 + 1))
    ok("prefilter: %d QoS 1 publications acknowledged with 0x10 No matching subscribers" % acks10)
    S3 = Client(port, "pf-s3", clean=False, session_expiry=300)
    if not S3.wait_for(lambda: any(m.payload == b"queued" for m in S3.msgs), 10):
        fail("the persistent session did not get its queued message")
    ok("prefilter: the persistent session got its queued message after reconnecting")
    s1_want = sorted(["p%d" % p[0] for p in pubs if p[1].startswith("pf/a/") and p[2] in sets["X3"]] + ["use"])
    s1_got = sorted(m.payload.decode() for m in S1.msgs)
    if s1_got != s1_want: fail("S1 got %d messages, want %d" % (len(s1_got), len(s1_want)))
    ok("prefilter: the neighborhood subscriber got exactly its %d messages" % len(s1_got))
    for c in (B, S1, S2, S3, P): c.disconnect()

if __name__ == "__main__":
    port, res_json, world, scen = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    sets, peids = load(res_json, world)
    if scen == "isolation": isolation(port, sets, peids, int(sys.argv[5]), *sys.argv[6:7])
    elif scen == "window": window(port, sets, peids, int(sys.argv[5]))
    elif scen == "unknown": unknown(port, sets, peids)
    elif scen == "shared": shared(port, sets, peids)
    elif scen == "prefilter": prefilter(port, sets, peids, int(sys.argv[5]), int(sys.argv[6]))
    else: sys.exit("unknown scenario " + scen)
