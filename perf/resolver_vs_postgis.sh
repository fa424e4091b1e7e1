#!/usr/bin/env bash
# Times in PostGIS the queries issue 4's resolver benchmarks name, on the Monaco
# world, so the GEOS resolver's figures can be compared IN THE SAME RUN (the machine
# is shared and noisy: read the ratios):
#   adjacency   full road adjacency: every road edge's Touches set among road edges
#   one_stage   ({r357167409.0}, {road/#}, T)
#   four_stage  ({z12_5}, {road/#}, C) . 3(Prev, {road/#}, T)   (spaPS Table II N5:
#               "zone, then three hops")
# PostGIS: server-side median of REPS runs (clock_timestamp around EXECUTE in
# PL/pgSQL, so no client round trip), the neighborhood queries being exactly the
# SQL of tests/tools/nbhd_sql.py, the adjacency one set-based join (PostGIS's best
# case; ours resolves 5,436 one-stage neighborhoods). Ours: the resolver's Google
# Benchmark binary (default $BUILD/bench/bench_resolver, or WM_RESOLVER_BENCH; names
# in WM_RESOLVER_BENCH_NAMES="adjacency=bm_road_adjacency,one_stage=..,four_stage=..").
# usage: perf/resolver_vs_postgis.sh [REPS]     (default 15)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WM_BUILD:-$ROOT/build}
SHARED=${WM_SHARED:-$ROOT/../shared}
WORLD=$SHARED/data/world/monaco.geojson
REPS=${1:-15}
cd "$ROOT"
source scripts/pg-cluster.sh
wm_pg_start
work=$WM_PG_DIR
wm_pg_load_world "$WORLD"

cat >"$work/bench.nbhd" <<'EOF'
one_stage: ({r357167409.0}, {road/#}, T)
four_stage: ({z12_5}, {road/#}, C) . 3(Prev, {road/#}, T)
EOF
adjacency_sql="SELECT count(*) FROM (SELECT a.peid, array_agg(b.peid) FROM world a JOIN world b
  ON ST_Touches(a.geom, b.geom)
  WHERE EXISTS (SELECT 1 FROM unnest(a.cats) c WHERE c ~ '^road(/.*)?\$')
    AND EXISTS (SELECT 1 FROM unnest(b.cats) c WHERE c ~ '^road(/.*)?\$') GROUP BY a.peid) s"
# One SQL statement per neighborhood, in file order (trailing ';' removed for EXECUTE).
mapfile -t nb_sql < <(python3 tests/tools/nbhd_sql.py sql "$work/bench.nbhd" | python3 -c '
import sys
for q in sys.stdin.read().split(";\n"):
    q = " ".join(q.split())
    if q: print(q.rstrip(";"))')

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE FUNCTION wm_bench(q text, reps int) RETURNS TABLE (median_ms float8, min_ms float8)
LANGUAGE plpgsql AS $$
DECLARE t timestamptz; ms float8[] := '{}'; r text;
BEGIN
  EXECUTE q INTO r;                       -- warm-up: plan, caches
  FOR i IN 1..reps LOOP
    t := clock_timestamp();
    EXECUTE q INTO r;
    ms := ms || (extract(epoch FROM clock_timestamp() - t) * 1000.0)::float8;
  END LOOP;
  RETURN QUERY SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), min(x) FROM unnest(ms) x;
END $$;
SQL

pg_time() {  # SQL -> "median min"
  # psql interpolates :'q' only in its input, not in -c
  echo "SELECT round(median_ms::numeric, 3), round(min_ms::numeric, 3) FROM wm_bench(:'q', $REPS)" |
    psql -X -At -F ' ' -v ON_ERROR_STOP=1 -v q="$1"
}
declare -A pg ours
pg[adjacency]=$(pg_time "$adjacency_sql")
pg[one_stage]=$(pg_time "${nb_sql[0]}")
pg[four_stage]=$(pg_time "${nb_sql[1]}")
pairs_sql=${adjacency_sql/SELECT a.peid, array_agg(b.peid)/SELECT a.peid, b.peid}
pairs=$(psql -X -At -c "${pairs_sql% GROUP BY a.peid) s}) s")
sizes=$(python3 tests/tools/nbhd_sql.py eval "$work/bench.nbhd" | python3 -c '
import json, sys; d = json.load(sys.stdin)
print(" ".join("%s=%d" % (k, len(v["result"])) for k, v in d.items()))')

# Ours, in the same run: the resolver's Google Benchmark (perf/bench_resolver.c).
RB=${WM_RESOLVER_BENCH:-$BUILD/bench/bench_resolver}
NAMES=${WM_RESOLVER_BENCH_NAMES:-adjacency=bm_road_adjacency,one_stage=bm_one_stage,four_stage=bm_zone_three_hops}
src="none (no $RB)"
if [ -x "$RB" ]; then
  src="$(basename "$RB") (Google Benchmark real time per iteration)"
  filter=$(tr ',' '\n' <<<"$NAMES" | sed 's/^[^=]*=//' | paste -sd'|')
  WM_SHARED=$SHARED "$RB" --benchmark_filter="^($filter)\$" --benchmark_out="$work/gb.json" \
    --benchmark_out_format=json >"$work/gb.txt" 2>&1 || { cat "$work/gb.txt" >&2; src="$src: FAILED"; }
  IFS=, read -ra map <<<"$NAMES"
  for m in "${map[@]}"; do
    key=${m%%=*}; bname=${m#*=}
    ours[$key]=$(python3 - "$work/gb.json" "$bname" <<'PY' 2>/dev/null || true
import json, sys
scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b["name"] == sys.argv[2] and b.get("run_type", "iteration") == "iteration" and "error_occurred" not in b:
        print("%.3f" % (b["real_time"] * scale[b["time_unit"]])); break
PY
)
  done
fi

echo "Monaco world: $(psql -X -At -c 'SELECT count(*) FROM world') entities; road Touches pairs (directed): $pairs; result sizes: $sizes"
echo "PostGIS $(psql -X -At -c 'SELECT postgis_lib_version()') / GEOS $(psql -X -At -c 'SELECT postgis_geos_version()'), $REPS runs each; ours from: $src"
if [ -f "$work/gb.json" ]; then
  ourpairs=$(python3 -c 'import json,sys
print(next((int(b["touch_pairs"]) for b in json.load(open(sys.argv[1]))["benchmarks"] if "touch_pairs" in b), "-"))' "$work/gb.json" 2>/dev/null || echo -)
  echo "road Touches pairs: PostGIS $pairs, ours $ourpairs"
fi
printf '%-12s %14s %14s %14s %10s\n' query "PostGIS med ms" "PostGIS min ms" "wirematch ms" "PG/ours"
for q in adjacency one_stage four_stage; do
  read -r med mn <<<"${pg[$q]}"
  o=${ours[$q]:-}
  if [ -n "$o" ]; then
    ratio=$(awk -v a="$med" -v b="$o" 'BEGIN { printf (b > 0 ? "%.1fx" : "-"), a / b }')
  else o="-"; ratio="-"; fi
  printf '%-12s %14s %14s %14s %10s\n' "$q" "$med" "$mn" "$o" "$ratio"
done
