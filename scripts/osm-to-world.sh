#!/usr/bin/env bash
# Builds a wirematch world model (GeoJSON, the category and peid scheme of
# ../shared/data/world/README.md) from an OpenStreetMap extract, with Debian's
# osmium-tool and gdal-bin and scripts/osm_to_world.py as glue:
#   road edges r<way>.<k> (highway ways split at shared nodes), shop / car-park
#   nodes n<id> and areas a<id>, a 500 m zone grid z<col>_<row>; UTM 32N by default.
# usage: scripts/osm-to-world.sh CITY.osm.pbf OUT.geojson [--crs EPSG:N] [--zone METRES]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 CITY.osm.pbf OUT.geojson [--crs EPSG:N] [--zone METRES]" >&2; exit 2; }
in=$1 out=$2; shift 2
[ -r "$in" ] || { echo "osm-to-world: cannot read $in" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wm-osm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# 1. the objects we need and the nodes they reference
osmium tags-filter "$in" w/highway nwr/shop nwr/amenity=parking -o "$tmp/f.osm.pbf" --no-progress
# 2. highway ways with their node ids and locations (roads are split on node ids)
osmium tags-filter "$tmp/f.osm.pbf" w/highway -o "$tmp/hw.osm.pbf" --no-progress
osmium add-locations-to-ways "$tmp/hw.osm.pbf" -f opl -o "$tmp/hw.opl" --no-progress
# 3. shop / car-park nodes and areas (osmium assembles closed ways and multipolygons)
osmium export "$tmp/f.osm.pbf" -f geojsonseq --geometry-types=point,polygon -u type_id \
  -x print_record_separator=false -o "$tmp/poi.geojsonseq" --no-progress
# 4. reproject, round, split, assemble, grid
python3 "$here/osm_to_world.py" "$tmp/hw.opl" "$tmp/poi.geojsonseq" "$out" "$@"
