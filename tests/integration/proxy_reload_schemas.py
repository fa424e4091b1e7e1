#!/usr/bin/env python3
"""Scenario of proxy_reload_schemas.sh: SIGHUP reloads of wirematch-proxy's
schema registry (--schemas) under live subscribers while publications flow.
Prints one line per check, exits 1 at the first failure.

usage: proxy_reload_schemas.py PORT PROXY_PID PROXY_STDERR DIR LIVE_REG XSD NS IN OUT N
  DIR holds dNN.exi and refs.json (senml_docs.py: the answers of libxml2's
  XPath to Q1, Q2, Q3 on the source XML); LIVE_REG is the registry file the
  proxy reads; IN / OUT are peids inside / outside neighborhood X4.
Subscribers: A Q1 (proxy identifier), B Q2 (own identifier 7), C X4 + Q3, M a
mosquitto_sub with Q1, D none; all their queries use the prefix s.
  1. registry R1 "senml XSD s=NS": exact deliveries; a query with prefix t
     is refused (t is not bound).
  2. R2 "senml XSD t=NS" + "senml2 XSD s=NS", SIGHUP while a publisher keeps
     publishing (schema=senml): the live subscribers' queries now compile for
     senml2 only: publications naming senml2 are filtered exactly, those
     naming senml reach none of them; E, subscribed after it with the t
     query, gets exactly the senml ones Q1 selects. No flow delivery breaks
     a query (never a leak), D gets every one.
  3. a registry with a missing schema: refused with the reason, R2 stays.
  4. R4 "other XSD u=NS": no live query compiles any more: 5 subscriptions
     counted as gone (stderr), every content-filtered one withheld.
  5. R1 again: A, B, C, M filter exactly again; E's t query is gone (1).
"""
import json, os, random, signal, subprocess, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client
from proxy_spatial import PROXY_SID_BASE, fail, ok

port, pid, log, d, live, xsd, ns, IN, OUT, n = sys.argv[1:11]
port, pid, n = int(port), int(pid), int(n)
refs = json.load(open(os.path.join(d, "refs.json")))
docs = [open(os.path.join(d, "d%02d.exi" % i), "rb").read() for i in range(n)]
Q1 = '//s:senml[@u = "Cel" and @v > 0]'
Q2 = '/s:sensml/s:senml[starts-with(@n, "temp-") or @v < -100]'
Q3 = '//s:senml[@n = "humidity"]'
Q1T = Q1.replace("s:", "t:")
CT = "application/exi; schema=%s"

def peid(i): return IN if i % 2 == 0 else OUT

# What each subscriber's query (and C's neighborhood) selects, by document.
SEL = {"A": lambda i: refs[i][0], "B": lambda i: refs[i][1], "C": lambda i: refs[i][2] and i % 2 == 0,
       "M": lambda i: refs[i][0], "E": lambda i: refs[i][0], "D": lambda i: True}

def write_reg(lines):
    tmp = live + ".new"
    with open(tmp, "w") as f: f.write("".join(l + "\n" for l in lines))
    os.rename(tmp, live)

def log_count(marker):
    with open(log) as f: return f.read().count(marker)

def sighup(marker):
    """SIGHUP, then wait until the proxy logged marker once more; returns the new lines."""
    with open(log) as f: before = f.read()
    want = before.count(marker) + 1
    os.kill(pid, signal.SIGHUP)
    end = time.time() + 15
    while time.time() < end:
        with open(log) as f: now = f.read()
        if now.count(marker) >= want: return now[len(before):]
        time.sleep(0.05)
    fail("the proxy did not log %r after SIGHUP" % marker)

APPLIED = "in use by every worker"

class Mosq:
    """A mosquitto_sub subscriber (the real client), its deliveries as topics."""
    def __init__(self, q):
        self.out = os.path.join(d, "M.out")
        self.p = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-V", "mqttv5", "-h", "127.0.0.1", "-p", str(port),
                                   "-i", "sr-M", "-t", "sr/#", "-q", "1", "-d", "-F", "MSG|%t",
                                   "-D", "subscribe", "user-property", "xpath", q],
                                  stdout=open(self.out, "w"), stderr=subprocess.DEVNULL)
        end = time.time() + 10
        while "received SUBACK" not in open(self.out).read():
            if time.time() > end: fail("mosquitto_sub: no SUBACK")
            time.sleep(0.05)
    def topics(self):
        return [l.strip().split("|", 1)[1] for l in open(self.out) if l.startswith("MSG|")]
    def stop(self):
        self.p.terminate(); self.p.wait(5)

subs = {}
def subscribe(name, cid, q, sid=None, nbhd=None):
    c = Client(port, cid, problem_info=1)
    user = ([("nbhd", nbhd)] if nbhd else []) + [("xpath", q)]
    codes, pr = c.subscribe(["sr/#"], qos=1, sid=sid, user=user)
    return c, codes, pr

def topics_of(name):
    if name == "M": return subs["M"].topics()
    return [m.topic for m in subs[name].msgs]

def got(name, tag):
    """Document indices name received under tag (topic sr/TAG/I), duplicates failing."""
    ids = [int(t.split("/")[2]) for t in topics_of(name) if t.split("/")[1] == tag]
    if len(ids) != len(set(ids)): fail("%s (%s): duplicates" % (name, tag))
    return set(ids)

def publish_round(tag, schema, idx=None):
    P = Client(port, "sr-pub-" + tag)
    idx = list(range(n)) if idx is None else idx
    for i in idx:
        P.publish("sr/%s/%d" % (tag, i), docs[i], qos=1, content_type=CT % schema, user=[("peid", peid(i))])
    if not P.drain(30): fail("publisher %s: acknowledgements missing" % tag)
    P.disconnect()
    subs["D"].wait_for(lambda: len(got("D", tag)) >= len(idx), 20)
    time.sleep(0.7)

def check(tag, who_gets):
    """who_gets: name -> predicate over the document index (what it is owed)."""
    for name, want_of in who_gets.items():
        want = {i for i in range(n) if want_of(i)}
        g = got(name, tag)
        if g != want:
            fail("%s (%s): got %d, wanted %d; unwanted %r, missing %r" %
                 (name, tag, len(g), len(want), sorted(g - want)[:5], sorted(want - g)[:5]))
        ok("%s (%s): exactly its %d of %d" % (name, tag, len(g), n))

NONE = lambda i: False
for k in range(3):   # the documents exercise both answers of every query
    if not 0 < sum(r[k] for r in refs) < n: fail("documents: query %d always answers the same" % (k + 1))

# 1. R1.
subs["A"], codes, _ = subscribe("A", "sr-A", Q1)
subs["B"], codes2, _ = subscribe("B", "sr-B", Q2, sid=7)
subs["C"], codes3, _ = subscribe("C", "sr-C", Q3, nbhd="X4")
if any(c[0] >= 0x80 for c in (codes, codes2, codes3)): fail("SUBACK refused: %r" % [codes, codes2, codes3])
subs["D"] = Client(port, "sr-D")
subs["D"].subscribe(["sr/#"], qos=1)
subs["M"] = Mosq(Q1)
e, codes, pr = subscribe("E", "sr-E0", Q1T)
if codes != [0x80] or "not bound" not in pr.get(0x1F, ""): fail("t query under R1: %r %r" % (codes, pr))
e.disconnect()
ok("R1: the t query is refused: %r" % pr.get(0x1F))
publish_round("p1", "senml")
check("p1", {k: SEL[k] for k in "ABCMD"})

# 2. R2, with publications flowing across the SIGHUP.
stop_flow = threading.Event()
flow_sent = []
def flow():
    P = Client(port, "sr-flow")
    rnd = random.Random(5)
    while not stop_flow.is_set():
        i = rnd.randrange(n)
        P.publish("sr/flow/%d" % i, docs[i], qos=1, content_type=CT % "senml", user=[("peid", peid(i))], window=20)
        flow_sent.append(i)
        time.sleep(0.002)
    P.drain(30)
    P.disconnect()
th = threading.Thread(target=flow, daemon=True)
th.start()
time.sleep(0.5)
write_reg(["senml %s t=%s" % (xsd, ns), "senml2 %s s=%s" % (xsd, ns)])
lines = sighup(APPLIED)
if "0 (xpath compiles for no schema)" not in lines: fail("R2: live queries counted as gone: %r" % lines)
time.sleep(0.5)
stop_flow.set()
th.join(40)
if th.is_alive(): fail("flow publisher stuck")
subs["D"].wait_for(lambda: len([t for t in topics_of("D") if t.startswith("sr/flow/")]) >= len(flow_sent), 20)
time.sleep(0.7)
nd = len([t for t in topics_of("D") if t.startswith("sr/flow/")])
if nd != len(flow_sent): fail("D got %d of the %d flowing publications" % (nd, len(flow_sent)))
for name in "ABCM":
    fl = [int(t.split("/")[2]) for t in topics_of(name) if t.startswith("sr/flow/")]
    bad = [i for i in fl if not SEL[name](i)]
    if bad: fail("%s: flowing publications its query rejects were delivered: %r" % (name, bad[:5]))
ok("flow across the reload: %d publications, D got all, no filtered subscriber got one its query rejects "
   "(A %d, B %d, C %d, M %d)" % (len(flow_sent), *(len([t for t in topics_of(k) if t.startswith("sr/flow/")])
                                                   for k in "ABCM")))
subs["E"], codes, pr = subscribe("E", "sr-E", Q1T)
if codes[0] >= 0x80: fail("E under R2: %r %r" % (codes, pr))
def phase2(a, b):
    publish_round(a, "senml2")
    publish_round(b, "senml")
    check(a, {"A": SEL["A"], "B": SEL["B"], "C": SEL["C"], "M": SEL["M"], "E": NONE, "D": SEL["D"]})
    check(b, {"A": NONE, "B": NONE, "C": NONE, "M": NONE, "E": SEL["E"], "D": SEL["D"]})
phase2("p2a", "p2b")

# 3. A bad registry: refused, R2 stays.
write_reg(["senml %s/missing.xsd s=%s" % (os.path.dirname(xsd), ns)])
lines = sighup("reload refused")
if "--schemas %s:1:" % live not in lines: fail("no reason for the refusal: %r" % lines)
ok("bad registry refused: %s" % lines.strip().split("stay: ", 1)[-1])
phase2("p3a", "p3b")

# 4. R4: no live query compiles; each is withheld and counted.
write_reg(["other %s u=%s" % (xsd, ns)])
lines = sighup(APPLIED)
if "5 (xpath compiles for no schema)" not in lines: fail("R4: %r" % lines)
ok("R4: 5 live queries compile for no schema (stderr)")
publish_round("p4", "other")
check("p4", {"A": NONE, "B": NONE, "C": NONE, "M": NONE, "E": NONE, "D": SEL["D"]})
f, codes, pr = subscribe("F", "sr-F", Q1)
if codes != [0x80]: fail("Q1 under R4: %r" % codes)
f.disconnect()

# 5. R1 again: the s queries come back, the t one is gone.
write_reg(["senml %s s=%s" % (xsd, ns)])
lines = sighup(APPLIED)
if "1 (xpath compiles for no schema)" not in lines: fail("R1 again: %r" % lines)
publish_round("p5", "senml")
check("p5", {"A": SEL["A"], "B": SEL["B"], "C": SEL["C"], "M": SEL["M"], "E": NONE, "D": SEL["D"]})

for name in "ABCDE":
    for m in subs[name].msgs:
        want = [7] if name == "B" else []
        if any(x >= PROXY_SID_BASE for x in m.sids) or m.sids != want: fail("%s: identifiers %r" % (name, m.sids))
ok("no proxy identifier reached a client")
subs["M"].stop()
for name in "ABCDE": subs[name].disconnect()
print("flow %d" % len(flow_sent), flush=True)
