#!/usr/bin/env bash
# A --state file that cannot be written must not stall a persistent client's
# filtered SUBSCRIBE for ever (REVIEW9 #1). Such a SUBSCRIBE waits for the
# save that reserves the session's subscription identifiers; before
# 2026-12-02, while saves failed (full or read-only disk), it and everything
# the client sent after it were held with no limit, PINGREQs answered, so the
# client never learnt. Now the proxy refuses it once saves have failed for
# WM_PROXY_STATE_UNWRITABLE_NS (2 s), refuses the next ones at once while they
# keep failing, and grants again once a save landed.
# Real mosquitto. Saves are made to fail by making FILE.tmp a directory
# (open() EISDIR, as ENOSPC / EROFS would fail it; root ignores a chmod).
# Checks: a persistent session's nbhd SUBSCRIBE (A) gets SUBACK 0x80 with a
# Reason String naming the --state file no sooner than ~the bound (1.5 s: a
# transient failure is ridden out) and within 8 s (2 s + a save attempt per
# 200 ms tick, loaded machine, sanitizers); the QoS 0 PUBLISH A sent behind it
# reaches a plain subscriber (the stream is not held any more); another
# session's (B) is refused in under 1.5 s (not waiting the bound again);
# once FILE.tmp is gone and a save landed ("saved again" on stderr), B's
# next one is granted; the
# summary counts the 2 refusals and the proxy stops cleanly (final save good).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
ST=$TMP/u.state
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"   # proxy_mqtt5
px_proxy p --resolution "$TMP/m.wmr" --state "$ST"
grep -q '^clean 0$' "$ST" || fail "no file written at start"
mkdir "$ST.tmp"
timeout 60 python3 - "$PORT_p" "$ST" "$TMP/p.err" <<'PY' || fail "clients (above)"
import os, struct, sys, time
from proxy_mqtt5 import Client, packet, parse_props, props, s
port, st, err = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def check(ok, what):
    if not ok:
        print("proxy_state_unwritable: FAIL: " + what, file=sys.stderr)
        sys.exit(1)
plain = Client(port, "u-plain")
check(plain.subscribe(["u/#"], qos=0)[0] == [0], "plain subscription")
a = Client(port, "u-a", session_expiry=3600)
t0 = time.time()
# SUBSCRIBE (pid 1) in X1 and, behind it, a QoS 0 PUBLISH: sent at once
a.send_raw(packet(0x82, struct.pack(">H", 1) + props([(0x26, ("nbhd", "X1"))]) + s("u/a") + b"\x01"))
a.publish("u/behind", "after the SUBSCRIBE")
check(a.wait_for(lambda: (9, 1) in a.acks, 20), "A: no SUBACK in 20 s (held while saves fail)")
ta = time.time() - t0
b = a.acks.pop((9, 1))
p, off = parse_props(b, 2)
codes, why = list(b[off:]), dict(p).get(0x1F, "")
print("A: SUBACK %s after %.2f s: %s" % (codes, ta, why))
check(codes == [0x80], "A: SUBACK %s, not [0x80]" % codes)
check("--state" in why, "A: Reason String %r does not name the --state file" % why)
check(1.5 <= ta <= 8, "A: refused after %.2f s, not within 1.5..8 s (bound 2 s)" % ta)
check(plain.wait_for(lambda: any(m.topic == "u/behind" for m in plain.msgs), 10),
      "the PUBLISH behind A's SUBSCRIBE did not come through")
bc = Client(port, "u-b", session_expiry=3600)
t1 = time.time()
codes, pr = bc.subscribe(["u/b"], user=[("nbhd", "X1")])
tb = time.time() - t1
print("B: SUBACK %s after %.2f s" % (codes, tb))
check(codes == [0x80] and tb < 1.5, "B: SUBACK %s after %.2f s, not [0x80] at once" % (codes, tb))
os.rmdir(st + ".tmp")
# a save lands with B's entry (made after saves began to fail); the proxy
# says so on stderr once it counts (the file is renamed into place before)
saved = lambda: "saved again" in open(err).read()
for _ in range(100):
    if saved(): break
    time.sleep(0.1)
check(saved(), "no good save within 10 s of the repair")
check(any(l.startswith("session u-b ") for l in open(st)), "B's session not in the file saved")
codes, pr = bc.subscribe(["u/b"], user=[("nbhd", "X1")], timeout=10)
print("B after the repair: SUBACK %s" % codes)
check(codes == [1], "B after the repair: SUBACK %s, not granted" % codes)
for c in (a, bc, plain): c.disconnect()
PY
px_stop "$PID_p" || fail "proxy exit status $? (the final save should succeed)"
jq -e '.state.sid_refused == 2 and .state.save_errors >= 2 and .state.saves >= 1' "$TMP/p.json" > /dev/null \
  || fail "summary: $(jq -c '{state: .state | del(.copy), sid_wait: .filter.sid_wait}' "$TMP/p.json")"
grep -q 'kept trying' "$TMP/p.err" && grep -q 'saved again' "$TMP/p.err" || fail "stderr: $(cat "$TMP/p.err")"
grep -q '^sub u/b ' "$ST" || fail "u/b not in the final file"
echo "proxy_state_unwritable: $(jq -c '{sid_refused: .state.sid_refused, save_errors: .state.save_errors, sid_wait: .filter.sid_wait}' "$TMP/p.json")"
