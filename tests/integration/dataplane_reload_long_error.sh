#!/usr/bin/env bash
# A refused reload whose file path and reason are longer than DPDK's
# telemetry strings (127 bytes): the telemetry answers must not cut them
# silently (dataplane/telemetry.c). `/wirematch/reload` and
# `/wirematch/subscriptions` give {"file", "line", "reason"} with each cut
# value ending in "..." and a "truncated" note, and `/wirematch/last_error`
# gives the whole "FILE:LINE: reason" as one string, equal to the exit
# summary's match.last_error. Before, both were cut at 127 bytes without a
# mark and nothing gave the rest.
set -euo pipefail
B=${WM_BUILD:-build}
tmp=$(mktemp -d)
PFX=wmle$$
wm_pid=
cleanup() {
  [ -n "$wm_pid" ] && kill -KILL "$wm_pid" 2>/dev/null || true
  rm -rf "$tmp" "/var/run/dpdk/$PFX" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/wm.log" ] && tail -5 "$tmp/wm.log"; exit 1; }
. "$(dirname "$0")/lib/dp_telemetry.sh"
tel() { wm_tel "/var/run/dpdk/$PFX/dpdk_telemetry.v2" "$1"; }

# a file path of ~150 bytes, and a neighborhood name that makes the reason ~250 bytes
dir=$tmp/$(printf 'd%.0s' $(seq 60))/$(printf 'e%.0s' $(seq 60))
mkdir -p "$dir"
subs=$dir/S.jsonl
printf '{"id": "ok", "client": "c", "filter": "a/b"}\n' > "$subs"
name=$(printf 'neighborhood-of-a-very-long-name-%.0s' $(seq 6))

"$B/wirematch" -l 0 --no-huge --no-pci --no-shconf --file-prefix "$PFX" --log-level=lib.eal:error \
  --vdev net_null0 -- --subs "$subs" --summary "$tmp/summary.json" 2> "$tmp/wm.log" &
wm_pid=$!
for _ in $(seq 600); do
  [ -S "/var/run/dpdk/$PFX/dpdk_telemetry.v2" ] && tel /wirematch/subscriptions | grep -q generation && break
  kill -0 "$wm_pid" 2>/dev/null || fail "wirematch died at the start"
  sleep 0.1
done
printf '{"id": "ok", "client": "c", "filter": "a/b"}\n{"id": "bad", "client": "c", "filter": "a", "nbhd": "%s"}\n' \
  "$name" > "$subs.tmp" && mv "$subs.tmp" "$subs"
ans=$(tel /wirematch/reload)
echo "$ans" | jq -e '."/wirematch/reload".result == "refused"' > /dev/null || fail "bad subs not refused: $ans"
whole=$(tel /wirematch/last_error | jq -r '."/wirematch/last_error"')
sub=$(tel /wirematch/subscriptions)
kill -TERM "$wm_pid"
rc=0; wait "$wm_pid" || rc=$?
wm_pid=
[ $rc = 0 ] || fail "wirematch exited $rc"

python3 - "$ans" "$sub" "$whole" "$tmp/summary.json" "$subs" "$name" <<'EOF' || fail "telemetry error fields"
import json, sys
ans, sub, whole = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
summary = json.load(open(sys.argv[4]))
path, name = sys.argv[5], sys.argv[6]
assert len(path) > 127, len(path)
# the whole line, as the summary has it, and naming the whole path and neighborhood
assert whole == summary["match"]["last_error"], (whole, summary["match"]["last_error"])
assert whole.startswith(path + ":2: "), whole
assert name in whole and len(whole) - len(path) > 127, whole
for e in (ans["/wirematch/reload"]["error"], sub["/wirematch/subscriptions"]["last_error"]):
    assert e["line"] == 2, e
    for k in ("file", "reason"):
        v = e[k]
        assert len(v.encode()) <= 127 and v.endswith("..."), (k, v)
        assert whole[:len(v) - 3] == v[:-3] if k == "file" else v[:-3] in whole, (k, v)
    assert e["truncated"].startswith("file and reason") and "/wirematch/last_error" in e["truncated"], e
print("ok: cut fields marked, /wirematch/last_error whole (%d bytes)" % len(whole))
EOF
echo "dataplane_reload_long_error: a ${#subs}-byte path and a long reason: marked cuts, the whole line from /wirematch/last_error"
