#!/usr/bin/env python3
"""The load of proxy_concurrent.sh: everything that crosses threads in
wirematch-proxy at once, for SECONDS. Six persistent sessions (one worker
or the other) subscribe content filters (new texts: compiles on the compile
threads), one with a neighborhood (the registry, the --prefilter readers),
leave and resume (the session table, --state saves); two publishers send
QoS 1 EXI publications that the prefilter and the content filters judge.
Every SUBACK must grant and every publication be acknowledged; the caller
sends SIGHUPs meanwhile (reloads on every worker).
usage: proxy_concurrent.py PORT SECONDS EXI_FILE"""
import os, random, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client

port, secs, pay = int(sys.argv[1]), float(sys.argv[2]), open(sys.argv[3], "rb").read()
CT = "application/exi; schema=senml"
IN = "r157719642.0"   # a peid inside Monaco's X1
end = time.time() + secs
errs, counts, lock = [], {"subacks": 0, "resumes": 0, "pubs": 0}, threading.Lock()

def sess(i):
    r = random.Random(i)
    try:
        while time.time() < end:
            c = Client(port, "cc-%d" % i, clean=r.random() < 0.3, session_expiry=60)
            c.sock.settimeout(None)   # the bound is subscribe's (compiles are slow under sanitizers)
            with lock: counts["resumes"] += c.session_present
            for k in range(3):
                t = "//s:senml[@v > %d]" % r.randrange(50)
                codes, _ = c.subscribe(["cc/%d/%d" % (i, k)], user=[("xpath", t)] + ([("nbhd", "X1")] if k == 1 else []),
                                       timeout=120)
                if codes[0] >= 0x80: raise AssertionError("SUBACK 0x%02x for %s" % (codes[0], t))
                with lock: counts["subacks"] += 1
            time.sleep(r.random() * 0.3)
            c.disconnect()
    except Exception as e:
        errs.append("session %d: %r" % (i, e))

def pub(i):
    try:
        c = Client(port, "cp-%d" % i)
        c.sock.settimeout(None)
        while time.time() < end:
            c.publish("cc/%d/%d" % (random.randrange(6), random.randrange(3)), pay, qos=1, content_type=CT,
                      user=[("peid", IN)])
            with lock: counts["pubs"] += 1
            time.sleep(0.01)
        if not c.drain(60): raise AssertionError("%d publications not acknowledged" % len(c.inflight))
        c.disconnect()
    except Exception as e:
        errs.append("publisher %d: %r" % (i, e))

ths = [threading.Thread(target=sess, args=(i,)) for i in range(6)] + [threading.Thread(target=pub, args=(i,)) for i in range(2)]
for t in ths: t.start()
for t in ths: t.join()
if errs:
    print("errors:", errs)
    sys.exit(1)
if counts["subacks"] < 18 or counts["pubs"] < 10:
    print("too little happened: %r" % counts)
    sys.exit(1)
print("%(subacks)d SUBACKs granted, %(resumes)d sessions resumed, %(pubs)d publications acknowledged" % counts)
