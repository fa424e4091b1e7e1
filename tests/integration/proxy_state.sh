#!/usr/bin/env bash
# Persistent sessions' neighborhood subscriptions across a restart of
# wirematch-proxy with --state FILE, seen by the stock mosquitto_sub /
# mosquitto_pub (MQTT v5) in front of a real mosquitto, Monaco X1/X2 resolved
# by wmctl:
#  - two persistent sessions subscribe st/# through proxy 1, one in X1 (the
#    proxy's identifier), one in X2 under its own identifier 9, and leave
#    (sessions kept by the broker); proxy 1 stops (SIGTERM): the file holds
#    both sessions, written at a clean stop;
#  - proxy 2 starts with the same file; 120 QoS 1 publications (peids of X1,
#    of X2, of neither; the last one wanted by both) are queued by mosquitto;
#    each subscriber resumes through proxy 2 without subscribing again (Clean
#    Start 0, Session Present 1) and gets exactly the publications of its
#    neighborhood (before --state: none, every delivery withheld, as
#    proxy_persist's "restarted" phase shows); the X1 one's records carry the
#    proxy's identifier, which means the same only if the epoch came back too;
#  - a session started clean (Clean Start 1) through proxy 2 drops its records
#    from the file; the proxy killed with SIGKILL leaves a file written while
#    running (clean 0), which a third proxy loads with its sessions marked
#    incomplete and numbering on from the reservation written; a corrupt file is refused at start with line and column.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_monaco
px_broker "max_queued_messages 100000"
ST=$TMP/proxy.state

px_proxy p1 --resolution "$TMP/m.wmr" --state "$ST"
# sub_leave ID ARGS...: a persistent session subscribes st/# and leaves once granted
sub_leave() {
  local id=$1; shift
  timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_p1" -c -i "$id" -x 3600 -q 1 -t 'st/#' -E "$@" \
    || fail "$id: subscribe through proxy 1 failed"
}
sub_leave st-x1 -D subscribe user-property nbhd X1
sub_leave st-x2 -D subscribe user-property nbhd X2 -D subscribe subscription-identifier 9
px_stop "$PID_p1" || fail "proxy 1 exit status"
grep -q '^clean 1$' "$ST" || fail "state file not written at the clean stop: $(head -3 "$ST")"
for id in st-x1 st-x2; do grep -q "^session $id " "$ST" || fail "state file lacks $id: $(cat "$ST")"; done
grep -q '^sub st/# 9 X2 -$' "$ST" || fail "state file lacks st-x2's record: $(cat "$ST")"
jq -e '.state.saves >= 1 and .state.save_errors == 0' "$TMP/p1.json" > /dev/null || fail "proxy 1 state summary"

px_proxy p2 --resolution "$TMP/m.wmr" --state "$ST"
# 120 publications: 40 of X1's peids, 40 of X2's, 39 of neither, then one in both
python3 - "$TMP/m.json" "$WORLD" > "$TMP/pubs" <<'PY'
import json, random, sys
sets = {k: set(v["result"]) for k, v in json.load(open(sys.argv[1])).items()}
world = sorted(str(f["id"]) for f in json.load(open(sys.argv[2]))["features"])
x1, x2 = sorted(sets["X1"] - sets["X2"]), sorted(sets["X2"] - sets["X1"])
both = sorted(sets["X1"] & sets["X2"]) or None
rnd = random.Random(5)
out = [rnd.choice(x1) for _ in range(40)] + [rnd.choice(x2) for _ in range(40)] + \
      [rnd.choice([p for p in world if p not in sets["X1"] and p not in sets["X2"]]) for _ in range(39)]
rnd.shuffle(out)
for i, p in enumerate(out): print(i, p, int(p in sets["X1"]), int(p in sets["X2"]))
# the last one: wanted by both (any earlier unwanted delivery shows up before it)
if both: print(119, both[0], 1, 1)
else: print(119, x1[0], 1, 0)
PY
while read -r i peid _ _; do
  echo "$i $peid"
done < "$TMP/pubs" | while read -r i peid; do
  timeout 10 mosquitto_pub -V mqttv5 -h 127.0.0.1 -p "$PORT_p2" -t "st/$((i % 3))" -m "$i-$peid" -q 1 \
    -D publish user-property peid "$peid" || exit 1
done || fail "publishing through proxy 2"

# resume ID COLUMN: the session resumes (its only new subscription is a plain
# one on another topic) and must get exactly the publications flagged in COLUMN
# (it waits 8 s for one more, which must not come)
resume() {
  local id=$1 col=$2 want
  awk -v c="$col" '$c == 1 { print $1 "-" $2 }' "$TMP/pubs" | sort > "$TMP/$id.want"
  want=$(wc -l < "$TMP/$id.want")
  timeout 20 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_p2" -c -i "$id" -x 3600 -q 1 -t 'other/plain' \
      -C "$((want + 1))" -W 8 -F '%p' > "$TMP/$id.raw" 2> "$TMP/$id.err" || true   # one more than wanted: must time out
  sort "$TMP/$id.raw" > "$TMP/$id.got"
  diff "$TMP/$id.want" "$TMP/$id.got" > "$TMP/$id.diff" ||
    fail "$id after the restart: got $(wc -l < "$TMP/$id.got") of $want wanted; diff: $(head -5 "$TMP/$id.diff")"
  echo "$want"
}
n1=$(resume st-x1 3)
n2=$(resume st-x2 4)
# Clean Start 1: the broker drops the session, the proxy its records
timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_p2" -i st-x2 -t 'other/plain' -E || fail "st-x2 clean start"
px_stop "$PID_p2" || fail "proxy 2 exit status"
jq -e '.state.loaded.found and .state.loaded.clean and .state.loaded.sessions == 2 and .sessions.restored == 2
       and .sessions.unknown_sid_withheld == 0' "$TMP/p2.json" > /dev/null \
  || fail "proxy 2 summary: $(jq -c '{state, sessions}' "$TMP/p2.json")"
grep -q '^session st-x1 ' "$ST" || fail "st-x1 lost from the file"
if grep -q '^session st-x2 ' "$ST"; then fail "st-x2 started clean but its records stayed: $(cat "$ST")"; fi

# A crash: the file written while running (clean 0) loads, its sessions incomplete
px_proxy p3 --resolution "$TMP/m.wmr" --state "$ST"
timeout 10 mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$PORT_p3" -c -i st-x3 -x 3600 -q 1 -t 'st/#' -E \
    -D subscribe user-property nbhd X1 || fail "st-x3 subscribe"
# (saves are at most 10 s apart, however slow the disk made the start's write: CI once saw more than 3 s)
for _ in $(seq 150); do grep -q '^session st-x3 ' "$ST" && break; sleep 0.1; done
grep -q '^session st-x3 ' "$ST" || fail "proxy 3 did not save st-x3 within 15 s"
kill -KILL "$PID_p3"; wait "$PID_p3" 2>/dev/null || true
grep -q '^clean 0$' "$ST" || fail "file after SIGKILL: $(head -3 "$ST")"
px_proxy p4 --resolution "$TMP/m.wmr" --state "$ST"
px_stop "$PID_p4" || fail "proxy 4 exit status"
jq -e '.state.loaded.clean == false and .state.loaded.sessions == 2' "$TMP/p4.json" > /dev/null \
  || fail "proxy 4 summary: $(jq -c '.state' "$TMP/p4.json")"
grep -q '^session st-x3 [0-9]* 1 ' "$ST" || fail "st-x3 not marked incomplete after the crash: $(cat "$ST")"
# ... and numbering on from the reservation proxy 3 wrote before it handed out st-x3's first identifier
# (251658240 + WM_PROXY_SID_RESERVE: nothing it handed out can be past it; before 2026-12-02 each such load
# moved every session 1,048,576 on)
grep -q '^session st-x3 251662336 ' "$ST" || fail "st-x3's next identifier not proxy 3's reservation 251662336: $(cat "$ST")"

# A corrupt file: refused at start, with its position; the file is left as it was
printf 'wirematch-proxy-state 1\nepoch 12\nclean 1\nsession st-x1 99 0 never\nend 1 0\n' > "$TMP/bad.state"
cp "$TMP/bad.state" "$TMP/bad.copy"
rc=0; timeout 10 "$PROXY" --listen 127.0.0.1:"$(free_port)" --upstream 127.0.0.1:"$BPORT" --resolution "$TMP/m.wmr" \
    --state "$TMP/bad.state" 2> "$TMP/bad.err" || rc=$?
[ "$rc" = 1 ] || fail "corrupt state file: exit $rc, want 1"
grep -q "bad.state: line 4, column 15: next identifier: 99 not in 251658240..268435455" "$TMP/bad.err" \
  || fail "corrupt state file: $(cat "$TMP/bad.err")"
cmp -s "$TMP/bad.state" "$TMP/bad.copy" || fail "corrupt state file was overwritten"
# An expiry further ahead than any Session Expiry Interval (and a day of clock step): refused, not wrapped
printf 'wirematch-proxy-state 1\nepoch 12\nclean 1\nsession st-far 251658241 0 99999999999\nend 1 0\n' > "$TMP/far.state"
rc=0; timeout 10 "$PROXY" --listen 127.0.0.1:"$(free_port)" --upstream 127.0.0.1:"$BPORT" --resolution "$TMP/m.wmr" \
    --state "$TMP/far.state" 2> "$TMP/far.err" || rc=$?
[ "$rc" = 1 ] || fail "far expiry: exit $rc, want 1"
grep -q "far.state: line 4, column 28: session: expiry 99999999999 is more than 4295053694 s after now" "$TMP/far.err" \
  || fail "far expiry: $(cat "$TMP/far.err")"
echo "proxy_state: after a restart with --state, st-x1 got exactly its $n1 X1 publications and st-x2 its $n2 X2 ones; clean start dropped, crash file loaded incomplete, corrupt file and far expiry refused"
