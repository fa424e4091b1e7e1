#!/usr/bin/env python3
"""Independent reference for build/wirematch's match log.

Decodes the capture with tshark (its own TCP reassembly and MQTT dissector),
replays the MQTT sessions in capture order with a plain model written here
(MQTT 5.0 §4.7 topic matching, subscription keys clientid#subscription-id or
clientid#filter, §3.8.4 replacement, UNSUBSCRIBE, topic aliases per
connection, No Local, `nbhd` user properties looked up in the resolution's
JSON dump from `wmctl dump`, `peid` user properties), and compares every
line of the match log with the PUBLISH it describes.

usage: dataplane_match_reference.py CAPTURE.pcap BROKER_PORT RESOLUTION.json MATCH_LOG.jsonl
Exit 0 when there is no difference; prints the first differences otherwise.
The last line is a one-line summary.
"""
import json
import subprocess
import sys

pcap, port, res_path, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
nbhds = {name: set(v.get("result") or []) for name, v in json.load(open(res_path)).items()}

out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,mqtt" % port, "-T", "json",
                      "--no-duplicate-keys", "-Y", "mqtt"], capture_output=True, text=True, check=True).stdout
frames = json.loads(out) if out.strip() else []


def as_list(v):
    return v if isinstance(v, list) else ([] if v is None else [v])


def topic_match(filt, topic):
    if filt.startswith("$share/"):
        filt = filt.split("/", 2)[2]
    if topic.startswith("$") and filt[:1] in ("#", "+"):
        return False
    f, t = filt.split("/"), topic.split("/")
    for i, p in enumerate(f):
        if p == "#":
            return True
        if i >= len(t) or (p != "+" and p != t[i]):
            return False
    return len(f) == len(t)


def user_props(m):
    pr = m.get("mqtt.properties") or {}
    keys, vals = as_list(pr.get("mqtt.prop_key")), as_list(pr.get("mqtt.prop_value"))
    return list(zip(keys, vals))


clients = {}       # tcp stream -> client id
aliases = {}       # tcp stream -> {alias: topic}
subs = {}          # (client, filter) -> (key, nbhd set or None, no_local)
expected = []
for fr in frames:
    layers = fr["_source"]["layers"]
    stream = layers["tcp"]["tcp.stream"]
    c2s = int(layers["tcp"]["tcp.dstport"]) == port
    for m in as_list(layers.get("mqtt")):
        mtype = int(m["mqtt.hdrflags_tree"]["mqtt.msgtype"])
        if not c2s:
            continue
        client = clients.get(stream, "")
        if mtype == 1:
            clients[stream] = m.get("mqtt.clientid", "")
        elif mtype == 8:
            pr = m.get("mqtt.properties") or {}
            subid = pr.get("mqtt.prop_number")
            nbhd = next((v for k, v in user_props(m) if k == "nbhd"), None)
            opts = as_list(m.get("mqtt.subscription_options_tree"))
            for i, filt in enumerate(as_list(m.get("mqtt.topic"))):
                if nbhd is not None and nbhd not in nbhds:
                    continue  # unknown neighborhood: never installed
                nl = i < len(opts) and opts[i].get("mqtt.subscription_options_nl") in ("1", "True", "true")
                key = "%s#%s" % (client, subid if subid is not None else filt)
                subs[(client, filt)] = (key, nbhds[nbhd] if nbhd is not None else None, nl)
        elif mtype == 10:
            for filt in as_list(m.get("mqtt.topic")):
                subs.pop((client, filt), None)
        elif mtype == 3:
            topic = m.get("mqtt.topic", "")
            alias = (m.get("mqtt.properties") or {}).get("mqtt.property.topic_alias")
            table = aliases.setdefault(stream, {})
            if alias is not None:
                if topic:
                    table[alias] = topic
                else:
                    topic = table.get(alias)
            if topic is None:
                continue  # an unknown alias is not matched (counted by wirematch)
            peids = [v for k, v in user_props(m) if k == "peid"]
            matched = sorted({key for (sc, filt), (key, ns, nl) in subs.items()
                              if topic_match(filt, topic) and (ns is None or any(p in ns for p in peids))
                              and not (nl and sc == client)})
            expected.append({"client": client, "topic": topic, "peids": peids, "matched": matched})

got = [json.loads(l) for l in open(log_path) if l.strip()]
diffs = []
if len(got) != len(expected):
    diffs.append("match log has %d lines, the reference %d PUBLISHes" % (len(got), len(expected)))
for i, (g, e) in enumerate(zip(got, expected)):
    if g.get("seq") != i + 1:
        diffs.append("line %d: seq %s, expected %d" % (i + 1, g.get("seq"), i + 1))
    for k in ("client", "topic", "peids", "matched"):
        if g.get(k) != e[k]:
            diffs.append("seq %d: %s %r, reference %r" % (i + 1, k, g.get(k), e[k]))
for d in diffs[:20]:
    print(d)
n_matched = sum(1 for e in expected if e["matched"])
print("match reference: %d PUBLISHes, %d matched, %d subscriptions, %d differences"
      % (len(expected), n_matched, len(subs), len(diffs)))
sys.exit(1 if diffs else 0)
