#!/usr/bin/env bash
# Hot reload of wirematch-proxy's resolution (SIGHUP) under live connections,
# in front of a real mosquitto on 127.0.0.1 (proxy_reload.py): Monaco
# X1..X5, then a file where X1 and X2 are swapped and X3 is gone: the same
# connections are filtered by the new neighborhoods of the same names (X3's
# subscriber gets nothing), a subscription made after it too; then a corrupt
# file: refused with its reason, the second file's tables stay live; JSON
# summary: one reload applied, one refused, the X3 record counted as gone.
# The same with --prefilter --threads 2: what reaches the broker (a subscriber
# connected straight to it) follows the reloaded neighborhoods of the live
# subscriptions, and of one made after the reload; exact counts, dropped ones
# counted in the summary. Bounded; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"

px_monaco
# X1 <-> X2, no X3.
sed -e 's/^X1:/Xtmp:/' -e 's/^X2:/X1:/' -e 's/^Xtmp:/X2:/' -e '/^X3:/d' "$NBHD" > "$TMP/w2.nbhd"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$TMP/w2.nbhd" --out "$TMP/w2.wmr" || fail "wmctl resolve w2"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$TMP/w2.nbhd" --json > "$TMP/w2.json" || fail "wmctl resolve w2 --json"
cmp -s "$TMP/m.wmr" "$TMP/w2.wmr" && fail "the two files are the same"
cp "$TMP/m.wmr" "$TMP/live.wmr"

px_broker
px_proxy rl --resolution "$TMP/live.wmr" --threads 2
timeout 120 python3 "$(dirname "$0")/proxy_reload.py" "$PORT_rl" "$PID_rl" "$TMP/rl.err" "$TMP/live.wmr" \
  "$TMP/m.json" "$TMP/w2.wmr" "$TMP/w2.json" 600 || fail "scenario"
grep -q "reload refused, the current tables stay: .*live.wmr" "$TMP/rl.err" || fail "no reason for the refusal"
px_stop "$PID_rl" || fail "proxy exit status"
python3 - "$TMP/rl.json" <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
r = s["reload"]
assert r == {"ok": 1, "refused": 1, "nbhd_gone": 1, "xpath_gone": 0}, r
assert s["connections"]["open_at_exit"] == 0 and s["filter"]["failed"] == 0, s
print("ok: summary reload %r" % r)
PY

# --prefilter: the registry's view follows the reload (proxy_reload.py with the broker's port).
cp "$TMP/m.wmr" "$TMP/live.wmr"
px_proxy pf --resolution "$TMP/live.wmr" --prefilter --threads 2
timeout 120 python3 "$(dirname "$0")/proxy_reload.py" "$PORT_pf" "$PID_pf" "$TMP/pf.err" "$TMP/live.wmr" \
  "$TMP/m.json" "$TMP/w2.wmr" "$TMP/w2.json" 600 "$BPORT" > "$TMP/pf.out" || { cat "$TMP/pf.out"; fail "prefilter scenario"; }
cat "$TMP/pf.out"
grep -q "SIGHUP: reloaded .*--prefilter: 1 registrations whose neighborhood the file lacks" "$TMP/pf.err" \
  || fail "pf: the reload did not report S3's registration as gone"
DROPPED=$(sed -n 's/^dropped //p' "$TMP/pf.out")
px_stop "$PID_pf" || fail "proxy pf exit status"
python3 - "$TMP/pf.json" "$DROPPED" <<'PY' || fail "pf summary"
import json, sys
s = json.load(open(sys.argv[1]))
r, p = s["reload"], s["prefilter"]
assert r == {"ok": 1, "refused": 1, "nbhd_gone": 1, "xpath_gone": 0}, r
d = p["dropped"]
assert d["qos0"] + d["qos1"] + d["qos2"] == int(sys.argv[2]), (d, sys.argv[2])
assert p["registry"]["added"] == 3 and p["registry"]["removed"] == 3 and not p["registry"]["broken"], p
print("ok: pf summary reload %r, prefilter %r" % (r, p))
PY
echo "proxy_reload: live connections re-resolved by name after SIGHUP, corrupt file refused (old tables live), --prefilter follows the reload"
