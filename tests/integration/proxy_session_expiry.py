#!/usr/bin/env python3
"""Scenarios of proxy_session_expiry.sh: the Session Expiry Interval a
client's DISCONNECT (or a resuming CONNECT) sets is the one the proxy keeps
for the session (MQTT 5.0 §3.14.2.2.2, §3.1.2.11.2). Raw MQTT v5 clients
(proxy_mqtt5.py) through wirematch-proxy in front of a real mosquitto.
Prints one line per check, exits 1 at the first failure.

usage: proxy_session_expiry.py kill PROXY_PORT STATE_FILE PROXY_PID
         three persistent sessions (interval 300 s) subscribe with a
         neighborhood: se-c stays connected; se-a leaves and resumes with
         interval 0 (its session ends with this connection); se-b sends a
         DISCONNECT with interval 0 and keeps its socket open (the proxy
         lingers on it, the session attached meanwhile). Within 4 s (the
         saves come every 200 ms) the --state file must show se-c as
         live:300 and se-a, se-b as expired or absent: a kill now must not
         leave them persistent (before: both stayed live:300). Then the
         proxy is killed (SIGKILL).
       proxy_session_expiry.py zero PROXY_PORT
         a session with interval 0 subscribes pe/# and sends a DISCONNECT
         with interval 300, a Protocol Error (not from 0 to non-zero): the
         broker answers DISCONNECT 0x82; the proxy must not keep the session
         (its --prefilter registration) for 300 s: a QoS 1 publication to
         pe/1 afterwards is prefiltered (the shell checks the summary).
"""
import os, signal, socket, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_mqtt5 import Client, packet, props
from proxy_spatial import fail, ok

def disconnect_with_expiry(c, seconds):
    c.send_raw(packet(0xE0, b"\x00" + props([(0x11, seconds)])))

def sessions(path):
    """client id -> expiry field of the --state file's session lines."""
    out = {}
    try:
        for line in open(path):
            f = line.split()
            if len(f) == 5 and f[0] == "session": out[f[1]] = f[4]
    except OSError:
        pass
    return out

def ended(v):
    """An expiry field of a session that a load drops: Unix s now or past (absent: None)."""
    return v is None or (v.lstrip("-").isdigit() and int(v) <= time.time() + 1)

def nbhd_session(port, cid, topic):
    c = Client(port, cid, session_expiry=300)
    codes, _ = c.subscribe([topic], user=[("nbhd", "X1")])
    if codes != [1]: fail("%s: SUBACK %r" % (cid, codes))
    return c

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "kill":
    state, pid = sys.argv[3], int(sys.argv[4])
    c = nbhd_session(port, "se-c", "se/c")
    a = nbhd_session(port, "se-a", "se/a")
    a.disconnect()   # interval 300 stays
    a = Client(port, "se-a", clean=False)   # interval 0: the session ends with this connection
    if not a.session_present: fail("se-a resumed without its session")
    b = nbhd_session(port, "se-b", "se/b")
    disconnect_with_expiry(b, 0)
    if not b.wait_for(lambda: b.closed, 10): fail("se-b: the proxy did not end the connection after its DISCONNECT")
    end, seen = time.time() + 4, {}
    while time.time() < end:
        seen = sessions(state)
        if seen.get("se-c") == "live:300" and ended(seen.get("se-a")) and ended(seen.get("se-b")): break
        time.sleep(0.1)
    else:
        fail("the --state file 4 s on: se-c %s (want live:300), se-a %s, se-b %s (want expired or absent)"
             % (seen.get("se-c"), seen.get("se-a"), seen.get("se-b")))
    ok("--state file: se-c live:300, se-a %s (resumed with interval 0), se-b %s (DISCONNECT with interval 0, "
       "lingering)" % (seen.get("se-a", "absent"), seen.get("se-b", "absent")))
    os.kill(pid, signal.SIGKILL)
    ok("proxy killed with se-a, se-c connected and se-b lingering")
elif mode == "zero":
    d = Client(port, "se-d")   # interval 0
    codes, _ = d.subscribe(["pe/#"])
    if codes != [1]: fail("se-d: SUBACK %r" % codes)
    disconnect_with_expiry(d, 300)
    if not d.wait_for(lambda: d.closed, 10): fail("se-d: not closed after its DISCONNECT with interval 300")
    disc = [b for k, b in d.other if k == 14]
    if [x[:1] for x in disc] != [b"\x82"]: fail("se-d: DISCONNECTs %r, want the broker's 0x82" % [x.hex() for x in disc])
    d.sock.close()
    time.sleep(0.3)   # the close taken in (--threads 1: before the publisher's connection)
    ok("se-d: DISCONNECT with interval 300 after a CONNECT with 0 answered 0x82 by the broker")
    p = Client(port, "se-pub")
    p.publish("pe/1", b"x", qos=1)
    if not p.drain(10): fail("publisher: no PUBACK")
    p.disconnect()
    ok("publisher: one QoS 1 publication to pe/1")
else:
    fail("mode %r" % mode)
