#!/usr/bin/env python3
"""Judges a spatial run of proxy_paho (spatial mode) or proxy_spatial_mqttjs.js:
every subscriber got exactly the publications whose peid is in its
neighborhood (none outside, every wanted one once; the persistent subscriber
that was away gets its QoS 1/2 ones from the broker's queue, QoS 0 ones are
not queued), no proxy Subscription Identifier reached a client, a client's
own identifier (7 on the second subscriber) came back on each of its
deliveries. A subscriber announced as "SUBSCRIBER share:NBHD" is a shared
subscription's members together: each publication once over all of them.

usage: proxy_spatial_check.py RESOLUTION_JSON OUTPUT CLIENT_NAME NBHD...   (as given to the client)
"""
import json, sys

PROXY_SID_BASE = 0x0F000000

def main():
    res, out, name, subs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    sets = {k: set(v["result"]) for k, v in json.load(open(res)).items()}
    pubs, got, offline = {}, {}, None
    for line in open(out):
        f = line.split()
        if not f: continue
        if f[0] == "FAIL": sys.exit("%s: %s" % (name, line.strip()))
        if f[0] == "PUB": pubs[int(f[1])] = (int(f[2]), None if f[3] == "-" else f[3])
        elif f[0] == "OFFLINE": offline = f[1]
        elif f[0] == "SUBSCRIBER": subs.append(f[1])
        elif f[0] == "GOT":
            got.setdefault(f[1], []).append((int(f[2]), [] if f[3] == "-" else [int(x) for x in f[3].split(",")]))
    if not pubs: sys.exit("%s: no publications" % name)
    if offline != subs[0]: sys.exit("%s: the first subscriber (%s) was not the one away" % (name, subs[0]))
    unknown = set(got) - set(subs)
    if unknown: sys.exit("%s: deliveries to unknown subscribers %r" % (name, unknown))
    total = 0
    for k, who in enumerate(subs):
        nb = who.split(":")[-1]
        want = {i for i, (q, p) in pubs.items() if p in sets[nb] and (who != offline or q > 0)}
        mine = got.get(who, [])
        ids = [i for i, _ in mine]
        outside = [(i, pubs[i][1]) for i in ids if pubs[i][1] not in sets[nb]]
        if outside: sys.exit("%s: %s received %d peids outside its neighborhood, e.g. %r" % (name, who, len(outside), outside[:3]))
        dup = len(ids) - len(set(ids))
        if dup: sys.exit("%s: %s received %d duplicates" % (name, who, dup))
        missing = sorted(want - set(ids))
        if missing: sys.exit("%s: %s missed %d wanted publications, e.g. %r" % (name, who, len(missing), missing[:5]))
        extra = sorted(set(ids) - want)
        if extra: sys.exit("%s: %s received unexpected ones (QoS 0 while away?) %r" % (name, who, extra[:5]))
        for i, sids in mine:
            if any(s >= PROXY_SID_BASE for s in sids): sys.exit("%s: a proxy identifier reached %s" % (name, who))
            if sids != ([7] if k == 1 else []): sys.exit("%s: %s got identifiers %r on %d" % (name, who, sids, i))
        total += len(ids)
        print("ok: %s: %s%s got exactly its %d of %d publications" %
              (name, who, " (persistent, away while published)" if who == offline else "", len(ids), len(pubs)))
    if total == 0: sys.exit("%s: nothing delivered" % name)

main()
