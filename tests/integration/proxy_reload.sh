#!/usr/bin/env bash
# Hot reload of wirematch-proxy's resolution (SIGHUP) under live connections,
# in front of a real mosquitto on 127.0.0.1 (proxy_reload.py): Monaco
# X1..X5, then a file where X1 and X2 are swapped and X3 is gone: the same
# connections are filtered by the new neighborhoods of the same names (X3's
# subscriber gets nothing), a subscription made after it too; then a corrupt
# file: refused with its reason, the second file's tables stay live; JSON
# summary: one reload applied, one refused, the X3 record counted as gone.
# --prefilter refuses reloads. Bounded; everything stopped by the EXIT trap.
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
assert r == {"ok": 1, "refused": 1, "nbhd_gone": 1}, r
assert s["connections"]["open_at_exit"] == 0 and s["filter"]["failed"] == 0, s
print("ok: summary reload %r" % r)
PY

# --prefilter: its registry holds the first file's neighborhoods; reload refused.
px_proxy pf --resolution "$TMP/m.wmr" --prefilter
kill -HUP "$PID_pf"
for _ in $(seq 100); do grep -q "reload refused" "$TMP/pf.err" && break; sleep 0.1; done
grep -q "reload refused.*--prefilter" "$TMP/pf.err" || fail "--prefilter: reload not refused"
px_stop "$PID_pf" || fail "proxy pf exit status"
[ "$(jq -c .reload "$TMP/pf.json")" = '{"ok":0,"refused":1,"nbhd_gone":0}' ] || fail "pf summary: $(jq -c .reload "$TMP/pf.json")"
echo "proxy_reload: live connections re-resolved by name after SIGHUP, corrupt file refused (old tables live), --prefilter refuses"
