#!/usr/bin/env bash
# The resolver's work on one neighborhood is bounded (control/nbhd.h
# WM_NBHD_MAX_WORK, control/resolver.c); the text limits (64 stages, 65,536
# peids) never bounded it.
#  1. Monaco, 64 stages whose references cover the world every other stage
#     (({z12_5}, {#}, DW100000) . 63(Anc, {#}, DW100000)): took 14 s, every
#     reference enumerating the whole world for the one candidate left. Going
#     by candidate when candidates are fewer, it resolves within the bound:
#     exit 0, the result is every entity (5,955), stage 2 is z12_5 alone.
#  2. A world of 3,000 + 3,000 crossing lines, 64 stages alternating between
#     them: O(stages x 3,000 x 6,000) however it is walked. Refused at the
#     stage that crosses the bound, with line:column and the reason, exit 1
#     (before: resolved after tens of seconds of CPU, exit 0).
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
SHARED=${WM_SHARED:-$ROOT/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf 'Z: ({z12_5}, {#}, DW100000) . 63(Anc, {#}, DW100000)\n' > "$work/z.nbhd"
rc=0; timeout 300 "$BUILD/wmctl" resolve --world "$SHARED/data/world/monaco.geojson" --nbhd "$work/z.nbhd" --json \
  > "$work/z.json" 2> "$work/z.err" || rc=$?
[ $rc = 0 ] || fail "64 world-covering stages: exit $rc: $(cat "$work/z.err")"
python3 - "$work/z.json" <<'PY' || fail "64 world-covering stages: wrong sets"
import json, sys
z = json.load(open(sys.argv[1]))["Z"]
assert len(z["result"]) == 5955, len(z["result"])
st = z["stages"]
assert len(st) == 64 and st["2"] == ["z12_5"] and len(st["1"]) == 5954 and len(st["3"]) == 5954 \
    and st["64"] == ["z12_5"], {k: len(v) for k, v in st.items()}
PY
echo "ok: 64 stages alternating over all of Monaco resolve within the work bound"

python3 - "$work/grid.geojson" <<'PY'
import json, sys
n, f = 3000, []
for i in range(n):   # a: horizontal lines, b: vertical lines; every a crosses every b
    y = 4844000 + i * 0.3
    f.append({"type": "Feature", "id": "a%d" % i, "properties": {"cats": ["a"]},
              "geometry": {"type": "LineString", "coordinates": [[373000, y], [374000, y]]}})
    x = 373000 + i * 0.3
    f.append({"type": "Feature", "id": "b%d" % i, "properties": {"cats": ["b"]},
              "geometry": {"type": "LineString", "coordinates": [[x, 4843990], [x, 4845000]]}})
json.dump({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}},
           "features": f}, open(sys.argv[1], "w"))
PY
printf 'G: ({a0}, {b}, I) . 63(Anc, {a, b}, I)\n' > "$work/g.nbhd"
rc=0; timeout 300 "$BUILD/wmctl" resolve --world "$work/grid.geojson" --nbhd "$work/g.nbhd" --json \
  > "$work/g.json" 2> "$work/g.err" || rc=$?
[ $rc = 1 ] || fail "3,000 x 3,000 crossing lines over 64 stages: exit $rc, expected 1 (refused): $(head -c 300 "$work/g.err")"
grep -qE "g.nbhd:1:[0-9]+: the neighborhood needs more than 536870912 units of work .* refused at stage [0-9]+ \(3000 references\).*\[limit\]" \
  "$work/g.err" || fail "no clear refusal: $(cat "$work/g.err")"
echo "ok: $(grep -oE 'g.nbhd:1:[0-9]+|stage [0-9]+' "$work/g.err" | tr '\n' ' ')refused at the bound"
echo "wmctl_resolve_work: a world-covering 64-stage line resolves, one over the work bound is refused with its stage"
