#!/usr/bin/env bash
# Shared subscriptions in the match log (dataplane/match_sink.h): a crafted
# capture with three members s1..s3 of $share/g/t/#, a plain subscriber on
# t/# and four publishers sending 6 PUBLISHes each, interleaved.
#   --share-policy round-robin (default): every PUBLISH reports exactly one
#     member besides plain#9; the members take turns (any three consecutive
#     PUBLISHes reach three different members; 8 each).
#   --share-policy hash: every publisher always reaches the same member, and
#     that member is the one an independent re-implementation here of the
#     rendezvous hash (matcher/share_pick.c, members identified by the FNV-1a
#     of their keys) picks.
. "$(dirname "$0")/lib/dataplane_env.sh" wmsh
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" share "$tmp/share.pcap" 1883 > /dev/null
for pol in round-robin hash; do
  timeout 60 "$B/wirematch" "${EAL[@]}" --vdev "net_pcap0,rx_pcap=$tmp/share.pcap" -- --mqtt-port 1883 \
    --match-log "$tmp/$pol.jsonl" --share-policy "$pol" --summary "$tmp/$pol.json" 2> "$tmp/$pol.log" \
    || { cat "$tmp/$pol.log"; fail "wirematch --share-policy $pol exited $?"; }
done
python3 - "$tmp" <<'EOF' || fail "shared subscription picks"
import json, sys
tmp = sys.argv[1]
M64 = (1 << 64) - 1
def mix(a, b):
    r = (a & M64) * (b & M64)
    return (r & M64) ^ (r >> 64)
def hash_bytes(aux, s):
    n = len(s)
    h = mix(0x9E3779B97F4A7C15 ^ n, 0xA0761D6478BD642F ^ aux)
    while len(s) >= 8:
        h = mix(h ^ int.from_bytes(s[:8], "little"), 0xE7037ED1A0B428DB)
        s = s[8:]
    h = mix(h ^ int.from_bytes(s, "little") ^ (len(s) << 56), 0x8EBC6AF09C88C6E3)
    return mix(h, 0x589965CC75374CC3)
def fnv(k):
    h = 2166136261
    for c in k.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h
members = ["s1#1", "s2#2", "s3#3"]
def rendezvous(publisher):
    ph = hash_bytes(0, publisher.encode())
    return max(members, key=lambda m: mix(ph ^ fnv(m), 0x9FB21C651E98DF25) ^ ph)
for pol in ("round-robin", "hash"):
    s = json.load(open("%s/%s.json" % (tmp, pol)))
    assert s["publish"]["seen"] == 24 and s["publish"]["matched"] == 24, s["publish"]
    assert s["conservation"]["publish_hold"], s["conservation"]
    lines = [json.loads(l) for l in open("%s/%s.jsonl" % (tmp, pol))]
    assert len(lines) == 24, len(lines)
    picks = []
    for d in lines:
        got = [k for k in d["matched"] if k in members]
        assert len(got) == 1 and "plain#9" in d["matched"] and len(d["matched"]) == 2, d
        picks.append((d["client"], got[0]))
    if pol == "round-robin":
        for i in range(len(picks) - 2):
            assert len({m for _, m in picks[i:i + 3]}) == 3, picks[i:i + 3]
        assert all(sum(1 for _, m in picks if m == x) == 8 for x in members), picks
    else:
        by_pub = {}
        for c, m in picks:
            by_pub.setdefault(c, set()).add(m)
        assert all(len(v) == 1 for v in by_pub.values()), by_pub
        for c, v in by_pub.items():
            assert v == {rendezvous(c)}, (c, v, rendezvous(c))
        hashed = {c: next(iter(v)) for c, v in by_pub.items()}
print("share: round-robin 8/8/8 in turn; hash %s" % ", ".join("%s->%s" % kv for kv in sorted(hashed.items())))
EOF
