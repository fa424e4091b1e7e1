#!/usr/bin/env bash
# --state saves off the main thread, and failing ones retried with a bounded
# exponential backoff (dataplane/proxy_saver.h). Real mosquitto.
#  1. a save that hangs in fsync(2) (an LD_PRELOAD shim, lib/slow_fsync.c,
#     blocks it while a file exists, as on an NFS mount whose server stopped
#     answering): the main thread still takes a SIGHUP and reloads within
#     3 s (before 2026-12-02 it was the thread blocked in the write: no
#     reload until the disk answered); the guarantee stays: a persistent
#     session's nbhd SUBSCRIBE that needs an identifier reservation is held
#     while the save that carries it hangs, and granted once it lands; the
#     stop's save is clean.
#  2. saves failing for 6.5 s (FILE.tmp a directory): retried after 0.2,
#     0.4, 0.8... s (at most 5 s apart), so 4..9 failed tries, not one per
#     200 ms (~32, as before 2026-12-02); refused SUBSCRIBEs still after
#     ~2 s (proxy_state_unwritable), and the first save after the repair
#     within the backoff's bound.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"   # proxy_mqtt5
cc -shared -fPIC -O2 -o "$TMP/slow_fsync.so" "$(dirname "$0")/lib/slow_fsync.c" || fail "cc slow_fsync.so"
HOLD=$TMP/hold
ST=$TMP/h.state
# (a sanitizer's runtime must come first in the preload list: make test SANITIZE=1 / TSAN=1)
PRE=$TMP/slow_fsync.so
# ldd read whole: an awk that exits early would SIGPIPE it, which pipefail turns into a failed assignment
SAN=$(awk '/lib(asan|tsan)\.so/ {print $3; exit}' <<< "$(ldd "$PROXY")")
[ -z "$SAN" ] || PRE="$SAN $PRE"
# (px_proxy's way, the preload given to the proxy alone)
PORT_h=$(free_port)
WM_TEST_FSYNC_HOLD=$HOLD LD_PRELOAD=$PRE "$PROXY" --listen 127.0.0.1:"$PORT_h" --upstream 127.0.0.1:"$BPORT" \
  --summary "$TMP/h.json" --resolution "$TMP/m.wmr" --state "$ST" 2> "$TMP/h.err" & PID_h=$!; px_track $PID_h
wait_port "$PORT_h" "$PID_h" || fail "proxy h did not start"
touch "$HOLD"
timeout 60 python3 - "$PORT_h" "$HOLD" "$PID_h" "$TMP/h.err" <<'PY' || fail "scenario 1 (above)"
import os, signal, struct, sys, time
from proxy_mqtt5 import Client, packet, props, s
port, hold, pid, err = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
def check(ok, what):
    if not ok:
        print("proxy_state_hang: FAIL: " + what, file=sys.stderr)
        sys.exit(1)
def wait(pred, s):
    end = time.time() + s
    while time.time() < end and not pred(): time.sleep(0.05)
    return pred()
a = Client(port, "h-a", session_expiry=3600)   # a change to save: the saver's next write hangs in fsync
check(wait(lambda: os.path.exists(hold + ".in"), 10), "no save reached fsync within 10 s")
t0 = time.time()
os.kill(pid, signal.SIGHUP)
check(wait(lambda: "SIGHUP: reloaded" in open(err).read(), 3),
      "no reload within 3 s of the SIGHUP while a save hangs (the main thread blocked?)")
print("a save hangs in fsync; SIGHUP reloaded after %.2f s" % (time.time() - t0))
# a reservation must be on disk before its identifier is used: the SUBSCRIBE waits for the hung save's successor
a.send_raw(packet(0x82, struct.pack(">H", 1) + props([(0x26, ("nbhd", "X1"))]) + s("h/a") + b"\x01"))
time.sleep(1.5)
check((9, 1) not in a.acks, "the nbhd SUBSCRIBE was answered %r while the save carrying its reservation hung" % a.acks.get((9, 1)))
os.unlink(hold)
check(a.wait_for(lambda: (9, 1) in a.acks, 10), "no SUBACK within 10 s of the disk answering again")
check(a.acks[(9, 1)][-1:] == b"\x01", "SUBACK %r" % a.acks[(9, 1)])
print("the nbhd SUBSCRIBE waited for the hung save and was granted once the disk answered")
a.disconnect()
PY
px_stop "$PID_h" || fail "proxy h exit status"
grep -q '^clean 1$' "$ST" || fail "the stop's save is not clean: $(head -3 "$ST")"
grep -q '^session h-a ' "$ST" || fail "h-a not in the file"

ST2=$TMP/b.state
px_proxy b --resolution "$TMP/m.wmr" --state "$ST2"
mkdir "$ST2.tmp"
timeout 60 python3 - "$PORT_b" "$ST2" "$TMP/b.err" <<'PY' || fail "scenario 2 (above)"
import os, sys, time
from proxy_mqtt5 import Client
port, st, err = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = Client(port, "b-a", session_expiry=3600)   # a change: saves start failing
time.sleep(6.5)
os.rmdir(st + ".tmp")
t0 = time.time()
end = t0 + 8
while time.time() < end and "saved again" not in open(err).read(): time.sleep(0.05)
if "saved again" not in open(err).read():
    print("proxy_state_hang: FAIL: no save within 8 s of the repair", file=sys.stderr)
    sys.exit(1)
print("saves failed for 6.5 s; saved again %.2f s after the repair" % (time.time() - t0))
c.disconnect()
PY
px_stop "$PID_b" || fail "proxy b exit status"
jq -e '.state.save_errors >= 4 and .state.save_errors <= 9' "$TMP/b.json" > /dev/null \
  || fail "failed tries in 6.5 s: $(jq -c '.state.save_errors' "$TMP/b.json") (want 4..9: backoff)"
echo "proxy_state_hang: a hung save leaves the main thread free (SIGHUP reloaded), reservations still wait for it; $(jq .state.save_errors "$TMP/b.json") failed tries in 6.5 s"
