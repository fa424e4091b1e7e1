#!/usr/bin/env python3
"""Glue of scripts/osm-to-world.sh (python3 stdlib only): OPL ways + osmium-export
POIs -> the world GeoJSON of ../shared/data/world/README.md.

usage: osm_to_world.py WAYS.opl POIS.geojsonseq OUT.geojson [--crs EPSG:32632] [--zone 500]

WAYS.opl:  `osmium add-locations-to-ways -f opl` of the highway ways (node ids + locations)
POIS.geojsonseq: `osmium export -f geojsonseq -u type_id` of shop / amenity=parking
           nodes and areas (closed ways, multipolygon relations assembled by osmium)

Every distinct node location is reprojected once with ogr2ogr (EPSG:4326 -> --crs) and
rounded to 0.01 m; all geometries are built from the rounded values, so shared road
endpoints are bit-identical and OGC predicates can be evaluated exactly on the file.
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile

MAJOR = {"motorway", "trunk", "primary", "secondary", "tertiary"}


# A tag value becomes one category level: '/' would add levels and '+' / '#' are
# topic-filter wildcards (MQTT 5.0 4.7.1), so such values cannot name a category.
BAD_LEVEL = re.compile(r"[/+#\x00-\x1f]")
rejected = []


def usable_level(key, value, osm_id):
    if value and not BAD_LEVEL.search(value):
        return True
    rejected.append("%s %s=%r" % (osm_id, key, value))
    return False


def road_category(highway):
    base = highway[:-5] if highway.endswith("_link") else highway
    return ("road/major/" if base in MAJOR else "road/minor/") + highway


def opl_unescape(s):
    # OPL escapes every non-plain character as %<hex code point>%.
    return re.sub(r"%([0-9a-fA-F]+)%", lambda m: chr(int(m.group(1), 16)), s)


def parse_opl_ways(path):
    """-> list of (wayid, tags dict, [(nodeid, lon, lat)]) for the OPL way lines."""
    ways = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("w"):
                continue
            fields = line.rstrip("\n").split(" ")
            wid = int(fields[0][1:])
            tags, nodes = {}, []
            for fld in fields[1:]:
                if fld.startswith("T") and len(fld) > 1:
                    for kv in fld[1:].split(","):
                        k, _, v = kv.partition("=")
                        tags[opl_unescape(k)] = opl_unescape(v)
                elif fld.startswith("N") and len(fld) > 1:
                    for ref in fld[1:].split(","):
                        m = re.fullmatch(r"n(-?\d+)x(-?[\d.]+)y(-?[\d.]+)", ref)
                        if not m:
                            raise ValueError("way %d: node without location: %r" % (wid, ref))
                        nodes.append((int(m.group(1)), float(m.group(2)), float(m.group(3))))
            ways.append((wid, tags, nodes))
    return ways


def reproject(lonlats, crs, workdir):
    """Reproject every (lon, lat) once with ogr2ogr; -> {(lon, lat): (x, y) rounded to 0.01}."""
    pts = sorted(set(lonlats))
    src, dst = os.path.join(workdir, "ll.csv"), os.path.join(workdir, "xy.csv")
    with open(src, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["i", "lon", "lat"])
        for i, (lon, lat) in enumerate(pts):
            w.writerow([i, repr(lon), repr(lat)])
    subprocess.run(["ogr2ogr", "-f", "CSV", dst, src, "-s_srs", "EPSG:4326", "-t_srs", crs,
                    "-oo", "X_POSSIBLE_NAMES=lon", "-oo", "Y_POSSIBLE_NAMES=lat",
                    "-oo", "KEEP_GEOM_COLUMNS=NO", "-lco", "GEOMETRY=AS_XY"], check=True)
    out = {}
    with open(dst, newline="") as f:
        for row in csv.DictReader(f):
            out[pts[int(row["i"])]] = (round(float(row["X"]), 2), round(float(row["Y"]), 2))
    if len(out) != len(pts):
        raise RuntimeError("ogr2ogr returned %d of %d points" % (len(out), len(pts)))
    return out


def dedup(coords):
    out = []
    for c in coords:
        if not out or out[-1] != c:
            out.append(c)
    return out


def ring_area2(ring):
    return sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(ring, ring[1:]))


def orient(ring, ccw):
    return ring if (ring_area2(ring) > 0) == ccw else ring[::-1]


def split_roads(ways, xy):
    """Cut each highway way at interior nodes shared with another highway way or met
    twice in the same way; k numbers the non-degenerate pieces along the way."""
    users = {}
    for wid, _, nodes in ways:
        for nid, _, _ in nodes:
            users.setdefault(nid, set()).add(wid)
    feats, dropped_ways, dropped_edges = [], 0, 0
    for wid, tags, nodes in sorted(ways, key=lambda w: w[0]):
        if len(nodes) < 2:
            dropped_ways += 1
            continue
        seen, pieces, cur = {}, [], [nodes[0]]
        for nid, _, _ in nodes:
            seen[nid] = seen.get(nid, 0) + 1
        for idx in range(1, len(nodes)):
            n = nodes[idx]
            cur.append(n)
            if idx < len(nodes) - 1 and (len(users[n[0]]) > 1 or seen[n[0]] > 1):
                pieces.append(cur)
                cur = [n]
        pieces.append(cur)
        k = 0
        for piece in pieces:
            coords = dedup([xy[(lon, lat)] for _, lon, lat in piece])
            if len(coords) < 2:
                dropped_edges += 1
                continue
            props = {"cats": [road_category(tags["highway"])]}
            if "name" in tags:
                props["name"] = tags["name"]
            props["osm"] = "w%d" % wid
            feats.append(("r%d.%d" % (wid, k), props, {"type": "LineString", "coordinates": coords}))
            k += 1
    return feats, dropped_ways, dropped_edges


def poi_categories(tags, osm_id):
    cats = []
    if "shop" in tags:
        for v in tags["shop"].split(";"):
            v = v.strip()
            if v and usable_level("shop", v, osm_id) and "shop/" + v not in cats:
                cats.append("shop/" + v)
    if tags.get("amenity") == "parking":
        cats.append("transport/parking")
    return cats


def walk_coords(g):
    if g["type"] == "Point":
        yield tuple(g["coordinates"])
    elif g["type"] == "Polygon":
        for r in g["coordinates"]:
            yield from (tuple(c) for c in r)
    elif g["type"] == "MultiPolygon":
        for p in g["coordinates"]:
            for r in p:
                yield from (tuple(c) for c in r)


def build_polygon(rings, xy):
    out = []
    for i, r in enumerate(rings):
        ring = dedup([xy[tuple(c)] for c in r])
        if len(ring) < 4:
            return None
        out.append(orient(ring, ccw=(i == 0)))
    return out


def build_pois(features, xy):
    points, areas, skipped = [], [], []
    for f in features:
        tags = f.get("properties") or {}
        fid = f["id"]  # n<id>; areas: a<2*wayid> (closed way), a<2*relid+1> (multipolygon)
        if fid[0] == "a":
            aid = int(fid[1:])
            fid = ("w%d" if aid % 2 == 0 else "r%d") % (aid // 2)
        cats = poi_categories(tags, fid)
        if not cats:
            continue
        props = {"cats": cats}
        if "name" in tags:
            props["name"] = tags["name"]
        props["osm"] = fid
        g = f["geometry"]
        if g["type"] == "Point":
            points.append((int(fid[1:]), "n" + fid[1:], props, {"type": "Point", "coordinates": xy[tuple(g["coordinates"])]}))
            continue
        polys = g["coordinates"] if g["type"] == "MultiPolygon" else [g["coordinates"]]
        built = [p for p in (build_polygon(p, xy) for p in polys) if p]
        if not built:
            skipped.append(fid)
            continue
        geom = ({"type": "Polygon", "coordinates": built[0]} if len(built) == 1
                else {"type": "MultiPolygon", "coordinates": built})
        areas.append(((fid[0] != "w", int(fid[1:])), "a" + fid[1:], props, geom))
    points.sort(key=lambda p: p[0])
    areas.sort(key=lambda a: a[0])
    return [p[1:] for p in points], [a[1:] for a in areas], skipped


def zones(roads, size):
    xs = [c[0] for _, _, g in roads for c in g["coordinates"]]
    ys = [c[1] for _, _, g in roads for c in g["coordinates"]]
    ox, oy = math.floor(min(xs) / size) * size, math.floor(min(ys) / size) * size
    ncol = int((max(xs) - ox) // size) + 1
    nrow = int((max(ys) - oy) // size) + 1
    out = []
    for col in range(ncol):
        for row in range(nrow):
            x0, y0 = float(ox + size * col), float(oy + size * row)
            x1, y1 = x0 + size, y0 + size
            out.append(("z%d_%d" % (col, row), {"cats": ["zone/grid"]},
                        {"type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]}))
    return out, (min(xs), max(xs), min(ys), max(ys)), (ox, oy, ncol, nrow)


def write_world(path, feats, crs):
    code = crs.split(":")[-1]
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::%s"}},"features":[\n' % code)
        lines = []
        for fid, props, geom in feats:
            geom = dict(geom, coordinates=json.loads(json.dumps(geom["coordinates"])))
            lines.append(json.dumps({"type": "Feature", "id": fid, "properties": props, "geometry": geom},
                                    ensure_ascii=False, separators=(",", ":")))
        f.write(",\n".join(lines))
        f.write("\n]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ways")
    ap.add_argument("pois")
    ap.add_argument("out")
    ap.add_argument("--crs", default="EPSG:32632")
    ap.add_argument("--zone", type=float, default=500)
    a = ap.parse_args()
    ways = [w for w in parse_opl_ways(a.ways)
            if "highway" in w[1] and usable_level("highway", w[1]["highway"], "w%d" % w[0])]
    with open(a.pois, encoding="utf-8") as f:
        pois = [json.loads(l.lstrip("\x1e")) for l in f if l.strip()]
    lonlats = [(lon, lat) for _, _, ns in ways for _, lon, lat in ns]
    for p in pois:
        lonlats.extend(walk_coords(p["geometry"]))
    with tempfile.TemporaryDirectory() as tmp:
        xy = reproject(lonlats, a.crs, tmp)
    roads, dw, de = split_roads(ways, xy)
    if not roads:
        print("osm-to-world: no road edges", file=sys.stderr)
        return 1
    points, areas, skipped = build_pois(pois, xy)
    grid, bbox, (ox, oy, ncol, nrow) = zones(roads, a.zone)
    write_world(a.out, roads + points + areas + grid, a.crs)
    print("osm-to-world: %d road edges from %d highway ways (dropped %d ways with < 2 nodes, %d zero-length "
          "edges), %d POI points, %d POI areas%s, %d zones (%d x %d from origin %.0f %.0f; road bbox x %.2f..%.2f "
          "y %.2f..%.2f)" % (len(roads), len(ways) - dw, dw, de, len(points), len(areas),
                             " (skipped degenerate %s)" % ",".join(skipped) if skipped else "",
                             len(grid), ncol, nrow, ox, oy, *bbox), file=sys.stderr)
    if rejected:
        print("osm-to-world: %d tag values cannot be a category level ('/', '+', '#', control bytes), "
              "skipped: %s" % (len(rejected), "; ".join(rejected[:20])), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
