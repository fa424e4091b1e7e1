#!/usr/bin/env python3
"""Scenario of proxy_content_slots.sh: content-filter slots reused under live
subscribers. Prints one line per check, exits 1 at the first failure.

usage: proxy_content_slots.py PORT DIR N ROUNDS
  DIR holds dNN.exi, queries.txt (QA, QB, QP, then one query per round) and
  refs.json (senml_docs.py: libxml2's answer to each query, per document).
Subscribers to cs/#: A QA (proxy identifier), B QB (own identifier 7), D no
filter (tells when a round is through), C the churner (Receive Maximum 1),
P a persistent session with QP, away from the start to the end.
Round r: C subscribes with query r (the slot of query r - 1 is free by
then), the N documents are published under cs/rR/I, each of A, B, C gets
exactly what its query selects, C unsubscribes. Every 10th round C also
holds one delivery unacknowledged while the documents are published again
under cs/hR/I, so the broker queues the rest for query r; it acknowledges
after subscribing with query r + 1: the queued ones, which carry query r's
identifier, must all be withheld (query r + 1 now has query r's slot).
At the end the documents go to cs/p/I while P is away; P resumes and gets
exactly what QP selects (its record is compiled again from its text, in a
table whose slots the churn has reused many times)."""
import json, os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet
from proxy_spatial import PROXY_SID_BASE, fail, ok

port, d, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
port = int(port)
queries = [l.rstrip("\n") for l in open(os.path.join(d, "queries.txt"))]
refs = json.load(open(os.path.join(d, "refs.json")))
docs = [open(os.path.join(d, "d%02d.exi" % i), "rb").read() for i in range(n)]
CT = "application/exi; schema=senml"
QA, QB, QP, Q0 = 0, 1, 2, 3
if len(queries) != Q0 + rounds: fail("queries.txt has %d queries" % len(queries))

def sel(q): return {i for i in range(n) if refs[i][q]}

def subscribe(c, q, sid=None, topic="cs/#"):
    codes, pr = c.subscribe([topic], qos=1, sid=sid, user=[("xpath", queries[q])])
    if codes[0] >= 0x80: fail("SUBACK %r %r for %s" % (codes, pr, queries[q]))

def got(c, tag):
    """Document indices c received under cs/TAG/I; duplicates fail."""
    ids = [int(m.topic.split("/")[2]) for m in c.msgs if m.topic.split("/")[1] == tag]
    if len(ids) != len(set(ids)): fail("duplicates under %s: %r" % (tag, sorted(ids)))
    return set(ids)

pub = Client(port, "cs-pub")
def publish(tag):
    for i in range(n): pub.publish("cs/%s/%d" % (tag, i), docs[i], qos=1, content_type=CT)
    if not pub.drain(30): fail("publisher: acknowledgements missing (%s)" % tag)
    if not D.wait_for(lambda: len(got(D, tag)) == n, 30): fail("D: %d of %d under %s" % (len(got(D, tag)), n, tag))

def exact(name, c, tag, want):
    c.wait_for(lambda: len(got(c, tag)) >= len(want), 10)
    g = got(c, tag)
    if g != want: fail("%s under %s: got %r, its query selects %r" % (name, tag, sorted(g), sorted(want)))

P = Client(port, "cs-P", clean=True, session_expiry=3600)
subscribe(P, QP, topic="cs/p/#")
P.disconnect()
A = Client(port, "cs-A"); subscribe(A, QA)
B = Client(port, "cs-B"); subscribe(B, QB, sid=7)
D = Client(port, "cs-D"); D.subscribe(["cs/#"], qos=1)
C = Client(port, "cs-C", receive_max=1)
held = None        # (tag, query) of the last hold
holds = 0
for r in range(rounds):
    q = Q0 + r
    subscribe(C, q)
    if held:
        # acknowledge what C held: the broker now sends what it queued for the old query
        for m in [m for m in C.msgs if m.topic.split("/")[1] == held[0]]: C.send_raw(packet(0x40, struct.pack(">H", m.pid)))
        C.auto_ack = True
    tag = "r%d" % r
    publish(tag)
    exact("C (query %d)" % r, C, tag, sel(q))
    exact("A", A, tag, sel(QA))
    exact("B", B, tag, sel(QB))
    if held:
        h = got(C, held[0])
        if len(h) != 1: fail("C: deliveries queued for query %d reached it under query %d: %r" % (held[1] - Q0, r, sorted(h)))
        ok("round %d: what the broker queued for query %d was withheld (C has only the one it held: %r)" % (r, held[1] - Q0, sorted(h)))
        held = None
    if r % 10 == 5 and r + 1 < rounds and len(sel(q)) >= 2:
        C.auto_ack = False
        htag = "h%d" % r
        publish(htag)
        if not C.wait_for(lambda: len(got(C, htag)) == 1, 10): fail("C: the held delivery did not come")
        if got(C, htag) - sel(q): fail("C: held a delivery its query rejects: %r" % sorted(got(C, htag)))
        held = (htag, q)
        holds += 1
    C.unsubscribe(["cs/#"])
    if r % 10 == 0: ok("round %d: A, B and C (query %r) exactly what their queries select" % (r, queries[q]))
if holds < 3: fail("only %d holds happened" % holds)

publish("p")
P = Client(port, "cs-P", clean=False, session_expiry=3600)
if not P.session_present: fail("P: session not present")
exact("P (resumed)", P, "p", sel(QP))
ok("P resumed: exactly the %d of %d queued documents its query selects" % (len(sel(QP)), n))
time.sleep(0.5)
for name, c, q in (("A", A, QA), ("B", B, QB)):
    for tag in ["r%d" % r for r in range(rounds)] + ["p"]:
        if got(c, tag) != sel(q): fail("%s: late deliveries under %s" % (name, tag))
for name, c in (("A", A), ("B", B), ("C", C), ("P", P)):
    want = [7] if name == "B" else []
    for m in c.msgs:
        if m.sids != want: fail("%s: identifiers %r" % (name, m.sids))
ok("no proxy identifier reached a client; %d rounds, %d holds, %d deliveries to C" % (rounds, holds, len(C.msgs)))
for c in (A, B, C, D, P, pub): c.disconnect()
