#!/usr/bin/env bash
# `wmctl resolve` and `wmctl dump` as a user runs them (issue 4): the Monaco
# examples through --json and through a .wmr file give the same JSON, equal to
# monaco-examples.expected.json; bad inputs give exit 1 with file:line:column
# or the byte offset; usage errors give exit 2. Needs no peer.
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
SHARED=${WM_SHARED:-$ROOT/../shared}
W=$SHARED/data/world
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
checks=0; ok() { checks=$((checks + 1)); }

timeout 60 "$BUILD/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --json >"$work/a.json"
python3 - "$work/a.json" "$W/monaco-examples.expected.json" <<'PY' || fail "--json differs from monaco-examples.expected.json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a == b and list(a) == list(b) else 1)
PY
ok
timeout 60 "$BUILD/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$work/m.wmr"
timeout 60 "$BUILD/wmctl" dump "$work/m.wmr" >"$work/d.json"
cmp -s "$work/a.json" "$work/d.json" || fail "dump differs from resolve --json"; ok

# The .wmr compiled into the matcher: `wmctl match --resolution` reaches the
# subscriptions whose neighborhood (by name) holds the publication's peid,
# as monaco-examples.expected.json says.
python3 - "$W/monaco-examples.expected.json" "$work" <<'PY'
import json, sys
exp = json.load(open(sys.argv[1])); work = sys.argv[2]
names = list(exp)
with open(work + "/subs.jsonl", "w") as f:
    for i, n in enumerate(names):
        f.write(json.dumps({"id": i + 1, "client": "c%d" % i, "filter": "traffic/#", "nbhd": n}) + "\n")
    f.write(json.dumps({"id": 99, "client": "plain", "filter": "traffic/+"}) + "\n")
peids = sorted({p for n in names for p in exp[n]["result"]})[:40] + ["no-such-peid"]
with open(work + "/pubs.jsonl", "w") as f, open(work + "/want.jsonl", "w") as w:
    for p in peids:
        f.write(json.dumps({"topic": "traffic/flow", "peids": [p]}) + "\n")
        hit = [i + 1 for i, n in enumerate(names) if p in exp[n]["result"]] + [99]
        w.write(json.dumps({"matched": hit}, separators=(",", ":")) + "\n")
PY
timeout 60 "$BUILD/wmctl" match --resolution "$work/m.wmr" --subs "$work/subs.jsonl" --pubs "$work/pubs.jsonl" >"$work/got.jsonl"
python3 - "$work/got.jsonl" "$work/want.jsonl" <<'PY' || fail "wmctl match --resolution differs from the expected neighborhoods"
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]; want = [json.loads(l) for l in open(sys.argv[2])]
sys.exit(0 if got == want and len(got) == 41 else 1)
PY
ok

# A truncated and a corrupted file: exit 1, reason and offset.
size=$(stat -c %s "$work/m.wmr")
head -c $((size - 1)) "$work/m.wmr" >"$work/t.wmr"
set +e
"$BUILD/wmctl" dump "$work/t.wmr" >/dev/null 2>"$work/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "truncated" "$work/err" || fail "truncated file: rc=$rc $(cat "$work/err")"; ok
cp "$work/m.wmr" "$work/c.wmr"
printf '\xff' | dd of="$work/c.wmr" bs=1 seek=$((size / 2)) conv=notrunc status=none
set +e
"$BUILD/wmctl" dump "$work/c.wmr" >/dev/null 2>"$work/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "checksum" "$work/err" || fail "corrupted file: rc=$rc $(cat "$work/err")"; ok

# Bad neighborhood files: exit 1 and FILE:LINE:COL.
expect_nbhd_error() {  # text, expected "LINE:COL", kind
  printf '%b' "$1" >"$work/bad.nbhd"
  set +e
  "$BUILD/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$work/bad.nbhd" --json >/dev/null 2>"$work/err"; rc=$?
  set -e
  [ $rc = 1 ] && grep -q "bad.nbhd:$2: .*\[$3\]" "$work/err" || fail "'$1': rc=$rc $(cat "$work/err")"
  ok
}
expect_nbhd_error '# ok\nX: ({z12_5}, {road/#}, T)\nY: ({nope}, {road/#}, T)\n' 3:6 unknown_peid
expect_nbhd_error 'X: ({z12_5}, {road/#}, T) . ({2}, {road/#}, T)\n' 1:31 stage_ref
expect_nbhd_error 'X: ({z12_5}, {road/#/x}, T)\n' 1:20 bad_catfilter
expect_nbhd_error 'X: ({z12_5}, {road/#}, X)\n' 1:24 syntax

# Bad world: exit 1 with the feature number.
printf '{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[7.4,43.7]}},{"type":"Feature","geometry":{"type":"Point","coordinates":[7.4,43.7]}}]}' >"$work/w.geojson"
set +e
"$BUILD/wmctl" resolve --world "$work/w.geojson" --nbhd "$W/monaco-examples.nbhd" --json >/dev/null 2>"$work/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "feature 2" "$work/err" || fail "world without id: rc=$rc $(cat "$work/err")"; ok

# A CRS named by --crs must measure metres at lon/lat data: points 900 m (b) and 1,000 m (d) from a near
# Sydney; DW1000 holds both in the UTM zone of the data (automatic or named); Web Mercator (scale 1.2 there)
# and a UTM zone 150 degrees away are refused with the distortion (they used to answer [] in silence).
printf '{"type":"FeatureCollection","features":[%s]}' \
  '{"type":"Feature","id":"a","properties":{"cats":["p"]},"geometry":{"type":"Point","coordinates":[151.21,-33.86]}},
   {"type":"Feature","id":"b","properties":{"cats":["p"]},"geometry":{"type":"Point","coordinates":[151.2197360143757,-33.86]}},
   {"type":"Feature","id":"d","properties":{"cats":["p"]},"geometry":{"type":"Point","coordinates":[151.21,-33.869]}}' > "$work/syd.geojson"
echo 'N1: ({a}, {p}, DW1000)' > "$work/syd.nbhd"
for c in "" "--crs EPSG:32756"; do
  out=$("$BUILD/wmctl" resolve --world "$work/syd.geojson" --nbhd "$work/syd.nbhd" --json $c 2>"$work/err") || fail "crs '$c': $(cat "$work/err")"
  [ "$(jq -c .N1.result <<< "$out")" = '["b","d"]' ] || fail "crs '$c': $out"
done; ok
for c in 3857 32632; do
  set +e; "$BUILD/wmctl" resolve --world "$work/syd.geojson" --nbhd "$work/syd.nbhd" --json --crs EPSG:$c >"$work/out" 2>"$work/err"; rc=$?; set -e
  [ $rc = 1 ] && [ ! -s "$work/out" ] && grep -q "EPSG:$c distorts distances by [0-9.]* % at lon" "$work/err" || fail "crs $c: rc=$rc $(cat "$work/err")"
done; ok

# Usage errors: exit 2.
set +e
"$BUILD/wmctl" resolve --world "$W/monaco.geojson" >/dev/null 2>&1; rc1=$?
"$BUILD/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --json --crs 32632 >/dev/null 2>&1; rc2=$?
"$BUILD/wmctl" dump "$work/missing.wmr" >/dev/null 2>&1; rc3=$?
set -e
[ $rc1 = 2 ] && [ $rc2 = 2 ] && [ $rc3 = 2 ] || fail "usage exit codes $rc1 $rc2 $rc3"; ok
# a usage error names the rule it broke before the usage line
for c in "resolve: no --nbhd|resolve --world w.geojson" "resolve: no --world|resolve --nbhd n.nbhd --json" \
         "resolve: nothing to write: no --out and no --json|resolve --world w.geojson --nbhd n.nbhd" \
         "dump: one resolution file only|dump a.wmr b.wmr" "dump: no resolution file|dump" \
         "topic: match takes 2 operands, 3 given|topic match a b c" "topic: check-name takes 1 operand, 0 given|topic check-name"; do
  set +e; "$BUILD/wmctl" ${c#*|} >/dev/null 2>"$work/err"; rc=$?; set -e
  [ $rc = 2 ] && [ "$(head -1 "$work/err")" = "wmctl ${c%%|*}" ] || fail "usage '${c%%|*}': rc=$rc $(cat "$work/err")"
done; ok

# Output that cannot be written (a full disk): exit 2 and the reason, not exit 1 (bad input) in silence.
"$BUILD/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$work/full.wmr" 2>/dev/null
for args in "resolve --world $W/monaco.geojson --nbhd $W/monaco-examples.nbhd --json" "dump $work/full.wmr"; do
  set +e
  "$BUILD/wmctl" $args >/dev/full 2>"$work/err"; rc=$?
  set -e
  [ $rc = 2 ] && grep -qF "cannot write stdout" "$work/err" || fail "$args > /dev/full: rc=$rc $(cat "$work/err")"; ok
done

# an option given twice is refused (the last one won, silently, before 2026-12-02)
set +e
"$BUILD/wmctl" resolve --world "$W/monaco.geojson" --nbhd "$W/monaco-examples.nbhd" --out "$work/a.wmr" --out "$work/b.wmr" \
    >/dev/null 2>"$work/err"; rc=$?
set -e
[ $rc = 2 ] && [ "$(cat "$work/err")" = "wmctl resolve: --out given twice: give it once" ] && [ ! -e "$work/b.wmr" ] \
  || fail "--out twice: rc=$rc $(cat "$work/err")"; ok

echo "wmctl resolve/dump: $checks checks passed (examples exact, .wmr = --json, truncation/corruption/errors located)"
