#!/usr/bin/env bash
# Differential test of the GEOS resolver (`wmctl resolve --json`) against PostGIS
# (issue 4, "Must show"): a throw-away PostgreSQL 15 + PostGIS cluster, the Monaco
# world loaded with ogr2ogr, WM_NBHD_COUNT (default 300) random 1-4-stage
# neighborhoods from tests/tools/random_nbhd.py (seed WM_NBHD_SEED, default 4),
# each evaluated in SQL by tests/tools/nbhd_sql.py with the issue's semantics and by
# wmctl; result and every per-stage set must be identical (sorted by code point).
# Then WM_NBHD_COUNT_LI (default 100) more on a Liechtenstein world built by
# scripts/osm-to-world.sh.
# On failure it prints each differing neighborhood with its definition and the
# peids only one side has; the files stay in $WM_KEEP if set.
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
SHARED=${WM_SHARED:-$ROOT/../shared}
WORLD=$SHARED/data/world
N=${WM_NBHD_COUNT:-300}
SEED=${WM_NBHD_SEED:-4}
cd "$ROOT"
source scripts/pg-cluster.sh
wm_pg_start
work=$WM_PG_DIR
keep() { [ -n "${WM_KEEP:-}" ] && mkdir -p "$WM_KEEP" && cp "$work"/*.nbhd "$work"/*.json "$WM_KEEP"/ 2>/dev/null; true; }
wm_pg_load_world "$WORLD/monaco.geojson"

# The examples first: both sides against the independently computed expected sets.
timeout 120 "$BUILD/wmctl" resolve --world "$WORLD/monaco.geojson" --nbhd "$WORLD/monaco-examples.nbhd" \
  --json >"$work/examples.wm.json"
python3 tests/tools/nbhd_sql.py diff "$WORLD/monaco-examples.expected.json" "$work/examples.wm.json" \
  --nbhd "$WORLD/monaco-examples.nbhd" || { echo "wmctl resolve differs from monaco-examples.expected.json"; exit 1; }

# Hand-written edge cases, then the random ones, in one file.
{ cat tests/data/resolver_edge_cases.nbhd
  python3 tests/tools/random_nbhd.py "$WORLD/monaco.geojson" "$N" --seed "$SEED"; } >"$work/random.nbhd"
nedge=$(grep -c '^E[0-9]' tests/data/resolver_edge_cases.nbhd)
t0=$(date +%s.%N)
python3 tests/tools/nbhd_sql.py eval "$work/random.nbhd" >"$work/random.pg.json"
t1=$(date +%s.%N)
timeout 300 "$BUILD/wmctl" resolve --world "$WORLD/monaco.geojson" --nbhd "$work/random.nbhd" --json \
  >"$work/random.wm.json" || { rc=$?; keep; echo "wmctl resolve failed (exit $rc) on $N random neighborhoods (seed $SEED)"; exit 1; }
t2=$(date +%s.%N)
if ! python3 tests/tools/nbhd_sql.py diff "$work/random.pg.json" "$work/random.wm.json" --nbhd "$work/random.nbhd" \
     >"$work/diff.txt"; then
  keep
  head -80 "$work/diff.txt"
  echo "resolver vs PostGIS: $(tail -1 "$work/diff.txt") (expected = PostGIS, actual = wmctl; seed $SEED)"
  exit 1
fi
stats="$(python3 - "$work/random.pg.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = [s for v in d.values() for s in v["stages"].values()]
print("%d stages, %d non-empty results, %d non-empty stages, %d peids in results, largest %d" % (
    len(st), sum(1 for v in d.values() if v["result"]), sum(1 for s in st if s),
    sum(len(v["result"]) for v in d.values()), max(len(v["result"]) for v in d.values())))
# A generator that drifted into trivial (empty) neighborhoods would make this test blind.
sys.exit(0 if sum(1 for v in d.values() if v["result"]) * 2 >= len(d) else 3)
PY
)" || { echo "too few non-empty neighborhoods for a meaningful comparison: $stats"; exit 1; }
# A second world, built by scripts/osm-to-world.sh from the Liechtenstein extract:
# other data, other quirks (e.g. the category "shop/coffee beans", quoted in filters).
NL=${WM_NBHD_COUNT_LI:-100}
scripts/osm-to-world.sh "$SHARED/data/osm/liechtenstein-2013-08-03.osm.pbf" "$work/li.geojson" 2>/dev/null
wm_pg_load_world "$work/li.geojson" world_li
python3 tests/tools/random_nbhd.py "$work/li.geojson" "$NL" --seed "$SEED" >"$work/li.nbhd"
python3 tests/tools/nbhd_sql.py eval "$work/li.nbhd" --table world_li >"$work/li.pg.json"
timeout 300 "$BUILD/wmctl" resolve --world "$work/li.geojson" --nbhd "$work/li.nbhd" --json >"$work/li.wm.json" ||
  { keep; echo "wmctl resolve failed on the Liechtenstein world"; exit 1; }
if ! python3 tests/tools/nbhd_sql.py diff "$work/li.pg.json" "$work/li.wm.json" --nbhd "$work/li.nbhd" >"$work/li.diff.txt"; then
  keep; head -80 "$work/li.diff.txt"
  echo "resolver vs PostGIS on Liechtenstein: $(tail -1 "$work/li.diff.txt") (seed $SEED)"; exit 1
fi
nli=$(python3 -c 'import json,sys; print(sum(1 for v in json.load(open(sys.argv[1])).values() if v["result"]))' "$work/li.pg.json")

awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "timing: PostGIS %.1f s, wmctl %.1f s (incl. world load)\n", b - a, c - b }'
echo "resolver vs PostGIS: $N random + $nedge edge-case neighborhoods (seed $SEED; $stats), 0 differences; 5 examples exact; Liechtenstein (osm-to-world): $NL random ($nli non-empty), 0 differences"
