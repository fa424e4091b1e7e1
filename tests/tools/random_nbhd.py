#!/usr/bin/env python3
"""Seeded generator of random neighborhoods (issue 4's language) over a world file,
for the differential test against PostGIS (python3 stdlib only).

usage: random_nbhd.py WORLD.geojson N [--seed S] > F.nbhd

Each line is a 1-4-stage neighborhood: stage-1 references drawn among the world's
real peids (roads, POIs, zones, and the geometrically equal road pairs so that E is
not always empty), category filters mixing exact categories, '+' and '#', relations
E I D T C DW<d> (integer and fractional metres), Prev / Anc / explicit stage sets,
COUNT repetitions, '.' and '•' separators, bare and quoted peids, optional visible
sets. Result sizes are kept reasonable: D (disjoint: nearly everything) only selects
from small layers (POIs, zones), and DW distances shrink when references are many.
"""
import argparse
import json
import random
import re
import sys

FILTERS = {
    "road": ["road/#", "road/major/#", "road/minor/#", "road/minor/+", "road/major/+", "road/+/+",
             "+/major/#", "+/+/residential", "road/minor/footway", "road/major/primary",
             "road/minor/service", "road/+/primary", "road/minor/steps"],
    "poi": ["shop/#", "shop/+", "transport/parking", "transport/#", "+/parking", "shop/supermarket",
            "shop/bakery", "shop/gift", "+/+"],
    "zone": ["zone/grid", "+/grid", "zone/#", "zone/+"],
    "wide": ["#", "+/#", "+/+/#"],
}
# No filter that matches no category of the world: wmctl resolve refuses those
# (REVIEW12 #19); empty stages still come from relations that select nothing.
# Relations that tend to select something, by (reference kind, candidate kind); the
# generator still picks any relation now and then, to cover empty stages too.
PLAUSIBLE = {
    ("road", "road"): "TTTIIDW", ("road", "poi"): "DW", ("road", "zone"): "IIDW",
    ("zone", "road"): "CCIIDW", ("zone", "poi"): "CCIDW", ("zone", "zone"): "TTIDW",
    ("poi", "road"): "DW", ("poi", "poi"): "DW", ("poi", "zone"): "IIDW",
    ("area", "road"): "IIDWT", ("area", "poi"): "CIDW", ("area", "zone"): "IIDW",
}


def load(path):
    with open(path, encoding="utf-8") as f:
        feats = json.load(f)["features"]
    by_kind = {"road": [], "poi": [], "area": [], "zone": []}
    cats = set()
    equal = {}
    for f in feats:
        pid = f["id"]
        cats.update(f["properties"]["cats"])
        kind = {"r": "road", "n": "poi", "a": "area", "z": "zone"}.get(pid[0], "poi")
        by_kind[kind].append(pid)
        if kind == "road":
            key = tuple(sorted(map(tuple, f["geometry"]["coordinates"])))
            equal.setdefault(key, []).append(pid)
    eq = [p for ps in equal.values() if len(ps) > 1 for p in ps]
    # Zones over the sea hold nothing: prefer zones whose square holds a road vertex.
    boxes = {}
    for f in feats:
        if f["id"][0] == "z":
            ring = f["geometry"]["coordinates"][0]
            xs, ys = [c[0] for c in ring], [c[1] for c in ring]
            boxes[f["id"]] = (min(xs), min(ys), max(xs), max(ys))
    verts = [c for f in feats if f["id"][0] == "r" for c in f["geometry"]["coordinates"]]
    busy = [z for z, (x0, y0, x1, y1) in boxes.items()
            if any(x0 < x < x1 and y0 < y < y1 for x, y in verts[::7])]
    by_kind["zone"] = [z for z in by_kind["zone"] if z in busy] or by_kind["zone"]
    return by_kind, sorted(cats), eq


def peid_token(rng, p):
    return '"%s"' % p if rng.random() < 0.15 else p


def pick_filters(rng, cats, kind):
    out = [rng.choice(FILTERS[kind])]
    if rng.random() < 0.3:
        out.append(rng.choice(FILTERS[kind]))
    if rng.random() < 0.1:
        out.append(rng.choice(cats))
    if rng.random() < 0.1:
        out.append(rng.choice(FILTERS[rng.choice(["road", "poi", "zone"])]))
    # a filter that selects no category of this world is refused (REVIEW12 #19)
    out = [f for f in out if any(topic_match(f, c) for c in cats)] or [rng.choice(cats)]
    return list(dict.fromkeys(out))


def topic_match(flt, name):
    fl, nl = flt.split("/"), name.split("/")
    for i, f in enumerate(fl):
        if f == "#":
            return True
        if i >= len(nl) or (f != "+" and f != nl[i]):
            return False
    return len(fl) == len(nl)


def pick_cond(rng, ref_kind, kind):
    if rng.random() < 0.05:
        return rng.choice(["E", "I", "T", "C", "DW"] + (["D"] if kind in ("poi", "zone") else []))
    if kind in ("poi", "zone") and rng.random() < 0.08:
        return "D"  # disjoint selects nearly the whole layer: small layers only
    if ref_kind == "road" and kind == "road" and rng.random() < 0.05:
        return "E"
    table = PLAUSIBLE.get((ref_kind, "road" if kind == "wide" else kind), "DW")
    c = rng.choice(table)
    return "DW" if c in "DW" else c


def distance(rng, many_refs, kind):
    hi = 400 if kind == "poi" else 40 if many_refs else 250
    d = rng.uniform(0, hi)
    return str(int(d)) if rng.random() < 0.6 else "%.2f" % d


def cat_token(rng, c):
    # A category with characters outside bare tokens (OSM values such as
    # "coffee beans") must be quoted; plain ones are quoted now and then.
    if re.fullmatch(r"[A-Za-z0-9_./:+#-]+", c) and rng.random() >= 0.05:
        return c
    return '"%s"' % c.replace("\\", "\\\\").replace('"', '\\"')


def stage_text(rng, refs, cats, cond):
    sp = lambda: rng.choice(["", " ", " ", "  "])
    return "(%s,%s{%s},%s%s)" % (refs, sp(), ("," + sp()).join(cat_token(rng, c) for c in cats), sp(), cond)


def gen_one(rng, idx, by_kind, cats, eq):
    k = rng.choice([1, 2, 2, 3, 3, 4, 4, 4])
    nref = rng.choice([1, 1, 1, 2, 3])
    r = rng.random()
    ref_kind = ("road" if r < 0.45 else "zone" if r < 0.65 else "area" if r < 0.8 else "poi")
    src = eq if ref_kind == "road" and rng.random() < 0.1 else by_kind[ref_kind]
    refs = list(dict.fromkeys(rng.choice(src) for _ in range(nref)))
    if rng.random() < 0.1:  # a mixed reference set now and then
        refs.append(rng.choice(by_kind[rng.choice(["road", "zone", "area", "poi"])]))
    if rng.random() < 0.03:  # a repeated reference peid is legal and changes nothing
        refs.append(refs[0])
    kinds = {0: ref_kind}
    stages = []
    i = 1
    while i <= k:
        count = 1
        if i > 1 and k - i >= 1 and rng.random() < 0.3:
            count = rng.randint(2, k - i + 1)
        if i == 1:
            reftext, src_stages = "{%s}" % ",".join(peid_token(rng, p) for p in refs), [0]
        else:
            r = rng.random()
            if r < 0.35:
                reftext, src_stages = "Prev", list(range(1, i))
            elif r < 0.7:
                reftext, src_stages = "Anc", [i - 1]
            else:
                src_stages = sorted(rng.sample(range(1, i), rng.randint(1, i - 1)))
                reftext = "{%s}" % ",".join(map(str, src_stages))
        r = rng.random()
        kind = "road" if r < 0.55 else "poi" if r < 0.75 else "zone" if r < 0.92 else "wide"
        cond = pick_cond(rng, kinds[src_stages[-1]], kind)
        cf = pick_filters(rng, cats, kind)
        if cond == "DW" and kinds[src_stages[-1]] == "zone" and kind == "zone" and rng.random() < 0.5:
            cond += rng.choice(["500", "499.99", "500.0", "1000", "707.11", "707.1"])  # grid distances, exact
        elif cond == "DW":
            many = len(refs) > 2 if i == 1 else (i > 2 or kinds[src_stages[-1]] in ("road", "wide"))
            cond += distance(rng, many, kind)
        stages.append(("%d" % count if count > 1 or rng.random() < 0.05 else "") +
                      stage_text(rng, reftext, cf, cond))
        for j in range(i, i + count):
            kinds[j] = "road" if kind == "wide" else kind
        i += count
    sep = lambda: rng.choice([" . ", ".", " .", " \u2022 ", "\u2022"])
    line = "R%03d:%s%s" % (idx, rng.choice(["", " "]), stages[0])
    for s in stages[1:]:
        line += sep() + s
    if k > 1 and rng.random() < 0.3:
        vis = sorted(rng.sample(range(1, k + 1), rng.randint(1, k)))
        line += " visible {%s}" % ",".join(map(str, vis))
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("world")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=4)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    by_kind, cats, eq = load(a.world)
    print("# %d random neighborhoods, seed %d (tests/tools/random_nbhd.py)" % (a.n, a.seed))
    for i in range(a.n):
        print(gen_one(rng, i, by_kind, cats, eq))
    return 0


if __name__ == "__main__":
    sys.exit(main())
