#!/usr/bin/env bash
# Checks the PostGIS oracle (tests/tools/nbhd_sql.py) that the resolver's
# differential test relies on, against data computed independently:
#  1. ogr2ogr loads monaco.geojson into a throw-away PostGIS cluster without
#     changing one peid, category or coordinate (every double compared);
#  2. its SQL translation of monaco-examples.nbhd reproduces
#     monaco-examples.expected.json exactly (result and every stage);
#  3. its topic-filter translation agrees with the codec's MQTT matcher
#     (build/wmctl topic match) on every world category x a set of filters;
#  4. the comparison has teeth: a changed relation gives differences.
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
SHARED=${WM_SHARED:-$ROOT/../shared}
WORLD=$SHARED/data/world
cd "$ROOT"
source scripts/pg-cluster.sh
wm_pg_start
work=$WM_PG_DIR   # removed with the cluster by the EXIT trap
wm_pg_load_world "$WORLD/monaco.geojson"

# 1. the load is lossless
psql -X -At -c "COPY (SELECT peid, array_to_json(cats), ST_AsGeoJSON(geom, 15) FROM world) TO STDOUT" \
  >"$work/loaded.tsv"
python3 - "$WORLD/monaco.geojson" "$work/loaded.tsv" <<'PY'
import json, sys
src = {f["id"]: f for f in json.load(open(sys.argv[1]))["features"]}
bad, n = [], 0
for line in open(sys.argv[2]):
    peid, cats, geom = line.rstrip("\n").split("\t")
    n += 1
    f = src.get(peid)
    if f is None:
        bad.append("%s: not in the file" % peid); continue
    g = json.loads(geom)
    if json.loads(cats) != f["properties"]["cats"]:
        bad.append("%s: cats %s != %s" % (peid, cats, f["properties"]["cats"]))
    if g["type"] != f["geometry"]["type"] or g["coordinates"] != f["geometry"]["coordinates"]:
        bad.append("%s: geometry differs" % peid)
if n != len(src):
    bad.append("loaded %d rows, file has %d features" % (n, len(src)))
print("\n".join(bad[:20]))
sys.exit(1 if bad else 0)
PY
echo "load: $(wc -l <"$work/loaded.tsv") entities, peids, cats and coordinates identical"

# 2. the oracle reproduces the independently computed expected sets
python3 tests/tools/nbhd_sql.py eval "$WORLD/monaco-examples.nbhd" >"$work/examples.json"
python3 tests/tools/nbhd_sql.py diff "$WORLD/monaco-examples.expected.json" "$work/examples.json" \
  --nbhd "$WORLD/monaco-examples.nbhd"

# 3. topic-filter semantics agree with the codec's reference matcher (world categories
#    and some of their parents, since '#' also matches the parent level)
filters=('#' '+' 'road' 'road/#' 'road/+' 'road/+/+' 'road/+/#' 'road/major/#' 'road/minor/+'
         '+/major/#' '+/+/primary' 'shop/+' 'shop/#' 'transport/parking' 'transport/#' 'zone/grid'
         'zone/+/#' '+/grid' 'road/major' 'shop/supermarket/#')
# Two categories per layer, their parents ('#' also matches the parent level) and a
# category with a space (OSM values have them); every pair costs a wmctl process.
cats=(road/major/primary road/major/motorway_link road/minor/footway road/minor/residential shop/bakery
      shop/convenience transport/parking zone/grid road shop road/major road/minor transport
      "shop/coffee beans")
values=$(python3 -c 'import sys; sys.path.insert(0, "tests/tools"); import nbhd_sql as n
print(",".join("(%s, %s)" % (n._q(f), n._q(n.topic_filter_regex(f))) for f in sys.argv[1:]))' "${filters[@]}")
cvalues=$(printf "('%s')," "${cats[@]}")
psql -X -At -F $'\t' -c "SELECT f, c, c ~ rx FROM (VALUES $values) v(f, rx), (VALUES ${cvalues%,}) cs(c)
  ORDER BY 1, 2" >"$work/catmatch.txt"
mism=0; pairs=0
while IFS=$'\t' read -r f c sqlv; do
  pairs=$((pairs + 1))
  ref=$("$BUILD/wmctl" topic match "$f" "$c")
  [ "$ref" = true ] && ref=t || ref=f
  if [ "$ref" != "$sqlv" ]; then echo "category filter '$f' on '$c': SQL says $sqlv, wm_topic_match says $ref"; mism=$((mism + 1)); fi
done <"$work/catmatch.txt"
[ "$mism" -eq 0 ] || { echo "$mism topic-filter mismatches"; exit 1; }
echo "topic filters: $pairs (filter, category) pairs agree with wm_topic_match"

# 4. the comparison detects a change of relation (C -> I in X1, stage 1 grows)
sed 's/X1: ({z12_5}, {road\/major\/#}, C)/X1: ({z12_5}, {road\/major\/#}, I)/' \
  "$WORLD/monaco-examples.nbhd" >"$work/mutant.nbhd"
python3 tests/tools/nbhd_sql.py eval "$work/mutant.nbhd" >"$work/mutant.json"
if python3 tests/tools/nbhd_sql.py diff "$WORLD/monaco-examples.expected.json" "$work/mutant.json" >/dev/null; then
  echo "a mutated neighborhood compared equal: the diff is blind"; exit 1
fi
echo "postgis oracle: 5955 entities loaded losslessly, 5/5 example neighborhoods exact, $pairs filter pairs agree"
