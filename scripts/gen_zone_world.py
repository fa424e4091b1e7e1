#!/usr/bin/env python3
"""A synthetic world for spatial-filtering loads (bench-proxy, proxy_loadgen):
CELLS square cells of 10 m in a row (peids c000, c001, ..., category `cell`)
and ZONES zones covering CELLS/ZONES consecutive cells each (peids z00, ...,
category `zone`), in a projected CRS (EPSG:32632, metres). Neighborhood Znn =
the cells zone znn contains, so each neighborhood holds exactly 1/ZONES of the
cells (10 % with the defaults).

usage: gen_zone_world.py OUTDIR [CELLS=100] [ZONES=10]
writes OUTDIR/world.geojson, OUTDIR/zones.nbhd (for `wmctl resolve`) and
OUTDIR/peids (every cell, one per line, for mqtt_loadgen --peids).
"""
import json, os, sys

out = sys.argv[1]
cells = int(sys.argv[2]) if len(sys.argv) > 2 else 100
zones = int(sys.argv[3]) if len(sys.argv) > 3 else 10
if cells < 1 or zones < 1 or cells % zones or cells > 1000 or zones > 100:
    sys.exit("gen_zone_world: CELLS must be a multiple of ZONES, CELLS <= 1000, ZONES <= 100")
per = cells // zones
sq = lambda x0, x1: {"type": "Polygon", "coordinates": [[[x0, 0], [x1, 0], [x1, 10], [x0, 10], [x0, 0]]]}
f = [{"type": "Feature", "id": "c%03d" % i, "properties": {"cats": ["cell"]}, "geometry": sq(10 * i, 10 * i + 10)}
     for i in range(cells)]
f += [{"type": "Feature", "id": "z%02d" % z, "properties": {"cats": ["zone"]},
       "geometry": sq(10 * per * z, 10 * per * (z + 1))} for z in range(zones)]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "world.geojson"), "w") as w:
    json.dump({"type": "FeatureCollection", "features": f,
               "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}}}, w)
with open(os.path.join(out, "zones.nbhd"), "w") as w:
    w.write("".join("Z%02d: ({z%02d}, {cell}, C)\n" % (z, z) for z in range(zones)))
with open(os.path.join(out, "peids"), "w") as w:
    w.write("".join("c%03d\n" % i for i in range(cells)))
