#!/usr/bin/env python3
"""The traffic plan of the demo capture (scripts/capture-demo.sh): which
subscribers subscribe to what, which road segments and car parks publish, and
every message's payload. Deterministic: the same world files give the same plan.

Neighborhoods are the five examples of ../shared/data/world/monaco-examples.nbhd
(X1, X2, X4: road networks; X3: car parks near a car park; X5: shops, car parks,
roads and zones around zone z12_5); their resolved peid sets come from
monaco-examples.expected.json, so publications can be chosen inside and outside
them. Entities are picked evenly spaced from sorted lists (no randomness), the
flow values from a seeded generator.

usage: demo_traffic.py WORLD_DIR OUT_DIR
writes OUT_DIR/plan.json (documented in README, "Captures") and one payload file
per publisher, OUT_DIR/<n>.lines (one message per line, for mosquitto_pub -l).
"""
import json
import os
import random
import sys

ROAD_MSGS = 40      # messages per road segment
PARK_MSGS = 30      # messages per car park


def spread(items, k):
    """k items evenly spaced over a sorted list (all of them if fewer)."""
    items = sorted(items)
    if len(items) <= k:
        return items
    return [items[(i * len(items)) // k] for i in range(k)]


def topic_matches(flt, topic):
    """MQTT 5.0 4.7 for the plan's own filters (no $-topics here): how many
    messages each subscriber must receive before the capture may stop."""
    f, t = flt.split("/"), topic.split("/")
    for i, lv in enumerate(f):
        if lv == "#":
            return True
        if i >= len(t) or (lv != "+" and lv != t[i]):
            return False
    return len(f) == len(t)


def load_world(path):
    cats = {}
    with open(path) as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith('{"type":"Feature"'):
                continue
            feat = json.loads(line)
            cats[feat["id"]] = feat["properties"]["cats"]
    return cats


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    world_dir, out = sys.argv[1], sys.argv[2]
    cats = load_world(os.path.join(world_dir, "monaco.geojson"))
    with open(os.path.join(world_dir, "monaco-examples.expected.json")) as f:
        nb = {k: set(v["result"]) for k, v in json.load(f).items()}
    inside_any = set().union(*nb.values())
    is_road = lambda p: any(c.startswith("road/") for c in cats[p])
    is_park = lambda p: "transport/parking" in cats[p]

    roads = (spread([p for p in nb["X1"] if is_road(p)], 10)
             + spread([p for p in nb["X2"] if is_road(p)], 8)
             + spread([p for p in nb["X4"] if is_road(p)], 5)
             + spread([p for p in nb["X5"] if is_road(p)], 4)
             + spread([p for p in cats if is_road(p) and p not in inside_any], 13))
    parks = (spread([p for p in nb["X3"] if is_park(p)], 3)
             + spread([p for p in nb["X5"] if is_park(p) and p not in nb["X3"]], 4)
             + spread([p for p in cats if is_park(p) and p not in inside_any], 4))
    assert len(set(roads)) == len(roads) and len(set(parks)) == len(parks)

    subscribers = [
        # client id, filters, subscription identifier, nbhd, QoS
        {"client_id": "wm-demo-x1", "filters": ["traffic/flow/+"], "subscription_identifier": 1, "nbhd": "X1", "qos": 0},
        {"client_id": "wm-demo-x2", "filters": ["traffic/#"], "subscription_identifier": 2, "nbhd": "X2", "qos": 1},
        {"client_id": "wm-demo-x3", "filters": ["parking/+/occupancy"], "subscription_identifier": 3, "nbhd": "X3", "qos": 1},
        {"client_id": "wm-demo-x4", "filters": ["traffic/flow/+"], "subscription_identifier": 4, "nbhd": "X4", "qos": 1},
        {"client_id": "wm-demo-x5", "filters": ["parking/+/occupancy", "traffic/flow/+"], "subscription_identifier": 5, "nbhd": "X5", "qos": 0},
        # A neighborhood no resolution defines: a data plane must count it and
        # never let this subscriber receive everything (issue 5).
        {"client_id": "wm-demo-unknown", "filters": ["traffic/#"], "subscription_identifier": 9, "nbhd": "X9", "qos": 0},
        # No neighborhood and no subscription identifier: a plain topic
        # subscription, keyed clientid#filter.
        {"client_id": "wm-demo-plain", "filters": ["parking/a339724631/occupancy"], "subscription_identifier": None, "nbhd": None, "qos": 1},
    ]

    rng = random.Random(20161105)
    t0 = 1700000000
    publishers = []
    os.makedirs(out, exist_ok=True)
    for i, peid in enumerate(roads + parks):
        road = i < len(roads)
        n = ROAD_MSGS if road else PARK_MSGS
        lines = []
        if road:
            topic = "traffic/flow/%s" % peid
            base = rng.randint(60, 1800)
            for k in range(n):
                flow = max(0, base + rng.randint(-base // 4, base // 4))
                speed = round(rng.uniform(8.0, 70.0), 1)
                lines.append('{"t":%d,"veh_h":%d,"kmh":%s}' % (t0 + 60 * k, flow, speed))
        else:
            topic = "parking/%s/occupancy" % peid
            total = rng.choice([40, 80, 120, 250, 400])
            free = rng.randint(0, total)
            for k in range(n):
                free = min(total, max(0, free + rng.randint(-6, 6)))
                lines.append('{"t":%d,"free":%d,"total":%d}' % (t0 + 120 * k, free, total))
        with open(os.path.join(out, "%d.lines" % i), "w") as f:
            f.write("\n".join(lines) + "\n")
        publishers.append({
            "client_id": "wm-demo-pub-%02d" % i, "topic": topic, "peid": peid,
            "qos": i % 2,                              # QoS 0 and 1 alternate
            "topic_alias": 1 + i % 4 if i % 3 == 0 else None,  # every third: alias 1..4
            "messages": n, "payload": "%d.lines" % i,
            "inside": sorted(k for k, s in nb.items() if peid in s),
        })
    for sub in subscribers:
        sub["deliveries"] = sum(p["messages"] for p in publishers
                                if any(topic_matches(f, p["topic"]) for f in sub["filters"]))
    plan = {"neighborhoods": "monaco-examples.nbhd", "subscribers": subscribers, "publishers": publishers,
            "messages": sum(p["messages"] for p in publishers)}
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
