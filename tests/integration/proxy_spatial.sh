#!/usr/bin/env bash
# wirematch-proxy's spatial filtering (issue 7) against a real mosquitto on
# 127.0.0.1, with the Monaco world resolved by `wmctl resolve` (five
# neighborhoods X1..X5 of ../shared/data/world/monaco-examples.nbhd):
#  - isolation: 3,000 random publications (QoS 0/1/2) to five subscribers of
#    a small raw MQTT v5 client (proxy_mqtt5.py) and a mosquitto_sub: nobody
#    receives a peid outside its neighborhood, every wanted one arrives (once;
#    for the mosquitto_sub, the owed list written by proxy_spatial.py),
#    overlapping subscriptions with and without identifiers get exactly their
#    copies, proxy identifiers never reach a client, a client's own are kept;
#  - window: 10,000 withheld QoS 1/2 deliveries towards a client with Receive
#    Maximum 5 (broker max_inflight_messages 5), then a wanted one arrives at
#    once: the proxy acknowledged the withheld ones on the client's behalf;
#  - unknown neighborhood: SUBACK 0x80 with a Reason String, nothing installed;
#  - shared subscription: a member with another neighborhood than the
#    group's members through the proxy (or none) gets SUBACK 0x9E with a
#    Reason String, and is taken once they left; members with the same one
#    together get each wanted message once; the only member may replace its
#    own subscription with another neighborhood or none (not with another
#    member in the group);
#  - the counters of the JSON summary agree with what the clients saw.
# Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
SHARED=${WM_SHARED:-$WM_ROOT/../shared}
WORLD=$SHARED/data/world/monaco.geojson
NBHD=$SHARED/data/world/monaco-examples.nbhd
PY=(python3 "$(dirname "$0")/proxy_spatial.py")

"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --out "$TMP/m.wmr" || fail "wmctl resolve"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --json > "$TMP/m.json" || fail "wmctl resolve --json"

px_broker "max_queued_messages 100000" "max_inflight_messages 5"
px_proxy sp --resolution "$TMP/m.wmr" --threads 2 -v
P=$PORT_sp

# (--schemas is checked by proxy_content.sh)
rc=0; "$PROXY" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 --resolution "$NBHD" 2> "$TMP/badres.err" || rc=$?
[ $rc -eq 1 ] && grep -q "resolution" "$TMP/badres.err" || fail "--resolution of a bad file: rc $rc"

# mosquitto_sub as a third client: neighborhood X4 on everything.
X4_WANT=$(python3 -c "import json; print(' '.join(json.load(open('$TMP/m.json'))['X4']['result']))")
timeout 60 stdbuf -oL mosquitto_sub -V mqttv5 -h 127.0.0.1 -p "$P" -i sp-mosq -t 'sp/#' -q 1 -d \
    -D subscribe user-property nbhd X4 -F 'MSG|%t|%P|%p' > "$TMP/mosq.out" 2> "$TMP/mosq.err" & MOSQ=$!
for _ in $(seq 100); do grep -q 'received SUBACK' "$TMP/mosq.out" 2>/dev/null && break; sleep 0.1; done
grep -q 'received SUBACK' "$TMP/mosq.out" || fail "mosquitto_sub got no SUBACK"

timeout 55 "${PY[@]}" "$P" "$TMP/m.json" "$WORLD" isolation 3000 "$TMP/x4.want" || fail "isolation"
# Until every owed publication is in (20 s), plus a moment for one too many.
for _ in $(seq 200); do [ "$(grep -c '^MSG|' "$TMP/mosq.out")" -ge "$(wc -l < "$TMP/x4.want")" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM $MOSQ 2>/dev/null || true; wait $MOSQ 2>/dev/null || true
python3 - "$TMP/mosq.out" "$X4_WANT" "$TMP/x4.want" <<'PY' || fail "mosquitto_sub deliveries"
import sys, re
want = set(sys.argv[2].split())
got = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.startswith("MSG|")]
bad = [g for g in got if not any(p in want for p in re.findall(r"peid:([^,|]+)", g[2]))]
if bad: sys.exit("mosquitto_sub got %d messages outside X4: %r" % (len(bad), bad[:3]))
owed = sorted(l.strip() for l in open(sys.argv[3]))
payloads = sorted(g[3] for g in got)
if payloads != owed:
    missing, extra = sorted(set(owed) - set(payloads)), [p for p in set(payloads) if payloads.count(p) > 1]
    sys.exit("mosquitto_sub: got %d, owed %d (missing %r, twice %r)" % (len(payloads), len(owed), missing[:5], extra[:5]))
print("ok: mosquitto_sub (X4): all %d owed publications, once each, nothing outside" % len(got))
PY

timeout 55 "${PY[@]}" "$P" "$TMP/m.json" "$WORLD" window 10000 || fail "window"
timeout 30 "${PY[@]}" "$P" "$TMP/m.json" "$WORLD" unknown || fail "unknown"
timeout 40 "${PY[@]}" "$P" "$TMP/m.json" "$WORLD" shared > "$TMP/shared.out" || { cat "$TMP/shared.out"; fail "shared"; }
grep -v '^shared-refused' "$TMP/shared.out"
CLOSING=$(sed -n 's/^shared-refused-while-closing //p' "$TMP/shared.out")

px_stop "$PID_sp" || fail "proxy exit status"
python3 - "$TMP/sp.json" "$CLOSING" <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
closing = int(sys.argv[2])
f = s["filter"]
w = f["withheld"]
assert w["qos1"] + w["qos2"] >= 10000, f
assert f["acked_on_behalf"] == w["qos1"] + w["qos2"], f
assert f["pubcomp_on_behalf"] == w["qos2"], f
assert f["suback_unknown_nbhd"] == 3, f          # two filters, then one (quiet client)
assert f["sid_reserved"] == 1, f
assert f["sid_added"] >= 4 and f["sid_stripped"] > 0, f
assert f["failed"] == 0, f
# one filter, then two, then one per retry while the first members were closing,
# then one against the replaced spec and one replacing with another member there
assert f["shared_refused"] == 5 + closing and f["shared_mixed_restored"] == 0, (f, closing)
assert s["connections"]["open_at_exit"] == 0, s["connections"]
print("ok: summary: withheld %r, acked_on_behalf %d, pubcomp_on_behalf %d" %
      (w, f["acked_on_behalf"], f["pubcomp_on_behalf"]))
PY
echo "proxy_spatial: isolation, overlapping identifiers, withheld QoS 1/2 window, unknown nbhd: pass"
