#!/usr/bin/env python3
"""The load of proxy_churn_concurrent.sh: connections that come and go on
both workers of wirematch-proxy for SECONDS, persistent sessions resumed
under the same client identifier, session take-overs, content filters
compiled meanwhile, QoS 1 EXI publications judged by them.

Per persistent session (client identifier ch-pI, Session Expiry 60 s), one
thread, rounds of one of:
  leave     connect (Clean Start 0, or 1 one time in four), subscribe (a
            neighborhood every other round, a new content filter every
            third: a compile), PINGREQ, DISCONNECT;
  drop      the same, then the socket shut down without DISCONNECT;
  takeover  connect, subscribe; connect again under the same identifier
            while the first is open (the broker takes the session over and
            closes the first's upstream: mosquitto 2.0.11 with a bare FIN);
            the first must end with a DISCONNECT (0x80 from the proxy, or
            the broker's own 0x8E) and its close, the second must work.
Two transient clients (clean) connect, subscribe, publish five QoS 1 EXI
SenML documents (peid in X1) to the sessions' topics, and leave.

A connection "works" if, after its CONNACK, its SUBSCRIBE gets a granting
SUBACK and its PINGREQ a PINGRESP, and nothing closes it before it leaves:
every connection but the first of a take-over must. The caller checks the
proxy's summary and its sanitizer report.

Clients are made with Client(..., timeout=None), never with a timeout
changed afterwards (proxy_mqtt5.Client): the dropped proxy_concurrent test
did that, and 1 to 13 connections per 10 s run (resumed sessions, whose
queued deliveries come with the CONNACK) had their reader thread end on a
BlockingIOError; the client then closed the connection itself, which looked
like the proxy closing a client right after its CONNACK.
usage: proxy_churn_concurrent.py PORT SECONDS EXI_FILE
prints one line of counts; exit 1 with the failures."""
import os, random, socket, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client

port, secs, exi = int(sys.argv[1]), float(sys.argv[2]), open(sys.argv[3], "rb").read()
CT = "application/exi; schema=senml"
IN = "r157719642.0"   # a peid inside Monaco's X1
end = time.time() + secs
errs, lock = [], threading.Lock()
counts = {"leave": 0, "drop": 0, "takeover": 0, "transient": 0, "resumed": 0}

def count(k, n=1):
    with lock: counts[k] += n

def failed(what):
    with lock: errs.append(what)

def ping(c, timeout=120):
    """PINGREQ; True once its PINGRESP came."""
    n0 = sum(1 for k, _ in c.other if k == 13)
    c.send_raw(b"\xc0\x00")
    return c.wait_for(lambda: sum(1 for k, _ in c.other if k == 13) > n0, timeout)

def works(c, who, topic, user):
    """Subscribes and pings on a fresh connection; records a failure if it
    is closed or unanswered (the waits are long: compiles under TSan)."""
    who += " (client port %d)" % c.sock.getsockname()[1]
    try:
        codes, _ = c.subscribe([topic], qos=1, user=user, timeout=120)
        if codes[0] >= 0x80: failed("%s: SUBACK 0x%02x" % (who, codes[0]))
        if not ping(c): failed("%s: no PINGRESP (closed: %s, got %r)" % (who, c.closed, c.other[-3:]))
    except (AssertionError, OSError) as e:
        failed("%s: closed after its CONNACK (%r; closed %s, got %r)" % (who, e, c.closed, c.other[-3:]))

def ended_by_takeover(old, who):
    """The taken-over connection: a DISCONNECT, then the close."""
    who += " (client port %d)" % old.sock.getsockname()[1]
    if not old.wait_for(lambda: old.closed, 60):
        failed("%s: the taken-over connection is still open" % who)
    elif not any(k == 14 for k, _ in old.other):
        failed("%s: the taken-over connection closed without a DISCONNECT (got %r)" % (who, old.other[-3:]))

def session(i):
    r = random.Random(1000 + i)
    cid, n = "ch-p%d" % i, 0
    try:
        while time.time() < end:
            n += 1
            mode = r.choice(("leave", "drop", "takeover"))
            who = "%s round %d (%s)" % (cid, n, mode)
            user = ([("nbhd", "X1")] if n % 2 == 0 else []) + \
                   ([("xpath", "//s:senml[@v > %d]" % r.randrange(50))] if n % 3 == 0 else [])
            c = Client(port, cid, clean=r.random() < 0.25, session_expiry=60, timeout=None)
            count("resumed", c.session_present)
            works(c, who, "ch/p%d/a" % i, user)
            if mode == "takeover":
                c2 = Client(port, cid, clean=False, session_expiry=60, timeout=None)
                ended_by_takeover(c, who)
                works(c2, who + " new", "ch/p%d/b" % i, [])
                c.sock.close()
                c = c2
            time.sleep(r.random() * 0.05)
            if mode == "drop":
                # shut down, not only closed: the reader thread's recv keeps
                # a closed socket open (no FIN) until something arrives
                c.sock.shutdown(socket.SHUT_RDWR)
                c.th.join(10)
                c.sock.close()
            else:
                c.disconnect()
            count(mode)
    except Exception as e:
        failed("%s round %d: %r" % (cid, n, e))

def transient(i):
    r = random.Random(2000 + i)
    try:
        while time.time() < end:
            c = Client(port, "ch-t%d" % i, timeout=None)
            works(c, "ch-t%d" % i, "ch/t/%d" % i, [])
            for _ in range(5):
                c.publish("ch/p%d/%s" % (r.randrange(4), r.choice("ab")), exi, qos=1, content_type=CT,
                          user=[("peid", IN)])
            if not c.drain(120): failed("ch-t%d: %d publications not acknowledged" % (i, len(c.inflight)))
            c.disconnect()
            count("transient")
    except Exception as e:
        failed("ch-t%d: %r" % (i, e))

ths = [threading.Thread(target=session, args=(i,)) for i in range(4)] + \
      [threading.Thread(target=transient, args=(i,)) for i in range(2)]
for t in ths: t.start()
for t in ths: t.join()
print("%(leave)d leave, %(drop)d drop, %(takeover)d takeover rounds (%(resumed)d sessions resumed), "
      "%(transient)d transient clients" % counts)
if errs:
    print("%d failures:\n%s" % (len(errs), "\n".join(errs[:20])))
    sys.exit(1)
if min(counts["leave"], counts["drop"], counts["takeover"], counts["transient"]) < 1:
    print("too little happened")
    sys.exit(1)
